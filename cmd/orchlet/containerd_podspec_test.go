//go:build e2e

package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"orch.io/orch/components/orchlet/app/apptest"
)

// webManifest is issue 13's web pod on the real runtime: an init container writes into an emptyDir
// that the app reads at start (so its log proves the order); a readiness probe on a file the test
// creates; a preStop hook that marks a hostPath before the app's own TERM handler does; the app's
// memory limit and CPU quota; a container running as a given user and group.
const webManifest = `apiVersion: v1
kind: Pod
metadata: {name: web}
spec:
  hostNetwork: true
  terminationGracePeriodSeconds: 10
  volumes:
  - {name: data, emptyDir: {}}
  - {name: mark, hostPath: {path: "{{MARK}}", type: Directory}}
  initContainers:
  - name: init
    image: ` + e2eImage + `
    imagePullPolicy: IfNotPresent
    command: [sh, -c, "echo written-by-init > /data/order; mkdir /data/sub; echo in-sub > /data/sub/f"]
    volumeMounts: [{name: data, mountPath: /data}]
  containers:
  - name: app
    image: ` + e2eImage + `
    imagePullPolicy: IfNotPresent
    command: [sh, -c, "cat /data/order || exit 3; cat /sub/f || exit 4; trap 'echo term >> /mark/log; exit 0' TERM; while :; do sleep 1 & wait; done"]
    volumeMounts: [{name: data, mountPath: /data}, {name: mark, mountPath: /mark}, {name: data, mountPath: /sub, subPath: sub}]
    resources:
      requests: {cpu: 250m, memory: 64Mi}
      limits: {cpu: 250m, memory: 64Mi}
    readinessProbe:
      exec: {command: [cat, /tmp/ready]}
      periodSeconds: 1
    lifecycle:
      preStop:
        exec: {command: [sh, -c, "echo prestop >> /mark/log"]}
  - name: user
    image: ` + e2eImage + `
    imagePullPolicy: IfNotPresent
    command: [sh, -c, "id -u; id -g; exec sleep 3600"]
    securityContext: {runAsUser: 1234, runAsGroup: 5678}
`

