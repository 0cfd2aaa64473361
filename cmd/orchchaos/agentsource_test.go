package main

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestJudgeAPIPods(t *testing.T) {
	pod := func(name string, phase corev1.PodPhase, ready corev1.ConditionStatus, restarts int32) corev1.Pod {
		return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.PodStatus{Phase: phase,
			Conditions:        []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}, {Type: corev1.PodReady, Status: ready}},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "sleeper", RestartCount: restarts}}}}
	}
	terminating := pod("c", corev1.PodRunning, corev1.ConditionTrue, 0)
	terminating.DeletionTimestamp = &metav1.Time{}
	want := map[string]bool{"a": true, "b": true, "c": true}
	for _, tc := range []struct {
		name                           string
		pods                           []corev1.Pod
		notReady, lingering, restarted []string
	}{
		{"converged", []corev1.Pod{pod("a", corev1.PodRunning, corev1.ConditionTrue, 0), pod("b", corev1.PodRunning, corev1.ConditionTrue, 0), pod("c", corev1.PodRunning, corev1.ConditionTrue, 0)}, nil, nil, nil},
		{"one pending, one running not ready, one absent",
			[]corev1.Pod{pod("a", corev1.PodPending, corev1.ConditionFalse, 0), pod("b", corev1.PodRunning, corev1.ConditionFalse, 0)},
			[]string{"a: Pending, ready false", "b: Running, ready false", "c: not in the API"}, nil, nil},
		{"a deleted pod still there, one being deleted that should run",
			[]corev1.Pod{pod("a", corev1.PodRunning, corev1.ConditionTrue, 0), pod("b", corev1.PodRunning, corev1.ConditionTrue, 0), terminating, pod("gone", corev1.PodRunning, corev1.ConditionTrue, 0)},
			[]string{"c: Running, ready true"}, []string{"gone: deleted, still in the API (Running)"}, nil},
		{"a restart counted, converged all the same",
			[]corev1.Pod{pod("a", corev1.PodRunning, corev1.ConditionTrue, 1), pod("b", corev1.PodRunning, corev1.ConditionTrue, 0), pod("c", corev1.PodRunning, corev1.ConditionTrue, 0)},
			nil, nil, []string{"a/sleeper: restart count 1"}},
	} {
		d := judgeAPIPods(tc.pods, want)
		if !slices.Equal(d.NotReady, tc.notReady) || !slices.Equal(d.Lingering, tc.lingering) || !slices.Equal(d.Restarted, tc.restarted) {
			t.Errorf("%s: got %+v", tc.name, d)
		}
		if d.Converged() != (len(tc.notReady)+len(tc.lingering) == 0) {
			t.Errorf("%s: Converged() = %v", tc.name, d.Converged())
		}
	}
}
