package core

import (
	"time"

	"github.com/benbjohnson/clock"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The NoSchedule taints Kubernetes' node lifecycle controller keeps in step with a node's
// conditions and spec.unschedulable (TaintNodesByCondition), node.kubernetes.io renamed.
const (
	TaintNodeNotReady           = "node.orch.io/not-ready"
	TaintNodeUnreachable        = "node.orch.io/unreachable"
	TaintNodeUnschedulable      = "node.orch.io/unschedulable"
	TaintNodeMemoryPressure     = "node.orch.io/memory-pressure"
	TaintNodeDiskPressure       = "node.orch.io/disk-pressure"
	TaintNodeNetworkUnavailable = "node.orch.io/network-unavailable"
	TaintNodePIDPressure        = "node.orch.io/pid-pressure"
)

// conditionTaints is nodeConditionToTaintKeyStatusMap: the taint of a condition in a status.
var conditionTaints = map[corev1.NodeConditionType]map[corev1.ConditionStatus]string{
	corev1.NodeReady:              {corev1.ConditionFalse: TaintNodeNotReady, corev1.ConditionUnknown: TaintNodeUnreachable},
	corev1.NodeMemoryPressure:     {corev1.ConditionTrue: TaintNodeMemoryPressure},
	corev1.NodeDiskPressure:       {corev1.ConditionTrue: TaintNodeDiskPressure},
	corev1.NodeNetworkUnavailable: {corev1.ConditionTrue: TaintNodeNetworkUnavailable},
	corev1.NodePIDPressure:        {corev1.ConditionTrue: TaintNodePIDPressure},
}

// IsConditionTaint tells whether key is one of the taints the server keeps in step with a node's
// conditions and spec.unschedulable.
func IsConditionTaint(key string) bool {
	if key == TaintNodeUnschedulable {
		return true
	}
	for _, byStatus := range conditionTaints {
		for _, k := range byStatus {
			if k == key {
				return true
			}
		}
	}
	return false
}

// syncConditionTaints makes n's NoSchedule condition taints those its conditions and
// spec.unschedulable call for, as the controller's doNoScheduleTaintingPass does, leaving every
// other taint as it is. orch has no controller manager: the server applies them as the node is
// written, where Kubernetes' controller follows moments later in a write of its own. A taint
// added is dated by clk, as SwapNodeControllerTaint dates it.
func syncConditionTaints(n *corev1.Node, clk clock.Clock) {
	var want []string
	for _, c := range n.Status.Conditions {
		if key, ok := conditionTaints[c.Type][c.Status]; ok {
			want = append(want, key)
		}
	}
	if n.Spec.Unschedulable {
		want = append(want, TaintNodeUnschedulable)
	}
	wanted := map[string]bool{}
	for _, k := range want {
		wanted[k] = true
	}
	have := map[string]bool{}
	taints := n.Spec.Taints[:0:0]
	for _, t := range n.Spec.Taints {
		if t.Effect == corev1.TaintEffectNoSchedule && IsConditionTaint(t.Key) {
			if !wanted[t.Key] || have[t.Key] {
				continue // the condition is gone
			}
			have[t.Key] = true
		}
		taints = append(taints, t)
	}
	for _, k := range want {
		if !have[k] {
			have[k] = true
			t := corev1.Taint{Key: k, Effect: corev1.TaintEffectNoSchedule}
			if clk != nil {
				added := metav1.NewTime(clk.Now().Truncate(time.Second))
				t.TimeAdded = &added
			}
			taints = append(taints, t)
		}
	}
	if len(taints) == 0 {
		taints = nil
	}
	n.Spec.Taints = taints
}
