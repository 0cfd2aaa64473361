package nodestatus

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
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

// A condition's transition time moves only when its status changes, whatever other conditions
// came and went or were adopted from a Node registered before (the last of a type adopted counts);
// the controller keeps one condition of each type.
func TestConditionTransitionRules(t *testing.T) {
	at := func(s int) metav1.Time { return metav1.NewTime(start.Add(time.Duration(s) * time.Second)) }
	type post struct {
		at     int
		t      corev1.NodeConditionType
		status corev1.ConditionStatus
		since  int // the transition time wanted
	}
	for _, tc := range []struct {
		name    string
		adopted []corev1.NodeCondition
		posts   []post
	}{
		{"first post", nil, []post{{10, corev1.NodeReady, corev1.ConditionTrue, 10}}},
		{"a status kept keeps its time", nil, []post{
			{10, corev1.NodeReady, corev1.ConditionTrue, 10}, {20, corev1.NodeReady, corev1.ConditionTrue, 10}, {30, corev1.NodeReady, corev1.ConditionTrue, 10}}},
		{"a change moves it, and back again", nil, []post{
			{10, corev1.NodeReady, corev1.ConditionTrue, 10}, {20, corev1.NodeReady, corev1.ConditionFalse, 20},
			{30, corev1.NodeReady, corev1.ConditionFalse, 20}, {40, corev1.NodeReady, corev1.ConditionTrue, 40}, {50, corev1.NodeReady, corev1.ConditionTrue, 40}}},
		{"types apart", nil, []post{
			{10, corev1.NodeReady, corev1.ConditionTrue, 10}, {20, corev1.NodeMemoryPressure, corev1.ConditionFalse, 20},
			{30, corev1.NodeMemoryPressure, corev1.ConditionTrue, 30}, {40, corev1.NodeReady, corev1.ConditionTrue, 10}}},
		{"adopted, the same status", []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastTransitionTime: at(1)}},
			[]post{{10, corev1.NodeReady, corev1.ConditionTrue, 1}}},
		{"adopted, another status", []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionFalse, LastTransitionTime: at(1)}},
			[]post{{10, corev1.NodeReady, corev1.ConditionTrue, 10}}},
		{"adopted twice, the last counts", []corev1.NodeCondition{
			{Type: corev1.NodeReady, Status: corev1.ConditionFalse, LastTransitionTime: at(1)},
			{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastTransitionTime: at(2)}},
			[]post{{10, corev1.NodeReady, corev1.ConditionTrue, 2}}},
		{"another writer's condition adopted and kept apart", []corev1.NodeCondition{
			{Type: corev1.NodeNetworkUnavailable, Status: corev1.ConditionTrue, LastTransitionTime: at(1)}},
			[]post{{10, corev1.NodeReady, corev1.ConditionTrue, 10}, {20, corev1.NodeNetworkUnavailable, corev1.ConditionTrue, 1}}},
	} {
		c := New(Options{})
		c.adoptConditions(&corev1.Node{Status: corev1.NodeStatus{Conditions: tc.adopted}})
		types := map[corev1.NodeConditionType]bool{}
		for _, a := range tc.adopted {
			types[a.Type] = true
		}
		for _, p := range tc.posts {
			types[p.t] = true
			got := c.condition(p.t, p.status, "r", "m", at(p.at))
			if !got.LastTransitionTime.Equal(ptr.To(at(p.since))) || !got.LastHeartbeatTime.Equal(ptr.To(at(p.at))) || got.Status != p.status {
				t.Errorf("%s: at %ds %s=%s since %v heartbeat %v, want since %ds", tc.name, p.at, p.t, got.Status, got.LastTransitionTime, got.LastHeartbeatTime, p.since)
			}
		}
		if len(c.conditions) != len(types) {
			t.Errorf("%s: %d conditions kept, want one of each of %d types", tc.name, len(c.conditions), len(types))
		}
	}
}
