package main

import (
	"maps"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"orch.io/orch/fakecri"
)

func TestJudgeAPIPods(t *testing.T) {
	pod := func(name string, phase corev1.PodPhase, ready corev1.ConditionStatus, restarts int32) corev1.Pod {
		return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name)}, Status: corev1.PodStatus{Phase: phase,
			Conditions:        []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}, {Type: corev1.PodReady, Status: ready}},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "sleeper", RestartCount: restarts}}}}
	}
	terminating := pod("c", corev1.PodRunning, corev1.ConditionTrue, 0)
	terminating.DeletionTimestamp = &metav1.Time{}
	want := map[string]bool{"a": true, "b": true, "c": true}
	unstarted := map[string]bool{"uid-b": true, "uid-c": true}
	running := func(name string, restarts int32) corev1.Pod {
		return pod(name, corev1.PodRunning, corev1.ConditionTrue, restarts)
	}
	for _, tc := range []struct {
		name                           string
		pods                           []corev1.Pod
		notReady, lingering, restarted []string
		restartedUnstarted             []string
	}{
		{"converged", []corev1.Pod{running("a", 0), running("b", 0), running("c", 0)}, nil, nil, nil, nil},
		{"one pending, one running not ready, one absent",
			[]corev1.Pod{pod("a", corev1.PodPending, corev1.ConditionFalse, 0), pod("b", corev1.PodRunning, corev1.ConditionFalse, 0)},
			[]string{"a: Pending, ready false", "b: Running, ready false", "c: not in the API"}, nil, nil, nil},
		{"a deleted pod still there, one being deleted that should run",
			[]corev1.Pod{running("a", 0), running("b", 0), terminating, running("gone", 0)},
			[]string{"c: Running, ready true"}, []string{"gone: deleted, still in the API (Running)"}, nil, nil},
		{"a restart counted, converged all the same",
			[]corev1.Pod{running("a", 1), running("b", 0), running("c", 0)},
			nil, nil, []string{"a/sleeper (uid-a): restart count 1"}, nil},
		{"one restart of a container created and not started at a kill told apart; two are not",
			[]corev1.Pod{running("a", 0), running("b", 1), running("c", 2)},
			nil, nil, []string{"c/sleeper (uid-c): restart count 2"}, []string{"b/sleeper (uid-b): restart count 1"}},
	} {
		d := judgeAPIPods(tc.pods, want, unstarted)
		if !slices.Equal(d.NotReady, tc.notReady) || !slices.Equal(d.Lingering, tc.lingering) || !slices.Equal(d.Restarted, tc.restarted) ||
			!slices.Equal(d.RestartedUnstarted, tc.restartedUnstarted) {
			t.Errorf("%s: got %+v", tc.name, d)
		}
		if d.Converged() != (len(tc.notReady)+len(tc.lingering) == 0) {
			t.Errorf("%s: Converged() = %v", tc.name, d.Converged())
		}
	}
}

func TestCreatedNotStarted(t *testing.T) {
	st := fakecri.State{
		Sandboxes: []fakecri.SandboxState{
			{ID: "sa", UID: "a", State: "SANDBOX_READY"}, {ID: "sb", UID: "b", State: "SANDBOX_READY"},
			{ID: "sc", UID: "c", State: "SANDBOX_READY"}, {ID: "sd", UID: "d", State: "SANDBOX_NOTREADY"},
		},
		Containers: []fakecri.ContainerState{
			{ID: "ca", SandboxID: "sa", Name: "sleeper", State: "CONTAINER_CREATED"},
			{ID: "cb", SandboxID: "sb", Name: "sleeper", State: "CONTAINER_CREATED"}, {ID: "cb2", SandboxID: "sb", Name: "sleeper", State: "CONTAINER_RUNNING"},
			{ID: "cc", SandboxID: "sc", Name: "sleeper", State: "CONTAINER_EXITED"},
			{ID: "cd", SandboxID: "sd", Name: "sleeper", State: "CONTAINER_CREATED"},
		},
	}
	if got := slices.Sorted(maps.Keys(createdNotStarted(st))); !slices.Equal(got, []string{"a"}) {
		t.Fatalf("created and not started: %v, want [a] (b runs one, c's exited, d's sandbox is not ready)", got)
	}
}