// TestStandalonePodSpecOnContainerd runs webManifest on containerd and runc and checks each rule
// with the runtime's and the host's own view: the logs the runtime wrote, the processes' ids in
// /proc, the cgroup files of the container, the file the hooks wrote on the host.
func TestStandalonePodSpecOnContainerd(t *testing.T) {
	ctd := startContainerd(t)
	endpoint := "unix://" + ctd.sock
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rs, _ := connectRuntime(ctx, t, endpoint)
	podName := "web-" + e2eNode
	cleanupPodLogs(t, podName)

	mark := t.TempDir()
	manifests := t.TempDir()
	manifest := filepath.Join(manifests, "web.yaml")
	a := startServing(t, "--container-runtime-endpoint", endpoint, "--pod-manifest-path", manifests,
		"--file-check-frequency=1s", "--hostname-override="+e2eNode, "--fail-swap-on=false",
		"--cgroup-driver=cgroupfs", "--pod-max-pids=64", "--cert-dir="+t.TempDir(), "--root-dir="+t.TempDir())
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("orchlet stderr:\n%s", a.stderr.String())
		}
	})
	client := &http.Client{Timeout: 2 * time.Second}
	podsURL := "http://127.0.0.1:" + a.readOnly + "/pods"
	eventually := func(what string, within time.Duration, cond func() (bool, error)) {
		apptest.WaitWithin(t, clock.New(), what, within, cond)
	}
	pod := func() (*corev1.Pod, error) {
		list, err := getPods(client, podsURL)
		if err != nil {
			return nil, err
		}
		for i := range list.Items {
			if list.Items[i].Name == podName {
				return &list.Items[i], nil
			}
		}
		return nil, fmt.Errorf("no pod %s among %d", podName, len(list.Items))
	}

	if err := os.WriteFile(manifest, []byte(strings.ReplaceAll(webManifest, "{{MARK}}", mark)), 0o644); err != nil {
		t.Fatal(err)
	}
	eventually("app and user Running on the read-only server", 30*time.Second, func() (bool, error) {
		p, err := pod()
		if err != nil {
			return false, err
		}
		app, _ := containerStatus(&corev1.PodList{Items: []corev1.Pod{*p}}, podName, "app")
		user, _ := containerStatus(&corev1.PodList{Items: []corev1.Pod{*p}}, podName, "user")
		return app.State.Running != nil && user.State.Running != nil, fmt.Errorf("app %+v, user %+v", app.State, user.State)
	})
	ids := map[string]string{}
	_, ctrs := listPod(t, rs, podName)
	for _, c := range ctrs {
		ids[c.Metadata.Name] = c.Id
	}
	status := func(name string) *runtimeapi.ContainerStatus {
		t.Helper()
		resp, err := rs.ContainerStatus(ctx, ids[name], false)
		if err != nil {
			t.Fatalf("ContainerStatus of %s: %v", name, err)
		}
		return resp.Status
	}

	// Init before app: the init container exited 0 before the app started, and the app's first
	// line is what init wrote into the emptyDir.
	initSt, appSt := status("init"), status("app")
	if initSt.State != runtimeapi.ContainerState_CONTAINER_EXITED || initSt.ExitCode != 0 {
		t.Errorf("init: %v exit %d, want exited 0", initSt.State, initSt.ExitCode)
	}
	if appSt.StartedAt < initSt.FinishedAt {
		t.Errorf("app started at %d, before init finished at %d", appSt.StartedAt, initSt.FinishedAt)
	}
	eventually("the app's log shows what init wrote, in the emptyDir and in its subPath", 5*time.Second, func() (bool, error) {
		lines := logLines(appSt.LogPath)
		return len(lines) > 1 && lines[0] == "written-by-init" && lines[1] == "in-sub", fmt.Errorf("app log %q", lines)
	})
	// The subPath reaches the runtime as the kubelet's bind mount of it, the app's third mount.
	subpathBind := "/volume-subpaths/data/app/2 "
	if mounts, _ := os.ReadFile("/proc/self/mountinfo"); !strings.Contains(string(mounts), subpathBind) {
		t.Errorf("no bind mount of the subPath (%s) on the host", subpathBind)
	}

	// Readiness gates Ready: not ready while /tmp/ready is missing (several probe periods), ready
	// once it is there.
	for end := time.Now().Add(3 * time.Second); time.Now().Before(end); time.Sleep(500 * time.Millisecond) {
		p, err := pod()
		if err != nil {
			t.Fatal(err)
		}
		if c := podCondition(p, corev1.PodReady); c != corev1.ConditionFalse {
			t.Fatalf("Ready is %q with the readiness probe failing", c)
		}
		if s, _ := containerStatus(&corev1.PodList{Items: []corev1.Pod{*p}}, podName, "app"); s.Ready {
			t.Fatal("app ready with its readiness probe failing")
		}
	}
	if _, stderr, err := rs.ExecSync(ctx, ids["app"], []string{"sh", "-c", "echo ok > /tmp/ready"}, 10*time.Second); err != nil {
		t.Fatalf("creating /tmp/ready in app: %v %s", err, stderr)
	}
	eventually("Ready once the readiness probe passes", 10*time.Second, func() (bool, error) {
		p, err := pod()
		if err != nil {
			return false, err
		}
		c := podCondition(p, corev1.PodReady)
		return c == corev1.ConditionTrue, fmt.Errorf("Ready %q", c)
	})

	// runAsUser and runAsGroup: what id says inside, and the process's ids seen from the host.
	userSt := status("user")
	eventually("user's log shows its uid and gid", 5*time.Second, func() (bool, error) {
		lines := logLines(userSt.LogPath)
		return strings.Join(lines, ",") == "1234,5678", fmt.Errorf("user log %q", lines)
	})
	if uid, gid := procIDs(t, ctd.taskPID(t, ids["user"])); uid != "1234" || gid != "5678" {
		t.Errorf("user's process runs as uid %s gid %s, want 1234 5678", uid, gid)
	}

	// The app's limits in its cgroup files: 64Mi, and 250m as a 25ms quota per 100ms period.
	cg := cgroupFiles(t, ctd.taskPID(t, ids["app"]))
	// --pod-max-pids on the pod cgroup, the container's parent, on cgroup v1 as on v2.
	if got := cg.read(t, "pids", "../pids.max"); got != "64" {
		t.Errorf("the pod cgroup's pids.max %q, want 64 (--pod-max-pids)", got)
	}
	if cg.v2 {
		if got := cg.read(t, "memory", "memory.max"); got != "67108864" {
			t.Errorf("memory.max %s, want 67108864", got)
		}
		if got := cg.read(t, "cpu", "cpu.max"); got != "25000 100000" {
			t.Errorf("cpu.max %q, want 25000 100000", got)
		}
	} else {
		for _, f := range []struct{ controller, file, want string }{
			{"memory", "memory.limit_in_bytes", "67108864"},
			{"cpu", "cpu.cfs_quota_us", "25000"},
			{"cpu", "cpu.cfs_period_us", "100000"},
			{"cpu", "cpu.shares", "256"},
		} {
			if got := cg.read(t, f.controller, f.file); got != f.want {
				t.Errorf("%s: %s, want %s", f.file, got, f.want)
			}
		}
	}

	// preStop before the kill: removing the manifest runs the hook, whose mark precedes the one
	// the app's TERM handler leaves.
	if err := os.Remove(manifest); err != nil {
		t.Fatal(err)
	}
	eventually("the pod's sandbox and containers gone from the runtime", 30*time.Second, func() (bool, error) {
		sbs, ctrs := listPod(t, rs, podName)
		return len(sbs)+len(ctrs) == 0, fmt.Errorf("%d sandboxes, %d containers", len(sbs), len(ctrs))
	})
	if mounts, _ := os.ReadFile("/proc/self/mountinfo"); strings.Contains(string(mounts), subpathBind) {
		t.Errorf("the subPath's bind mount (%s) outlived the pod", subpathBind)
	}
	if got, err := os.ReadFile(filepath.Join(mark, "log")); err != nil || string(got) != "prestop\nterm\n" {
		t.Errorf("marks on the hostPath: %q (%v), want the preStop's then the TERM handler's", got, err)
	}
	if err := a.stop(t); err != nil {
		t.Fatalf("orchlet after SIGTERM: %v", err)
	}
}

