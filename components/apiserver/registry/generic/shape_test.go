package generic_test

import (
	"context"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	eventsv1 "orch.io/orch/components/apis/events/v1"
	"orch.io/orch/components/apiserver/registry/core"
	"orch.io/orch/components/apiserver/registry/events"
	"orch.io/orch/components/apiserver/registry/generic"
)

// A create's managedFields taken from an earlier object of the same shape must be exactly what
// structured-merge-diff computes for the object itself: values differ, keys, list contents and
// set fields do not.
func TestCreateFieldsOfAShapeAreTheTypedOnes(t *testing.T) {
	ctx := generic.WithManager(context.Background(), "tester")
	withSeries := func(i int) runtime.Object {
		e := event(i).(*eventsv1.Event)
		e.Series = &eventsv1.EventSeries{Count: int32(i) + 2, LastObservedTime: e.EventTime}
		e.Finalizers = []string{"a", "b"}
		e.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: "p", UID: "u1"}}
		return e
	}
	richPod := func(i int) runtime.Object {
		p := pod(i).(*corev1.Pod)
		p.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: int32(80 + i), Protocol: corev1.ProtocolTCP}, {ContainerPort: 53, Protocol: corev1.ProtocolUDP}}
		p.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "A", Value: []string{"x", "y"}[i%2]}}
		p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "side", Image: "busybox"})
		p.Annotations = map[string]string{"kubectl.kubernetes.io/last-applied-configuration": `{"x":` + []string{"1", "2"}[i%2] + `}`}
		return p
	}
	for _, tc := range []struct {
		name     string
		strategy generic.Strategy
		object   func(int) runtime.Object
	}{
		{"event", events.Strategy{}, event},
		{"event with series, finalizers and owners", events.Strategy{}, withSeries},
		{"pod", core.PodStrategy{}, pod},
		{"pod with keyed lists and an annotation", core.PodStrategy{}, richPod},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ns := "default"
			shared, _ := newStore(t, tc.strategy)
			if _, err := shared.Create(ctx, ns, tc.object(1), false); err != nil {
				t.Fatal(err)
			}
			fromShape, err := shared.Create(ctx, ns, tc.object(2), false)
			if err != nil {
				t.Fatal(err)
			}
			fresh, _ := newStore(t, tc.strategy)
			typed, err := fresh.Create(ctx, ns, tc.object(2), false)
			if err != nil {
				t.Fatal(err)
			}
			got := fromShape.(metav1.Object).GetManagedFields()
			want := typed.(metav1.Object).GetManagedFields()
			if len(want) != 1 || want[0].FieldsV1 == nil || !reflect.DeepEqual(got, want) {
				t.Fatalf("managedFields from the shape:\n%+v\ntyped:\n%+v", got, want)
			}
		})
	}
}
