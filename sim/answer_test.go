package sim

import (
	"bytes"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/client-go/kubernetes/scheme"
)

// BenchmarkAnswer is the trace's summary of a heartbeat's two answers in protobuf: a node status
// post's Node (five conditions, Ready and one pressure shown) and a lease renewal's Lease.
func BenchmarkAnswer(b *testing.B) {
	start := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
	w := &World{start: start}
	at := metav1.NewTime(start.Add(90 * time.Minute))
	conds := []corev1.NodeCondition{}
	for _, c := range []corev1.NodeConditionType{corev1.NodeMemoryPressure, corev1.NodeDiskPressure, corev1.NodePIDPressure, corev1.NodeReady} {
		status := corev1.ConditionFalse
		if c == corev1.NodeReady || c == corev1.NodeDiskPressure {
			status = corev1.ConditionTrue
		}
		conds = append(conds, corev1.NodeCondition{Type: c, Status: status, LastHeartbeatTime: at, LastTransitionTime: at, Reason: "r", Message: "a message"})
	}
	quantity := resource.MustParse("8Gi")
	node := &corev1.Node{
		TypeMeta: metav1.TypeMeta{Kind: "Node", APIVersion: "v1"},
		ObjectMeta: metav1.ObjectMeta{Name: "node-1234", Labels: map[string]string{"kubernetes.io/hostname": "node-1234"}, ResourceVersion: "123456",
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "orchlet", Operation: metav1.ManagedFieldsOperationUpdate, FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:status":{}}`)}}},
		Status: corev1.NodeStatus{
			Capacity: corev1.ResourceList{corev1.ResourceMemory: quantity}, Allocatable: corev1.ResourceList{corev1.ResourceMemory: quantity},
			Conditions: conds, Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.0.0.1"}},
			NodeInfo: corev1.NodeSystemInfo{KubeletVersion: "v1.34.4", OperatingSystem: "linux", Architecture: "amd64"},
		},
	}
	renew := metav1.NewMicroTime(start.Add(95 * time.Minute))
	lease := &coordinationv1.Lease{TypeMeta: metav1.TypeMeta{Kind: "Lease", APIVersion: "coordination.k8s.io/v1"},
		ObjectMeta: metav1.ObjectMeta{Name: "node-1234", Namespace: "kube-node-lease"}, Spec: coordinationv1.LeaseSpec{RenewTime: &renew}}
	encode := func(obj runtime.Object) []byte {
		var buf bytes.Buffer
		if err := protobuf.NewSerializer(scheme.Scheme, scheme.Scheme).Encode(obj, &buf); err != nil {
			b.Fatal(err)
		}
		return buf.Bytes()
	}
	nodeBody, leaseBody := encode(node), encode(lease)
	if text, name := answer("nodes/status", 200, nodeBody, w); text != "200 DiskPressure=True since 01:30:00.000 Ready=True since 01:30:00.000" || name != "node-1234" {
		b.Fatalf("node answered %q %q", text, name)
	}
	if text, name := answer("leases", 200, leaseBody, w); text != "200 renewed 01:35:00.000" || name != "kube-node-lease/node-1234" {
		b.Fatalf("lease answered %q %q", text, name)
	}
	b.ReportAllocs()
	for b.Loop() {
		answer("nodes/status", 200, nodeBody, w)
		answer("leases", 200, leaseBody, w)
	}
}
