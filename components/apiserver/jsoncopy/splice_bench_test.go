package jsoncopy_test

import (
	"encoding/json"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"orch.io/orch/components/apiserver/jsoncopy"
)

// heartbeat is a node as a simulated agent's status posts leave it, and the next post's.
func heartbeat(b *testing.B) (old, next *corev1.Node, enc []byte) {
	at := time.Date(2026, 11, 30, 11, 0, 0, 0, time.UTC)
	capacity := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("8Gi"), corev1.ResourcePods: resource.MustParse("110"), corev1.ResourceEphemeralStorage: resource.MustParse("100Gi")}
	n := &corev1.Node{
		TypeMeta: metav1.TypeMeta{Kind: "Node", APIVersion: "v1"},
		ObjectMeta: metav1.ObjectMeta{Name: "node-1", UID: "2f1d6a52-7a0c-4c61-9d35-3a1cf7c0c2a1", CreationTimestamp: metav1.NewTime(at.Add(-time.Hour)),
			Labels: map[string]string{"kubernetes.io/hostname": "node-1", "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64"},
			ManagedFields: []metav1.ManagedFieldsEntry{
				{Manager: "orchlet", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1", Time: &metav1.Time{Time: at.Add(-time.Hour)}, FieldsType: "FieldsV1",
					FieldsV1: metav1.NewFieldsV1(`{"f:metadata":{"f:labels":{".":{},"f:kubernetes.io/arch":{},"f:kubernetes.io/hostname":{},"f:kubernetes.io/os":{}}}}`)},
				{Manager: "orchlet", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1", Time: &metav1.Time{Time: at}, FieldsType: "FieldsV1", Subresource: "status",
					FieldsV1: metav1.NewFieldsV1(`{"f:status":{"f:allocatable":{".":{},"f:cpu":{},"f:ephemeral-storage":{},"f:memory":{},"f:pods":{}},"f:capacity":{".":{},"f:cpu":{},"f:ephemeral-storage":{},"f:memory":{},"f:pods":{}},"f:conditions":{".":{},"k:{\"type\":\"DiskPressure\"}":{".":{},"f:lastHeartbeatTime":{},"f:lastTransitionTime":{},"f:message":{},"f:reason":{},"f:status":{},"f:type":{}},"k:{\"type\":\"MemoryPressure\"}":{".":{},"f:lastHeartbeatTime":{},"f:lastTransitionTime":{},"f:message":{},"f:reason":{},"f:status":{},"f:type":{}},"k:{\"type\":\"PIDPressure\"}":{".":{},"f:lastHeartbeatTime":{},"f:lastTransitionTime":{},"f:message":{},"f:reason":{},"f:status":{},"f:type":{}},"k:{\"type\":\"Ready\"}":{".":{},"f:lastHeartbeatTime":{},"f:lastTransitionTime":{},"f:message":{},"f:reason":{},"f:status":{},"f:type":{}}},"f:daemonEndpoints":{"f:kubeletEndpoint":{"f:Port":{}}},"f:nodeInfo":{"f:architecture":{},"f:containerRuntimeVersion":{},"f:kubeletVersion":{},"f:operatingSystem":{}}}}`)},
			}},
		Status: corev1.NodeStatus{Capacity: capacity, Allocatable: capacity,
			DaemonEndpoints: corev1.NodeDaemonEndpoints{KubeletEndpoint: corev1.DaemonEndpoint{Port: 10250}},
			NodeInfo:        corev1.NodeSystemInfo{KubeletVersion: "v1.34.4", OperatingSystem: "linux", Architecture: "amd64", ContainerRuntimeVersion: "fakecri://1.0"}},
	}
	for _, c := range []corev1.NodeConditionType{corev1.NodeMemoryPressure, corev1.NodeDiskPressure, corev1.NodePIDPressure, corev1.NodeReady} {
		n.Status.Conditions = append(n.Status.Conditions, corev1.NodeCondition{Type: c, Status: corev1.ConditionFalse, LastHeartbeatTime: metav1.NewTime(at), LastTransitionTime: metav1.NewTime(at.Add(-time.Hour)), Reason: "KubeletHasSufficientMemory", Message: "orchlet has sufficient memory available"})
	}
	enc, err := json.Marshal(n)
	if err != nil {
		b.Fatal(err)
	}
	o, ok := jsoncopy.Decoded(n)
	if !ok {
		b.Fatal("no decoded copy")
	}
	next = o.DeepCopyObject().(*corev1.Node)
	later := metav1.NewTime(at.Add(10 * time.Second))
	for i := range next.Status.Conditions {
		next.Status.Conditions[i].LastHeartbeatTime = later
	}
	next.ManagedFields[1].Time = &later
	return o.(*corev1.Node), next, enc
}

// A heartbeat's stored form, spliced; BenchmarkHeartbeatMarshal is json.Marshal's.
func BenchmarkHeartbeatSpliced(b *testing.B) {
	old, next, enc := heartbeat(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := jsoncopy.Spliced(next, old, enc); !ok {
			b.Fatal("not spliced")
		}
	}
}

func BenchmarkHeartbeatMarshal(b *testing.B) {
	_, next, _ := heartbeat(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := json.Marshal(next); err != nil {
			b.Fatal(err)
		}
	}
}
