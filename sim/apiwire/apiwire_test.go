package apiwire

import (
	"bytes"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/client-go/kubernetes/scheme"
)

// envelope encodes obj as the API server answers in protobuf.
func envelope(t *testing.T, obj runtime.Object) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := protobuf.NewSerializer(scheme.Scheme, scheme.Scheme).Encode(obj, &b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// decode reads an answer in the protobuf envelope whole, as the simulator does when this
// package reads nothing.
func decode(body []byte, obj interface{ Unmarshal([]byte) error }) bool {
	rest, ok := bytes.CutPrefix(body, Magic)
	if !ok {
		return false
	}
	var u runtime.Unknown
	return u.Unmarshal(rest) == nil && obj.Unmarshal(u.Raw) == nil
}

// The fields read from the wire are what the whole decode reads: the names, every condition
// in order with its transition time (seconds only, a zero time, none), the lease's renew time
// (to the microsecond, unset); anything not in the envelope, or cut short, is not read.
func TestProtoAnswersReadAsDecoded(t *testing.T) {
	at := time.Date(2026, 11, 29, 9, 0, 7, 123456789, time.UTC)
	nodes := []*corev1.Node{
		{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{"a": "b"}}, Status: corev1.NodeStatus{
			Conditions: []corev1.NodeCondition{
				{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionTrue, LastHeartbeatTime: metav1.NewTime(at.Add(time.Hour)), LastTransitionTime: metav1.NewTime(at), Reason: "r", Message: "m"},
				{Type: corev1.NodeReady, Status: corev1.ConditionFalse},
				{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(at.Add(-time.Minute))},
			},
			Images:   []corev1.ContainerImage{{Names: []string{"x"}, SizeBytes: 5}},
			NodeInfo: corev1.NodeSystemInfo{KubeletVersion: "v"},
		}},
		{ObjectMeta: metav1.ObjectMeta{Name: "every-kind"}, Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{
			{Type: corev1.NodeDiskPressure, Status: corev1.ConditionUnknown}, {Type: corev1.NodePIDPressure, Status: corev1.ConditionFalse},
			{Type: corev1.NodeNetworkUnavailable, Status: corev1.ConditionTrue}, {Type: "Custom", Status: "Maybe"}, {Type: "Ready2", Status: "True "},
		}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "bare"}},
		{},
	}
	for _, n := range nodes {
		n.Kind, n.APIVersion = "Node", "v1"
		body := envelope(t, n)
		var want corev1.Node
		if !decode(body, &want) {
			t.Fatal("the envelope does not decode")
		}
		before := Condition{Type: "Before"}
		name, conds, ok := Node(body, []Condition{before}) // appended after what conds holds
		if !ok || name != want.Name || len(conds) != 1+len(want.Status.Conditions) || conds[0] != before {
			t.Fatalf("read %q %v %v, decoded %q %v", name, conds, ok, want.Name, want.Status.Conditions)
		}
		conds = conds[1:]
		for i, c := range want.Status.Conditions {
			if got := conds[i]; got.Type != string(c.Type) || got.Status != string(c.Status) || !got.Since.Equal(c.LastTransitionTime.Time) || got.Since.IsZero() != c.LastTransitionTime.IsZero() {
				t.Errorf("condition %d: read %+v, decoded %+v", i, got, c)
			}
		}
	}
	for _, renew := range []*metav1.MicroTime{{Time: at}, nil, {Time: time.Unix(0, 999)}} {
		l := &coordinationv1.Lease{TypeMeta: metav1.TypeMeta{Kind: "Lease", APIVersion: "coordination.k8s.io/v1"},
			ObjectMeta: metav1.ObjectMeta{Name: "n1", Namespace: "orch-node-lease"}, Spec: coordinationv1.LeaseSpec{RenewTime: renew}}
		body := envelope(t, l)
		var want coordinationv1.Lease
		if !decode(body, &want) {
			t.Fatal("the envelope does not decode")
		}
		namespace, name, got, ok := Lease(body)
		if !ok || namespace != want.Namespace || name != want.Name || (got == nil) != (want.Spec.RenewTime == nil) {
			t.Fatalf("read %q %q %v %v, decoded %+v", namespace, name, got, ok, want)
		}
		if got != nil && !got.Equal(want.Spec.RenewTime.Time) {
			t.Errorf("renew time read %v, decoded %v", got, want.Spec.RenewTime.Time)
		}
	}
	body := envelope(t, nodes[0])
	for _, bad := range [][]byte{[]byte(`{"metadata":{"name":"n1"}}`), body[:len(body)-3], []byte("k8s\x00\x12\xff")} {
		if _, _, ok := Node(bad, nil); ok {
			t.Errorf("%q read as a Node", bad)
		}
	}
}
