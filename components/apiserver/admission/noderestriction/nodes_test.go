package noderestriction

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"orch.io/orch/components/apiserver/registry/core"
)

// A node writes only its own Node, without changing its taints (but those the server keeps with
// its conditions) or orch.io labels an agent does not set.
func TestNodeRefusal(t *testing.T) {
	node := func(name string, labels map[string]string, taints ...corev1.Taint) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Spec: corev1.NodeSpec{Taints: taints}}
	}
	own := corev1.Taint{Key: "team", Value: "a", Effect: corev1.TaintEffectNoSchedule}
	condition := corev1.Taint{Key: core.TaintNodeUnschedulable, Effect: corev1.TaintEffectNoSchedule}
	for _, tc := range []struct {
		name string
		next *corev1.Node
		old  *corev1.Node
		want string
	}{
		{"its own", node("a", map[string]string{"kubernetes.io/hostname": "a"}), nil, ""},
		{"another's", node("b", nil), nil, `node "a" is not allowed to modify node "b"`},
		{"a label of the orch.io namespace", node("a", map[string]string{"orch.io/role": "x"}), nil,
			`node "a" is not allowed to set the following labels: orch.io/role`},
		{"an agent's label", node("a", map[string]string{"orch.io/hostname": "a"}), nil, ""},
		{"its taints", node("a", nil, own), node("a", nil), `node "a" is not allowed to modify taints`},
		{"a condition's taint", node("a", nil, condition), node("a", nil), ""},
		{"a label changed", node("a", map[string]string{"node-role.orch.io/x": "2"}), node("a", map[string]string{"node-role.orch.io/x": "1"}),
			"is not allowed to modify labels: node-role.orch.io/x"},
	} {
		if got := nodeRefusal("a", tc.next, tc.old); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}
