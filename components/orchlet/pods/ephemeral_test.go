package pods

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"orch.io/orch/components/orchlet/sources"
	fakescript "orch.io/orch/fakecri/script"
)

// An ephemeral container added to a running pod starts in the pod's running sandbox, in its
// target's process namespace (NamespaceMode TARGET with the target's container ID, as the
// kubelet sets it); it shows in ephemeralContainerStatuses, and is never restarted once it exits.
func TestEphemeralContainerJoinsTheRunningSandbox(t *testing.T) {
	h := newHarness(t, &fakescript.Script{}, config(nil), nil)
	pod := newPod("web", ctr("app", "nginx:1.27"))
	h.add(pod)
	h.runUntil(time.Second)
	if got := h.pod("web").Status.Phase; got != corev1.PodRunning {
		t.Fatalf("phase %s before the debug container", got)
	}
	sandbox := h.sandboxes()[0].Id
	var app string
	for _, c := range h.containers() {
		if c.Metadata.Name == "app" {
			app = c.Id
		}
	}

	debug := pod.DeepCopy()
	debug.Spec.EphemeralContainers = []corev1.EphemeralContainer{{TargetContainerName: "app", EphemeralContainerCommon: corev1.EphemeralContainerCommon{
		Name: "debugger", Image: "busybox:1.36", Command: []string{"sh"}, Stdin: true, TTY: true}}}
	h.m.Update(sources.Update{Op: sources.OpUpdate, Source: sources.SourceFile, Pod: debug})
	h.runUntil(2 * time.Second)

	creates := h.calls("CreateContainer", "debugger")
	if len(creates) != 1 {
		t.Fatalf("debugger created %d times", len(creates))
	}
	req := creates[0].Message.(*runtimeapi.CreateContainerRequest)
	if req.PodSandboxId != sandbox {
		t.Errorf("created in sandbox %s, want the running %s", req.PodSandboxId, sandbox)
	}
	ns := req.GetConfig().GetLinux().GetSecurityContext().GetNamespaceOptions()
	if ns.GetPid() != runtimeapi.NamespaceMode_TARGET || ns.GetTargetId() != app {
		t.Errorf("pid namespace %v target %q, want TARGET of app's %s", ns.GetPid(), ns.GetTargetId(), app)
	}
	if cfg := req.GetConfig(); !cfg.Stdin || !cfg.Tty || cfg.Metadata.Attempt != 0 {
		t.Errorf("stdin %v tty %v attempt %d", cfg.Stdin, cfg.Tty, cfg.Metadata.Attempt)
	}
	if len(h.calls("RunPodSandbox", "")) != 1 || len(h.calls("StopContainer", "")) != 0 {
		t.Errorf("the pod was disturbed: %d sandboxes, %d stops", len(h.calls("RunPodSandbox", "")), len(h.calls("StopContainer", "")))
	}
	st := h.pod("web").Status
	if len(st.EphemeralContainerStatuses) != 1 {
		t.Fatalf("ephemeral statuses %v", st.EphemeralContainerStatuses)
	}
	es := st.EphemeralContainerStatuses[0]
	if es.Name != "debugger" || es.State.Running == nil || es.Ready || es.Started != nil || es.ContainerID == "" {
		t.Errorf("debugger status %+v", es)
	}
	if st.Phase != corev1.PodRunning || len(st.ContainerStatuses) != 1 || !st.ContainerStatuses[0].Ready {
		t.Errorf("pod status changed: %s %+v", st.Phase, st.ContainerStatuses)
	}

	// It exits: it stays exited, never restarted.
	if _, err := h.rt.StopContainer(h.ctx, &runtimeapi.StopContainerRequest{ContainerId: es.ContainerID[len("fakecri://"):]}); err != nil {
		t.Fatal(err)
	}
	h.runUntil(time.Minute)
	if n := len(h.calls("CreateContainer", "debugger")); n != 1 {
		t.Errorf("debugger created %d times after it exited, want once", n)
	}
	if es := h.pod("web").Status.EphemeralContainerStatuses; len(es) != 1 || es[0].State.Terminated == nil || es[0].RestartCount != 0 {
		t.Errorf("after it exited: %+v", es)
	}
}

// Without a target, an ephemeral container keeps the process namespace the pod gives every
// container.
func TestEphemeralContainerWithoutTarget(t *testing.T) {
	h := newHarness(t, &fakescript.Script{}, config(nil), nil)
	pod := newPod("web", ctr("app", "nginx:1.27"))
	pod.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "debugger", Image: "busybox:1.36"}}}
	h.add(pod)
	h.runUntil(time.Second)
	req := h.calls("CreateContainer", "debugger")
	if len(req) != 1 {
		t.Fatalf("debugger created %d times", len(req))
	}
	if ns := req[0].Message.(*runtimeapi.CreateContainerRequest).GetConfig().GetLinux().GetSecurityContext().GetNamespaceOptions(); ns.GetPid() != runtimeapi.NamespaceMode_CONTAINER {
		t.Errorf("no target, but pid namespace %v", ns.GetPid())
	}
}

// An ephemeral container whose target has not started yet (the pod still initializes) waits for
// it, as the kubelet's "unable to find target container" does, and starts in its namespace once it
// runs; the init container is not disturbed.
func TestEphemeralContainerWaitsForItsTarget(t *testing.T) {
	h := newHarness(t, &fakescript.Script{Containers: []fakescript.ContainerRule{{Match: fakescript.ContainerMatch{Name: "setup"},
		Exit: &fakescript.ExitSpec{After: dur(5 * time.Second)}}}}, config(nil), nil)
	pod := newPod("web", ctr("app", "nginx:1.27"))
	pod.Spec.InitContainers = []corev1.Container{ctr("setup", "busybox:1.36")}
	pod.Spec.EphemeralContainers = []corev1.EphemeralContainer{{TargetContainerName: "app", EphemeralContainerCommon: corev1.EphemeralContainerCommon{
		Name: "debugger", Image: "busybox:1.36"}}}
	h.add(pod)
	h.runUntil(2 * time.Second)
	if n := len(h.calls("CreateContainer", "debugger")); n != 0 {
		t.Fatalf("debugger created %d times before its target", n)
	}
	es := h.pod("web").Status.EphemeralContainerStatuses
	if len(es) != 1 || es[0].State.Waiting == nil || es[0].State.Waiting.Message != "unable to find target container app" {
		t.Fatalf("waiting debugger: %+v", es)
	}
	h.runUntil(10 * time.Second)
	creates := h.calls("CreateContainer", "debugger")
	if len(creates) != 1 {
		t.Fatalf("debugger created %d times once app runs", len(creates))
	}
	var app string
	for _, c := range h.containers() {
		if c.Metadata.Name == "app" {
			app = c.Id
		}
	}
	if ns := creates[0].Message.(*runtimeapi.CreateContainerRequest).GetConfig().GetLinux().GetSecurityContext().GetNamespaceOptions(); ns.GetTargetId() != app || app == "" {
		t.Errorf("target %q, want app's %q", ns.GetTargetId(), app)
	}
	if es := h.pod("web").Status.EphemeralContainerStatuses; len(es) != 1 || es[0].State.Running == nil {
		t.Errorf("debugger status %+v", es)
	}
}
