package noderestriction

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"

	orchletapis "orch.io/orch/components/apis/orchlet"
	"orch.io/orch/components/apiserver/registry/core"
)

// nodeRefusal is why a node may not write n (over old, nil for a create): another node's Node, a
// change of its taints, or labels in the orch.io namespace beyond the ones an agent sets.
func nodeRefusal(node string, n, old *corev1.Node) string {
	if n.Name != node {
		return fmt.Sprintf("node %q is not allowed to modify node %q", node, n.Name)
	}
	var oldLabels map[string]string
	if old != nil {
		if !apiequality.Semantic.DeepEqual(ownTaints(n.Spec.Taints), ownTaints(old.Spec.Taints)) {
			return fmt.Sprintf("node %q is not allowed to modify taints", node)
		}
		oldLabels = old.Labels
	}
	var forbidden []string
	for k := range modifiedLabels(n.Labels, oldLabels) {
		if orchletapis.IsOrchLabel(k) && !orchletapis.IsOrchletLabel(k) {
			forbidden = append(forbidden, k)
		}
	}
	if len(forbidden) == 0 {
		return ""
	}
	slices.Sort(forbidden)
	if old == nil {
		return fmt.Sprintf("node %q is not allowed to set the following labels: %s", node, strings.Join(forbidden, ", "))
	}
	return fmt.Sprintf("is not allowed to modify labels: %s", strings.Join(forbidden, ", "))
}

// ownTaints are taints without those the server keeps in step with the node's conditions, which
// follow the node's status however it is written.
func ownTaints(taints []corev1.Taint) []corev1.Taint {
	var own []corev1.Taint
	for _, t := range taints {
		if t.Effect != corev1.TaintEffectNoSchedule || !core.IsConditionTaint(t.Key) {
			own = append(own, t)
		}
	}
	return own
}

// modifiedLabels are the keys added, removed or changed between a and b.
func modifiedLabels(a, b map[string]string) map[string]bool {
	modified := map[string]bool{}
	for k, v := range a {
		if w, ok := b[k]; !ok || v != w {
			modified[k] = true
		}
	}
	for k, v := range b {
		if w, ok := a[k]; !ok || v != w {
			modified[k] = true
		}
	}
	return modified
}
