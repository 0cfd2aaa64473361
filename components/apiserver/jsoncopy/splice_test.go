package jsoncopy_test

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"orch.io/orch/components/apiserver/jsoncopy"
)

// SplicedDecoded's copy, old's deep copy with what changed copied, must be what the spliced bytes
// decode to and what DecodedSame makes of the object written, and say so of its encoding: a case
// per way a part changes.
func TestSplicedDecodedIsTheDecode(t *testing.T) {
	later := metav1.NewTime(time.Date(2026, 1, 1, 0, 10, 10, 0, time.UTC))
	nodeCases := map[string]func(n *corev1.Node){
		"nothing": func(*corev1.Node) {},
		"a heartbeat's times": func(n *corev1.Node) {
			for i := range n.Status.Conditions {
				n.Status.Conditions[i].LastHeartbeatTime = later
			}
			n.ManagedFields[1].Time = &later
		},
		"a time through its pointer":        func(n *corev1.Node) { *n.ManagedFields[1].Time = later },
		"a time zeroed through its pointer": func(n *corev1.Node) { *n.ManagedFields[1].Time = metav1.Time{} },
		"a pointer to a time gone":          func(n *corev1.Node) { n.ManagedFields[1].Time = nil },
		"a pointer to a zero time come":     func(n *corev1.Node) { n.DeletionTimestamp = &metav1.Time{} },
		"a time zeroed":                     func(n *corev1.Node) { n.Status.Conditions[0].LastTransitionTime = metav1.Time{} },
		"a field set changed":               func(n *corev1.Node) { n.ManagedFields[0].FieldsV1 = metav1.NewFieldsV1(`{"f:metadata": {}}`) },
		"a quantity in another form":        func(n *corev1.Node) { n.Status.Capacity[corev1.ResourceCPU] = resource.MustParse("4000m") },
		"a label changed":                   func(n *corev1.Node) { n.Labels["kubernetes.io/os"] = "windows" },
		"a condition more": func(n *corev1.Node) {
			n.Status.Conditions = append(n.Status.Conditions, corev1.NodeCondition{Type: "X"})
		},
		"a string and a number in a list": func(n *corev1.Node) {
			n.Status.Addresses[1].Address, n.Status.DaemonEndpoints.KubeletEndpoint.Port = "10.0.0.43", 1
		},
		"a list emptied, left out the same":   func(n *corev1.Node) { n.Status.Images = []corev1.ContainerImage{} },
		"a field left out that was not: none": func(n *corev1.Node) { n.Status.Addresses = nil },
	}
	node, lease := heartbeatObjects()
	for name, change := range nodeCases {
		t.Run("node: "+name, func(t *testing.T) {
			next := node.DeepCopy()
			change(next)
			checkSplicedDecoded(t, node, next, func() runtime.Object { return &corev1.Node{} })
		})
	}
	leaseCases := map[string]func(l *coordinationv1.Lease){
		"a renewal": func(l *coordinationv1.Lease) {
			at := metav1.NewMicroTime(l.Spec.RenewTime.Add(10*time.Second + 1500*time.Nanosecond))
			l.Spec.RenewTime, l.ManagedFields[0].Time = &at, &later
		},
		"a micro time zeroed through its pointer": func(l *coordinationv1.Lease) { *l.Spec.RenewTime = metav1.MicroTime{} },
		"a number through its pointer":            func(l *coordinationv1.Lease) { *l.Spec.LeaseDurationSeconds = 15 },
		"a string through its pointer":            func(l *coordinationv1.Lease) { *l.Spec.HolderIdentity = "other" },
	}
	for name, change := range leaseCases {
		t.Run("lease: "+name, func(t *testing.T) {
			next := lease.DeepCopy()
			change(next)
			checkSplicedDecoded(t, lease, next, func() runtime.Object { return &coordinationv1.Lease{} })
		})
	}
}

// checkSplicedDecoded splices next over the decoded copy of written, which json.Marshal of written
// is the encoding of, and holds its copy to the decode; a splice declined is no answer.
func checkSplicedDecoded(t *testing.T, written, next runtime.Object, newObj func() runtime.Object) {
	t.Helper()
	enc, err := json.Marshal(written)
	if err != nil {
		t.Fatal(err)
	}
	old, ok, same := jsoncopy.DecodedSame(written)
	if !ok || !same {
		t.Fatal("the written object's copy does not encode as it")
	}
	got, copied, same, ok := jsoncopy.SplicedDecoded(next, old, enc, old.DeepCopyObject())
	if !ok {
		t.Log("not spliced")
		return
	}
	if want, err := json.Marshal(next); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("spliced\n%s\nnot json.Marshal's\n%s", got, want)
	}
	decoded := newObj()
	if err := json.Unmarshal(got, decoded); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(copied, decoded) {
		t.Fatalf("the copy\n%#v\nis not the decode\n%#v", copied, decoded)
	}
	want, _, wantSame := jsoncopy.DecodedSame(next)
	if !reflect.DeepEqual(copied, want) || same != wantSame {
		t.Fatalf("the copy (same %v) is not DecodedSame's (same %v)", same, wantSame)
	}
	if again, err := json.Marshal(copied); err != nil || bytes.Equal(again, got) != same {
		t.Fatalf("the copy says it encodes as the bytes: %v; it encodes as\n%s\n(%v), they are\n%s", same, again, err, got)
	}
}