// logLines is the content of a CRI log file ("<time> <stream> <tag> <line>" per line).
func logLines(path string) []string {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	var out []string
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if f := strings.SplitN(l, " ", 4); len(f) == 4 {
			out = append(out, f[3])
		}
	}
	return out
}

func podCondition(p *corev1.Pod, typ corev1.PodConditionType) corev1.ConditionStatus {
	for _, c := range p.Status.Conditions {
		if c.Type == typ {
			return c.Status
		}
	}
	return ""
}

// taskPID is the host PID of the container's task, as ctr lists it.
func (c *containerd) taskPID(t *testing.T, id string) string {
	t.Helper()
	for _, line := range strings.Split(c.ctr(t, "tasks", "ls"), "\n") {
		if f := strings.Fields(line); len(f) == 3 && f[0] == id {
			return f[1]
		}
	}
	t.Fatalf("ctr tasks ls has no task %s", id)
	return ""
}

// procIDs is the real uid and gid of a process, from /proc/<pid>/status.
func procIDs(t *testing.T, pid string) (uid, gid string) {
	t.Helper()
	data, err := os.ReadFile("/proc/" + pid + "/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(data), "\n") {
		f := strings.Fields(l)
		if len(f) > 1 && f[0] == "Uid:" {
			uid = f[1]
		}
		if len(f) > 1 && f[0] == "Gid:" {
			gid = f[1]
		}
	}
	return uid, gid
}

// processCgroups locates a process's cgroups under /sys/fs/cgroup: one path for the unified
// hierarchy (v2), one per controller on v1.
type processCgroups struct {
	v2    bool
	paths map[string]string // controller ("" on v2) to its directory
}

func cgroupFiles(t *testing.T, pid string) processCgroups {
	t.Helper()
	data, err := os.ReadFile("/proc/" + pid + "/cgroup")
	if err != nil {
		t.Fatal(err)
	}
	_, err = os.Stat("/sys/fs/cgroup/cgroup.controllers")
	cg := processCgroups{v2: err == nil, paths: map[string]string{}}
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		f := strings.SplitN(l, ":", 3)
		if len(f) != 3 {
			continue
		}
		if cg.v2 && f[0] == "0" {
			cg.paths[""] = filepath.Join("/sys/fs/cgroup", f[2])
		}
		for _, ctl := range strings.Split(f[1], ",") {
			if ctl != "" && !cg.v2 {
				cg.paths[ctl] = filepath.Join("/sys/fs/cgroup", ctl, f[2])
			}
		}
	}
	return cg
}

func (cg processCgroups) read(t *testing.T, controller, file string) string {
	t.Helper()
	dir, ok := cg.paths[controller]
	if cg.v2 {
		dir, ok = cg.paths[""]
	}
	if !ok {
		t.Fatalf("no %s cgroup among %v", controller, cg.paths)
	}
	data, err := os.ReadFile(filepath.Join(dir, file))
	if err != nil {
		t.Fatalf("reading the container's cgroup file: %v", err)
	}
	return strings.TrimSpace(string(data))
}
