package nodestatus

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// The eviction manager's conditions reach the Node as True conditions with the kubelet's reasons,
// and go back to False when the pressure does.
func TestPressureConditionsAndTaints(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	var pressure []corev1.NodeConditionType
	registered := corev1.Taint{Key: "dedicated", Value: "db", Effect: corev1.TaintEffectNoSchedule}
	c := e.controller(func(o *Options) {
		o.Pressure = func() []corev1.NodeConditionType { return pressure }
		o.Taints = []corev1.Taint{registered}
	})
	if err := c.Register(ctx); err != nil {
		t.Fatal(err)
	}
	pressure = []corev1.NodeConditionType{corev1.NodeMemoryPressure, corev1.NodePIDPressure}
	e.clk.Add(10 * time.Second)
	if err := c.SyncStatus(ctx); err != nil {
		t.Fatal(err)
	}
	n := e.node(t)
	for _, want := range []struct {
		t      corev1.NodeConditionType
		status corev1.ConditionStatus
		reason string
	}{
		{corev1.NodeMemoryPressure, corev1.ConditionTrue, "OrchletHasInsufficientMemory"},
		{corev1.NodeDiskPressure, corev1.ConditionFalse, "OrchletHasNoDiskPressure"},
		{corev1.NodePIDPressure, corev1.ConditionTrue, "OrchletHasInsufficientPID"},
	} {
		got := condition(n, want.t)
		if got.Status != want.status || got.Reason != want.reason {
			t.Errorf("%s = %s %s, want %s %s", want.t, got.Status, got.Reason, want.status, want.reason)
		}
		if want.status == corev1.ConditionTrue && !got.LastTransitionTime.Time.Equal(start.Add(10*time.Second)) {
			t.Errorf("%s transition %v, want when it came", want.t, got.LastTransitionTime)
		}
	}
	pressure = nil
	e.clk.Add(10 * time.Second)
	if err := c.SyncStatus(ctx); err != nil {
		t.Fatal(err)
	}
	n = e.node(t)
	if got := condition(n, corev1.NodeMemoryPressure); got.Status != corev1.ConditionFalse || !got.LastTransitionTime.Time.Equal(start.Add(20*time.Second)) {
		t.Fatalf("after the pressure: MemoryPressure %+v", got)
	}
	if len(n.Spec.Taints) != 1 || n.Spec.Taints[0] != registered {
		t.Fatalf("taints %v: the agent leaves taints to the registration", n.Spec.Taints)
	}
}
