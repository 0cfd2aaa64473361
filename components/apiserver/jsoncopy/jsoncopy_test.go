package jsoncopy_test

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"orch.io/orch/components/apiserver/jsoncopy"
)

// checkDecoded fails t unless Decoded of obj is json.Unmarshal of json.Marshal of it, where it
// makes one; it reports whether it did.
func checkDecoded(t *testing.T, newObj func() runtime.Object, obj runtime.Object) bool {
	t.Helper()
	got, ok := jsoncopy.Decoded(obj)
	data, err := json.Marshal(obj)
	want := newObj()
	if err == nil {
		err = json.Unmarshal(data, want)
	}
	switch {
	case err != nil && ok:
		t.Fatalf("Decoded made a copy where the round trip fails (%v): %#v", err, obj)
	case ok && !reflect.DeepEqual(got, want):
		t.Fatalf("Decoded is not the decode of\n%s\ngot  %#v\nwant %#v", data, got, want)
	}
	return ok
}

func TestDecodedFollowsTheEncoding(t *testing.T) {
	at := time.Date(2026, 11, 29, 21, 3, 4, 567891234, time.FixedZone("x", 3600))
	node := func(change func(n *corev1.Node)) runtime.Object {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}}
		change(n)
		return n
	}
	for name, c := range map[string]struct {
		obj      runtime.Object
		declines bool
	}{
		"times to the second, in the local zone": {obj: node(func(n *corev1.Node) {
			n.CreationTimestamp = metav1.NewTime(at)
			n.Status.Conditions = []corev1.NodeCondition{{Type: "Ready", LastHeartbeatTime: metav1.NewTime(at.Add(-time.Hour))}}
		})},
		"a zero time, a zero creation time": {obj: node(func(n *corev1.Node) {
			n.Status.Conditions = []corev1.NodeCondition{{Type: "Ready"}}
		})},
		"a pointer to a zero time is null": {obj: node(func(n *corev1.Node) {
			n.DeletionTimestamp = &metav1.Time{}
		})},
		"a pointer to an empty list is not null": {obj: &corev1.Pod{Spec: corev1.PodSpec{SecurityContext: &corev1.PodSecurityContext{SupplementalGroups: []int64{}}}}},
		"empty lists and maps omitted are nil": {obj: node(func(n *corev1.Node) {
			n.Labels, n.Finalizers, n.Status.Images = map[string]string{}, []string{}, []corev1.ContainerImage{}
		})},
		"an empty list not omitted stays": {obj: &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{}}}},
		"a nil list not omitted is null":  {obj: &corev1.Pod{Spec: corev1.PodSpec{Containers: nil}}},
		"quantities in their canonical form": {obj: node(func(n *corev1.Node) {
			n.Status.Capacity = corev1.ResourceList{"cpu": resource.MustParse("1000m"), "memory": *resource.NewQuantity(8<<30, resource.BinarySI), "x": resource.MustParse("0.5Gi")}
		})},
		"a field set compacted and escaped, a string escaped": {obj: node(func(n *corev1.Node) {
			n.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "<&>", FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1("{\"f:metadata\": {\"f:labels\":\n {\"f:<a>\": {}}}}")}}
		})},
		"a string not UTF-8": {obj: node(func(n *corev1.Node) { n.Labels = map[string]string{"a": "\xff"} }), declines: true},
		"a key not UTF-8":    {obj: node(func(n *corev1.Node) { n.Labels = map[string]string{"\xfe": "a"} }), declines: true},
		"a year past 9999": {obj: node(func(n *corev1.Node) {
			n.CreationTimestamp = metav1.NewTime(time.Date(12000, 1, 1, 0, 0, 0, 0, time.UTC))
		}), declines: true},
	} {
		t.Run(name, func(t *testing.T) {
			newObj := func() runtime.Object { return reflect.New(reflect.TypeOf(c.obj).Elem()).Interface().(runtime.Object) }
			if made := checkDecoded(t, newObj, c.obj); made == c.declines {
				t.Fatalf("copy made: %v, want %v", made, !c.declines)
			}
		})
	}
}
