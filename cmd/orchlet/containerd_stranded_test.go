//go:build e2e

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	corev1 "k8s.io/api/core/v1"
	cri "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"orch.io/orch/components/orchlet/app/apptest"
	"orch.io/orch/components/orchlet/pods/labels"
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

// strandedManifest is a static pod whose one container keeps running.
const strandedManifest = `apiVersion: v1
kind: Pod
metadata: {name: stranded}
spec:
  hostNetwork: true
  terminationGracePeriodSeconds: 2
  containers:
  - {name: sleeper, image: ` + e2eImage + `, imagePullPolicy: IfNotPresent, command: [sleep, "3600"]}
`

// TestStrandedTaskDoesNotHoldADeletedPodOnContainerd: a pod whose sandbox holds a container
// containerd will not remove (its task started behind CRI's back, as a cancelled StartContainer
// strands one) is done when its manifest goes all the same. The teardown's removals are refused
// and left to the container GC; the agent kills what is left in the pod's cgroup (a killed
// process leaves its cgroup only once reaped, so the cgroup's removal may need the sync's retry)
// and the pod is torn down. Before, the teardown failed on the refused removal and retried for as
// long as the agent ran, and a pod deleted from the API stayed there.
func TestStrandedTaskDoesNotHoldADeletedPodOnContainerd(t *testing.T) {
	ctd := startContainerd(t)
	endpoint := "unix://" + ctd.sock
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	rs, _ := connectRuntime(ctx, t, endpoint)
	podName := "stranded-" + e2eNode
	cleanupPodLogs(t, podName)
	manifests := t.TempDir()
	manifest := filepath.Join(manifests, "stranded.yaml")
	if err := os.WriteFile(manifest, []byte(strandedManifest), 0o644); err != nil {
		t.Fatal(err)
	}
	a := startServing(t, "--container-runtime-endpoint", endpoint, "--pod-manifest-path", manifests,
		"--file-check-frequency=1s", "--hostname-override="+e2eNode, "--fail-swap-on=false", "--cgroup-driver=cgroupfs",
		"--cert-dir="+t.TempDir(), "--pod-infra-container-image="+e2ePauseImage)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("orchlet stderr:\n%s", a.stderr.String())
		}
	})
	client := &http.Client{Timeout: 2 * time.Second}
	sleeper := func() (status corev1.ContainerStatus, listed bool, err error) {
		list, err := getPods(client, "http://127.0.0.1:"+a.readOnly+"/pods")
		if err != nil {
			return status, false, err
		}
		status, listed = containerStatus(list, podName, "sleeper")
		return status, listed, nil
	}
	apptest.WaitWithin(t, clock.New(), "the sleeper running", 30*time.Second, func() (bool, error) {
		s, listed, err := sleeper()
		if err != nil {
			return false, err
		}
		return listed && s.State.Running != nil, fmt.Errorf("sleeper %+v", s.State)
	})

	// A container in the pod's sandbox, with its labels and under its cgroup, whose task ctr starts.
	sbs, _ := listPod(t, rs, podName)
	if len(sbs) != 1 {
		t.Fatalf("sandboxes of %s: %v", podName, sbs)
	}
	st, err := rs.PodSandboxStatus(ctx, sbs[0].Id, true)
	if err != nil {
		t.Fatal(err)
	}
	var info struct {
		Config *runtimeapi.PodSandboxConfig `json:"config"`
	}
	if err := json.Unmarshal([]byte(st.Info["info"]), &info); err != nil || info.Config.GetLinux().GetCgroupParent() == "" {
		t.Fatalf("the sandbox's config from its verbose status: %v (%+v)", err, info.Config)
	}
	ctrLabels := map[string]string{labels.ContainerName: "stranded"}
	for _, k := range []string{labels.PodName, labels.PodNamespace, labels.PodUID} {
		ctrLabels[k] = sbs[0].Labels[k]
	}
	id, err := rs.CreateContainer(ctx, sbs[0].Id, &runtimeapi.ContainerConfig{Metadata: &runtimeapi.ContainerMetadata{Name: "stranded"},
		Image: &runtimeapi.ImageSpec{Image: e2eImage}, Command: []string{"sleep", "1000"}, Labels: ctrLabels,
		Linux: &runtimeapi.LinuxContainerConfig{SecurityContext: &runtimeapi.LinuxContainerSecurityContext{NamespaceOptions: info.Config.GetLinux().GetSecurityContext().GetNamespaceOptions()}}}, info.Config)
	if err != nil {
		t.Fatal(err)
	}
	ctd.ctr(t, "task", "start", "--detach", "--null-io", id)

	if err := os.Remove(manifest); err != nil {
		t.Fatal(err)
	}
	apptest.WaitWithin(t, clock.New(), "the pod torn down", 40*time.Second, func() (bool, error) {
		return strings.Contains(a.stderr.String(), `"Pod torn down" pod="default/`+podName+`"`), errors.New("not yet")
	})
	if log := a.stderr.String(); !strings.Contains(log, "Removing a stopped container failed; the container GC will remove it") ||
		!strings.Contains(log, "cannot delete running task") {
		t.Error("the agent's log does not show the teardown's removal refused by containerd")
	}
	if s, listed, err := sleeper(); err != nil || listed {
		t.Errorf("the agent still lists the pod (%v, the sleeper %+v)", err, s.State)
	}
	// The process is killed with the pod's cgroup; containerd keeps the stopped task, and refuses
	// the container GC's removals, until its own client deletes it (containerd#11037).
	if out := ctd.ctr(t, "task", "ls"); !regexp.MustCompile(`(?m)^` + id + `\s+\d+\s+STOPPED$`).MatchString(out) {
		t.Errorf("the stranded task is not stopped:\n%s", out)
	}
	if n, err := apptest.DeleteStrandedTasks(ctx, rs, endpoint, []string{id}); n != 1 || err != nil {
		t.Errorf("DeleteStrandedTasks = %d, %v; want 1, nil", n, err)
	}
	if err := a.stop(t); err != nil {
		t.Fatalf("orchlet after SIGTERM: %v", err)
	}
}
