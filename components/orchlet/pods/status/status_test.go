package status

import (
	"io/fs"
	"strings"
	"testing"
	"testing/fstest"

	"k8s.io/utils/ptr"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// podPhase follows Kubernetes' getPhase, cases from kubelet_pods_test.go's.
func TestPodPhase(t *testing.T) {
	running := corev1.ContainerStatus{State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}, Started: ptr.To(true)}
	unstarted := corev1.ContainerStatus{State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}, Started: ptr.To(false)}
	waiting := corev1.ContainerStatus{State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{}}, Started: ptr.To(false)}
	exited := func(code int32) corev1.ContainerStatus {
		return corev1.ContainerStatus{State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code}}, Started: ptr.To(false)}
	}
	backoff := func(code int32) corev1.ContainerStatus {
		return corev1.ContainerStatus{State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}},
			LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code}}, Started: ptr.To(false)}
	}
	initC := ctr("init", "x")
	side := ctr("side", "x")
	side.RestartPolicy = always()
	for _, tc := range []struct {
		name        string
		policy      corev1.RestartPolicy
		inits       []corev1.Container
		initSt, st  []corev1.ContainerStatus
		terminal    corev1.PodPhase
		initialized bool
		want        corev1.PodPhase
	}{
		{"all running", corev1.RestartPolicyAlways, nil, nil, []corev1.ContainerStatus{running, running}, "", false, corev1.PodRunning},
		{"one waiting", corev1.RestartPolicyAlways, nil, nil, []corev1.ContainerStatus{running, waiting}, "", false, corev1.PodPending},
		{"all exited, Always", corev1.RestartPolicyAlways, nil, nil, []corev1.ContainerStatus{exited(0), exited(1)}, "", false, corev1.PodRunning},
		{"all exited 0, OnFailure", corev1.RestartPolicyOnFailure, nil, nil, []corev1.ContainerStatus{exited(0), exited(0)}, "", false, corev1.PodSucceeded},
		{"one failed, OnFailure", corev1.RestartPolicyOnFailure, nil, nil, []corev1.ContainerStatus{exited(0), backoff(1)}, "", false, corev1.PodRunning},
		{"one failed, Never", corev1.RestartPolicyNever, nil, nil, []corev1.ContainerStatus{exited(0), exited(1)}, "", false, corev1.PodFailed},
		{"init running", corev1.RestartPolicyAlways, []corev1.Container{initC}, []corev1.ContainerStatus{running}, []corev1.ContainerStatus{waiting}, "", false, corev1.PodPending},
		{"init failed, Never", corev1.RestartPolicyNever, []corev1.Container{initC}, []corev1.ContainerStatus{exited(1)}, []corev1.ContainerStatus{waiting}, "", false, corev1.PodFailed},
		{"init failed, OnFailure", corev1.RestartPolicyOnFailure, []corev1.Container{initC}, []corev1.ContainerStatus{backoff(1)}, []corev1.ContainerStatus{waiting}, "", false, corev1.PodPending},
		{"init done", corev1.RestartPolicyAlways, []corev1.Container{initC}, []corev1.ContainerStatus{exited(0)}, []corev1.ContainerStatus{running}, "", true, corev1.PodRunning},
		{"sidecar not started", corev1.RestartPolicyAlways, []corev1.Container{side}, []corev1.ContainerStatus{unstarted}, []corev1.ContainerStatus{waiting}, "", false, corev1.PodPending},
		{"sidecar restarting after init", corev1.RestartPolicyAlways, []corev1.Container{side}, []corev1.ContainerStatus{unstarted}, []corev1.ContainerStatus{running}, "", true, corev1.PodRunning},
		{"terminal: sidecar stopped, app done", corev1.RestartPolicyNever, []corev1.Container{side}, []corev1.ContainerStatus{exited(137)}, []corev1.ContainerStatus{exited(0)}, corev1.PodSucceeded, true, corev1.PodSucceeded},
		{"terminal, Always, one failed", corev1.RestartPolicyAlways, nil, nil, []corev1.ContainerStatus{exited(0), exited(2)}, corev1.PodFailed, true, corev1.PodFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := newPod("p", ctr("a", "x"))
			pod.Spec.RestartPolicy = tc.policy
			pod.Spec.InitContainers = tc.inits
			if got := podPhase(pod, corev1.PodStatus{InitContainerStatuses: tc.initSt, ContainerStatuses: tc.st}, tc.terminal, tc.initialized); got != tc.want {
				t.Errorf("phase = %s, want %s", got, tc.want)
			}
		})
	}
}

// The termination message file is found among the container's mounts by its path in the
// container and read from the node; an empty one falls back to the log under
// FallbackToLogsOnError with a failure; a missing one says nothing.
func TestTerminationMessageFile(t *testing.T) {
	fsys := fstest.MapFS{
		"pods/u/msg":   {Data: []byte("disk full")},
		"pods/u/empty": {Data: nil},
		"logs/0.log":   {Data: []byte("2025-01-01T00:00:01Z stderr F last words\n")},
	}
	g := Generator{ReadFile: func(name string) ([]byte, error) { return fs.ReadFile(fsys, strings.TrimPrefix(name, "/")) }}
	for _, tc := range []struct {
		host   string
		policy corev1.TerminationMessagePolicy
		path   string
		want   string
	}{
		{"/pods/u/msg", corev1.TerminationMessageReadFile, "", "disk full"},
		{"/pods/u/msg", corev1.TerminationMessageFallbackToLogsOnError, "", "disk full"},
		{"/pods/u/empty", corev1.TerminationMessageFallbackToLogsOnError, "", "last words\n"},
		{"/pods/u/empty", corev1.TerminationMessageReadFile, "", ""},
		{"/pods/u/missing", corev1.TerminationMessageReadFile, "", ""},
		{"/pods/u/msg", corev1.TerminationMessageReadFile, "/tmp/other", ""},
	} {
		c := &corev1.Container{Name: "app", TerminationMessagePolicy: tc.policy, TerminationMessagePath: tc.path}
		st := &runtimeapi.ContainerStatus{
			State: runtimeapi.ContainerState_CONTAINER_EXITED, ExitCode: 1, LogPath: "/logs/0.log",
			Mounts: []*runtimeapi.Mount{{ContainerPath: "/dev/termination-log", HostPath: tc.host}},
		}
		if got := g.terminationMessage(c, st); got != tc.want {
			t.Errorf("%s %s %s: %q, want %q", tc.host, tc.policy, tc.path, got, tc.want)
		}
	}
}

func ctr(name, image string) corev1.Container { return corev1.Container{Name: name, Image: image} }

func always() *corev1.ContainerRestartPolicy {
	p := corev1.ContainerRestartPolicyAlways
	return &p
}

func newPod(name string, containers ...corev1.Container) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}, Spec: corev1.PodSpec{Containers: containers}}
}
