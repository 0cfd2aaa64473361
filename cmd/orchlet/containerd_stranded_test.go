//go:build e2e

package main

import (
	"context"
	"strings"
	"testing"

	cri "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"orch.io/orch/components/orchlet/app/apptest"
)

// TestStrandedTaskDeletedOnContainerd shows that CRI cannot remove a container whose task
// containerd keeps behind CRI's back, nor its sandbox, and that apptest.DeleteStrandedTasks, which
// orchchaos's agent campaign clears the runtime with, can. containerd 1.6 strands such a task when
// a StartContainer is cancelled between the shim's create and containerd learning the pid, as a
// kill of the agent mid-call does; that window is a millisecond wide (starts cut short a
// millisecond apart hit it about once in a hundred), so the test makes the same state with ctr:
// a task started outside CRI, which containerd refuses to remove in the same words.
func TestStrandedTaskDeletedOnContainerd(t *testing.T) {
	ctd := startContainerd(t)
	endpoint := "unix://" + ctd.sock
	ctx := context.Background()
	rs, _ := connectRuntime(ctx, t, endpoint)
	if n, err := apptest.DeleteStrandedTasks(ctx, rs, endpoint, []string{"no-such-container"}); n != 0 || err != nil {
		t.Fatalf("DeleteStrandedTasks of a container without a task = %d, %v; want 0, nil", n, err)
	}
	sb, id := strandTask(t, ctd, rs, "stranded")
	if err := rs.RemoveContainer(ctx, id); err == nil || !strings.Contains(err.Error(), "cannot delete running task") {
		t.Fatalf("RemoveContainer with the stranded task = %v, want containerd's 'cannot delete running task'", err)
	}
	_ = rs.StopPodSandbox(ctx, sb)
	if err := rs.RemovePodSandbox(ctx, sb); err == nil || !strings.Contains(err.Error(), "cannot delete running task") {
		t.Fatalf("RemovePodSandbox with the stranded task = %v, want containerd's 'cannot delete running task'", err)
	}
	n, err := apptest.DeleteStrandedTasks(ctx, rs, endpoint, []string{id})
	if n != 1 || err != nil {
		t.Fatalf("DeleteStrandedTasks = %d, %v; want 1, nil", n, err)
	}
	if err := rs.RemovePodSandbox(ctx, sb); err != nil {
		t.Fatalf("RemovePodSandbox after the stranded task was deleted: %v", err)
	}
	if ctrs, err := rs.ListContainers(ctx, nil); err != nil || len(ctrs) != 0 {
		t.Fatalf("containers left: %v, %v", ctrs, err)
	}
}

// strandTask runs a sandbox named name on the host's network with a container that CRI created
// and never started, and starts that container's task with ctr, behind CRI's back.
func strandTask(t *testing.T, ctd *containerd, rs cri.RuntimeService, name string) (sandbox, container string) {
	t.Helper()
	ctx := context.Background()
	host := &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_NODE}
	sbCfg := &runtimeapi.PodSandboxConfig{Metadata: &runtimeapi.PodSandboxMetadata{Name: name, Namespace: "default", Uid: name + "-uid"},
		Linux: &runtimeapi.LinuxPodSandboxConfig{SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{NamespaceOptions: host}}}
	sb, err := rs.RunPodSandbox(ctx, sbCfg, "")
	if err != nil {
		t.Fatal(err)
	}
	id, err := rs.CreateContainer(ctx, sb, &runtimeapi.ContainerConfig{Metadata: &runtimeapi.ContainerMetadata{Name: "app"},
		Image: &runtimeapi.ImageSpec{Image: e2eImage}, Command: []string{"sleep", "1000"},
		Linux: &runtimeapi.LinuxContainerConfig{SecurityContext: &runtimeapi.LinuxContainerSecurityContext{NamespaceOptions: host}}}, sbCfg)
	if err != nil {
		t.Fatal(err)
	}
	ctd.ctr(t, "task", "start", "--detach", "--null-io", id)
	if out := ctd.ctr(t, "task", "ls"); !strings.Contains(out, id) {
		t.Fatalf("ctr task ls lacks the task of %s:\n%s", id, out)
	}
	return sb, id
}
