//go:build e2e

// The end-to-end scenario of issue 5, "Against a real runtime": orchlet runs a static pod on
// containerd and runc (Debian's packages; see .ci/run) and on fakecri, with one test body for both.
// It needs root, containerd, ctr, runc and busybox-static, so it builds only under -tags e2e.

package main

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	cri "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"orch.io/orch/components/orchlet/app/apptest"
	"orch.io/orch/components/orchlet/pods"
	"orch.io/orch/components/orchlet/pods/labels"
	"orch.io/orch/components/syncbuf"
	"orch.io/orch/fakecri"
	"orch.io/orch/fakecri/calllog"
	"orch.io/orch/fakecri/fakecritest"
	"orch.io/orch/fakecri/script"
)

// Local image names: no registry is reachable, so the images are built from busybox-static here.
const (
	e2eImage      = "orch.local/busybox:1.36"
	e2ePauseImage = "orch.local/pause:1"
	// e2eLatestImage is present too; e2eAbsentImage is not.
	e2eLatestImage = "orch.local/busybox:latest"
	e2eAbsentImage = "orch.local/absent:1"
	e2ePodName     = "e2e"
	e2eNode        = "node-e2e"
	e2ePodsDir     = "/var/log/pods" // orchlet has no --pod-logs-dir; Kubernetes' default
	// shimSocketRoot is where containerd 1.6's shims put their sockets, whatever its configuration.
	shimSocketRoot = "/run/containerd"
)

// e2eManifest is a static pod on the host network (no CNI here) whose image is present, so
// IfNotPresent pulls nothing: one container that keeps running, one that crashes at once.
const e2eManifest = `apiVersion: v1
kind: Pod
metadata: {name: ` + e2ePodName + `}
spec:
  hostNetwork: true
  restartPolicy: Always
  terminationGracePeriodSeconds: 2
  containers:
  - name: sleeper
    image: ` + e2eImage + `
    imagePullPolicy: IfNotPresent
    command: [sleep, "3600"]
  - name: crasher
    image: ` + e2eImage + `
    imagePullPolicy: IfNotPresent
    command: [sh, -c, "echo attempt $$$$; exit 1"]  # $$ is a $ in a container command
`

// pullsManifest checks the pull policies, with no registry reachable: Never runs the present
// image and refuses an absent one without pulling; Always, given or defaulted for :latest, pulls
// even a present image, and so fails here.
const pullsManifest = `apiVersion: v1
kind: Pod
metadata: {name: pulls}
spec:
  hostNetwork: true
  terminationGracePeriodSeconds: 2
  containers:
  - {name: never, image: ` + e2eImage + `, imagePullPolicy: Never, command: [sleep, "3600"]}
  - {name: absent, image: ` + e2eAbsentImage + `, imagePullPolicy: Never, command: [sleep, "3600"]}
  - {name: always, image: ` + e2eImage + `, imagePullPolicy: Always, command: [sleep, "3600"]}
  - {name: latest, image: ` + e2eLatestImage + `, command: [sleep, "3600"]}
`

// runtimeUnderTest is a CRI runtime the scenario runs orchlet on.
type runtimeUnderTest struct {
	endpoint string // unix://...
	// running, when set, proves with the runtime's own tools that the container is a live process.
	running func(t *testing.T, id string)
	// gone, when set, proves with the runtime's own tools that nothing of the pod is left.
	gone func() error
	// pulls counts the PullImage calls the runtime served, when it can tell.
	pulls func() int
	// runsBinaries tells a runtime that runs the image's programs (busybox's httpd among them).
	runsBinaries bool
}

// TestStandaloneScenarioOnContainerd runs the scenario on containerd 1.6 and runc, each with its
// own root, state, socket and runc root under a temporary directory.
func TestStandaloneScenarioOnContainerd(t *testing.T) {
	ctd := startContainerd(t)
	rt := runtimeUnderTest{
		endpoint: "unix://" + ctd.sock, runsBinaries: true,
		running: func(t *testing.T, id string) {
			t.Helper()
			// ctr's own view: the container's task is RUNNING with a host PID running sleep 3600.
			out := ctd.ctr(t, "tasks", "ls")
			var pid string
			for _, line := range strings.Split(out, "\n") {
				if f := strings.Fields(line); len(f) == 3 && f[0] == id {
					if f[2] != "RUNNING" {
						t.Fatalf("ctr tasks ls: %s is %s", id, f[2])
					}
					pid = f[1]
				}
			}
			if pid == "" {
				t.Fatalf("ctr tasks ls has no task %s:\n%s", id, out)
			}
			cmdline, err := os.ReadFile("/proc/" + pid + "/cmdline")
			if err != nil || string(cmdline) != "sleep\x003600\x00" {
				t.Fatalf("process %s of container %s: cmdline %q, %v", pid, id, cmdline, err)
			}
		},
		gone: func() error {
			if out := strings.TrimSpace(ctd.ctrOut("containers", "ls", "-q")); out != "" {
				return fmt.Errorf("ctr containers ls: %s", out)
			}
			if m := mountsUnder(ctd.dir); len(m) > 0 {
				return fmt.Errorf("mounts left under %s: %v", ctd.dir, m)
			}
			return nil
		},
	}
	runStaticPodScenario(t, rt)
}

// TestStandaloneScenarioOnFakecri runs the same scenario on fakecri, scripted as containerd behaves
// with these containers: the image is present, the crasher exits 1 at once.
func TestStandaloneScenarioOnFakecri(t *testing.T) {
	script := &script.Script{
		Node: script.NodeScript{RuntimeName: "containerd", SandboxImage: e2ePauseImage, CgroupDriver: "cgroupfs", PreloadImages: []string{e2eImage, e2eLatestImage}},
		// No registry is reachable, as on the machine containerd runs on.
		Images: []script.ImageRule{{Match: "orch.local/*", PullError: &script.PullError{Message: "no registry reachable"}}},
		Containers: []script.ContainerRule{
			{Match: script.ContainerMatch{Name: "crasher"}, Exit: &script.ExitSpec{Code: 1}},
		},
		Faults: []script.FaultRule{{Method: "RuntimeConfig", Error: &script.FaultError{Code: "Unimplemented"}}},
	}
	fc, sock := fakecritest.Start(t, fakecri.Options{Seed: 1, Script: script})
	runStaticPodScenario(t, runtimeUnderTest{
		endpoint: sock,
		pulls:    func() int { return len(fc.Calls(calllog.Filter{Method: "*PullImage"})) },
	})
}

// runStaticPodScenario writes the manifest, runs orchlet on rt and checks, through orchlet's
// read-only server and the runtime's CRI: the sleeper Running; the crasher restarted at once, then
// after a 10s then a 20s back-off; the pod's containers and sandbox gone once the manifest is removed.
func runStaticPodScenario(t *testing.T, rt runtimeUnderTest) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rs, _ := connectRuntime(ctx, t, rt.endpoint)

	manifests := t.TempDir()
	manifest := filepath.Join(manifests, "e2e.yaml")
	a := startServing(t, "--container-runtime-endpoint", rt.endpoint, "--pod-manifest-path", manifests,
		"--file-check-frequency=1s", "--hostname-override="+e2eNode, "--fail-swap-on=false",
		"--cgroup-driver=cgroupfs", "--cert-dir="+t.TempDir())
	stderr, readOnly := a.stderr, a.readOnly
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("orchlet stderr:\n%s", stderr.String())
		}
	})
	client := &http.Client{Timeout: 2 * time.Second}
	podsURL := "http://127.0.0.1:" + readOnly + "/pods"
	eventually := func(what string, within time.Duration, cond func() (bool, error)) {
		apptest.WaitWithin(t, clock.New(), what, within, cond)
	}
	podName, pullsName := e2ePodName+"-"+e2eNode, "pulls-"+e2eNode
	cleanupPodLogs(t, podName, pullsName)

	written := time.Now()
	if err := os.WriteFile(manifest, []byte(e2eManifest), 0o644); err != nil {
		t.Fatal(err)
	}
	var status corev1.ContainerStatus
	eventually("the sleeper Running on the read-only server", 20*time.Second, func() (bool, error) {
		list, err := getPods(client, podsURL)
		if err != nil {
			return false, err
		}
		s, ok := containerStatus(list, podName, "sleeper")
		status = s
		return ok && s.State.Running != nil, fmt.Errorf("sleeper %+v", s.State)
	})
	running := time.Since(written)

	// The runtime's view: one ready sandbox for the pod, the sleeper's container running in it.
	sbs, ctrs := listPod(t, rs, podName)
	if len(sbs) != 1 || sbs[0].State != runtimeapi.PodSandboxState_SANDBOX_READY {
		t.Fatalf("sandboxes of %s: %v", podName, sbs)
	}
	id := strings.TrimPrefix(status.ContainerID, "containerd://")
	var sleeper *runtimeapi.Container
	for _, c := range ctrs {
		if c.Id == id {
			sleeper = c
		}
	}
	if sleeper == nil || sleeper.State != runtimeapi.ContainerState_CONTAINER_RUNNING || sleeper.Metadata.Name != "sleeper" {
		t.Fatalf("container %s (%s) is not the running sleeper among %v", id, status.ContainerID, ctrs)
	}
	if rt.running != nil {
		rt.running(t, id)
	}
	checkExec(t, a.https, podName, "sleeper")
	if rt.runsBinaries {
		checkPortForward(t, a.https, podName, "sleeper")
	}
	st, err := rs.ContainerStatus(ctx, id, false)
	if err != nil {
		t.Fatal(err)
	}
	// The manifest is seen at the next --file-check-frequency poll: up to 1s here.
	t.Logf("manifest written to sleeper Running on the read-only server: %v (sandbox created at %v, sleeper started at %v)",
		running.Round(time.Millisecond), time.Unix(0, sbs[0].CreatedAt).Sub(written).Round(time.Millisecond),
		time.Unix(0, st.Status.StartedAt).Sub(written).Round(time.Millisecond))
	if rt.pulls != nil {
		if n := rt.pulls(); n != 0 {
			t.Errorf("%d PullImage calls for a present image under IfNotPresent", n)
		}
	}
	for _, c := range []string{"sleeper", "crasher"} {
		if hasEvent(stderr.String(), podName, c, "Pulling") || !hasEvent(stderr.String(), podName, c, "Pulled") {
			t.Errorf("%s: IfNotPresent with the image present: want no Pulling event and a Pulled (already present) one", c)
		}
	}
	// The pull policies, while the crash loop runs.
	if err := os.WriteFile(filepath.Join(manifests, "pulls.yaml"), []byte(pullsManifest), 0o644); err != nil {
		t.Fatal(err)
	}

	// The crash loop, on the runtime's clock: attempt 1 starts at once after attempt 0 exits,
	// attempt 2 after a 10s back-off, attempt 3 after 20s.
	var crashes []*runtimeapi.ContainerStatus
	eventually("the crasher's attempt 3 started", 50*time.Second, func() (bool, error) {
		crashes = crasherAttempts(t, rs, podName)
		return len(crashes) >= 4 && crashes[3].StartedAt != 0, fmt.Errorf("%d attempts", len(crashes))
	})
	for i, c := range crashes[:3] {
		if c.State != runtimeapi.ContainerState_CONTAINER_EXITED || c.ExitCode != 1 {
			t.Errorf("crasher attempt %d: %v exit %d", i, c.State, c.ExitCode)
		}
	}
	gap := func(i int) time.Duration {
		return time.Duration(crashes[i].StartedAt - crashes[i-1].FinishedAt)
	}
	t.Logf("crasher restarts after its exits: %v, %v, %v", gap(1).Round(time.Millisecond), gap(2).Round(time.Millisecond), gap(3).Round(time.Millisecond))
	if g := gap(1); g > 2*time.Second {
		t.Errorf("first restart %v after the exit, want immediate", g)
	}
	if g := gap(2); g < 10*time.Second || g > 13*time.Second {
		t.Errorf("second restart %v after the exit, want the 10s back-off", g)
	}
	if g := gap(3); g < 20*time.Second || g > 23*time.Second {
		t.Errorf("third restart %v after the exit, want the 20s back-off", g)
	}
	if rt.runsBinaries {
		checkPreviousLogs(t, a.https, podName, "crasher")
	}
	eventually("the crasher's restartCount 3 and last state exit 1 on the read-only server", 5*time.Second, func() (bool, error) {
		list, err := getPods(client, podsURL)
		if err != nil {
			return false, err
		}
		s, _ := containerStatus(list, podName, "crasher")
		term := s.LastTerminationState.Terminated
		return s.RestartCount >= 3 && term != nil && term.ExitCode == 1, fmt.Errorf("crasher %+v", s)
	})
	if !strings.Contains(stderr.String(), `"reason":"BackOff"`) {
		t.Errorf("no BackOff event in the log")
	}
	want := map[string]string{"never": "Running", "absent": "ErrImageNeverPull", "always": "ErrImagePull|ImagePullBackOff", "latest": "ErrImagePull|ImagePullBackOff"}
	eventually("the pull policies followed", 10*time.Second, func() (bool, error) {
		list, err := getPods(client, podsURL)
		if err != nil {
			return false, err
		}
		for name, w := range want {
			s, _ := containerStatus(list, pullsName, name)
			got := "Running"
			if s.State.Running == nil {
				got = fmt.Sprintf("%+v", s.State)
				if s.State.Waiting != nil {
					got = s.State.Waiting.Reason
				}
			}
			if !strings.Contains("|"+w+"|", "|"+got+"|") {
				return false, fmt.Errorf("%s: %s, want %s", name, got, w)
			}
		}
		return true, nil
	})
	for name, pulls := range map[string]bool{"never": false, "absent": false, "always": true, "latest": true} {
		if hasEvent(stderr.String(), pullsName, name, "Pulling") != pulls {
			t.Errorf("%s: a Pulling event is %v, want %v", name, !pulls, pulls)
		}
	}
	if strings.Contains(stderr.String(), `"reason":"FailedSync"`) || hasEvent(stderr.String(), podName, "", "Failed") {
		t.Errorf("a sync or a runtime call failed (see the orchlet log)")
	}

	// Remove the manifest: the pod leaves the server, and its containers and sandbox the runtime.
	if err := os.Remove(manifest); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(manifests, "pulls.yaml")); err != nil {
		t.Fatal(err)
	}
	removed := time.Now()
	eventually("the removed manifest's pod gone from the read-only server", 20*time.Second, func() (bool, error) {
		list, err := getPods(client, podsURL)
		return err == nil && len(list.Items) == 0, err
	})
	eventually("its sandbox and containers gone from the runtime", 20*time.Second, func() (bool, error) {
		sbs, ctrs := listPod(t, rs, podName)
		sbs2, ctrs2 := listPod(t, rs, pullsName)
		n, m := len(sbs)+len(sbs2), len(ctrs)+len(ctrs2)
		return n == 0 && m == 0, fmt.Errorf("%d sandboxes, %d containers", n, m)
	})
	if rt.gone != nil {
		eventually("nothing of the pod left in the runtime", 10*time.Second, func() (bool, error) {
			err := rt.gone()
			return err == nil, err
		})
	}
	t.Logf("manifest removed to pod torn down: %v", time.Since(removed).Round(time.Millisecond))

	if err := a.stop(t); err != nil {
		t.Fatalf("orchlet after SIGTERM: %v", err)
	}
}

// hasEvent says whether orchlet logged the creation of an event with reason about the container
// (any, if container is empty) of pod.
func hasEvent(log, pod, container, reason string) bool {
	for _, line := range strings.Split(log, "\n") {
		var e struct {
			Verb  string         `json:"verb"`
			Event eventsv1.Event `json:"event"`
		}
		if !strings.HasPrefix(line, "{") || json.Unmarshal([]byte(line), &e) != nil || e.Verb != "create" {
			continue
		}
		r := e.Event.Regarding
		if r.Name == pod && e.Event.Reason == reason && (container == "" || r.FieldPath == "spec.containers{"+container+"}") {
			return true
		}
	}
	return false
}

func containerStatus(list *corev1.PodList, pod, name string) (corev1.ContainerStatus, bool) {
	for _, p := range list.Items {
		if p.Name != pod {
			continue
		}
		for _, s := range p.Status.ContainerStatuses {
			if s.Name == name {
				return s, true
			}
		}
	}
	return corev1.ContainerStatus{}, false
}

func listPod(t *testing.T, rs cri.RuntimeService, pod string) ([]*runtimeapi.PodSandbox, []*runtimeapi.Container) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	sel := map[string]string{labels.PodName: pod}
	sbs, err := rs.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{LabelSelector: sel})
	if err != nil {
		t.Fatal(err)
	}
	ctrs, err := rs.ListContainers(ctx, &runtimeapi.ContainerFilter{LabelSelector: sel})
	if err != nil {
		t.Fatal(err)
	}
	return sbs, ctrs
}

// crasherAttempts is the statuses of the crasher's instances, by attempt.
func crasherAttempts(t *testing.T, rs cri.RuntimeService, pod string) []*runtimeapi.ContainerStatus {
	t.Helper()
	_, ctrs := listPod(t, rs, pod)
	var out []*runtimeapi.ContainerStatus
	for _, c := range ctrs {
		if c.Metadata.Name != "crasher" {
			continue
		}
		resp, err := rs.ContainerStatus(context.Background(), c.Id, false)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, resp.Status)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Metadata.Attempt < out[j].Metadata.Attempt })
	for i, s := range out {
		if int(s.Metadata.Attempt) != i {
			t.Fatalf("crasher attempts %v: attempt %d missing", out, i)
		}
	}
	return out
}

// connectRuntime connects to the CRI runtime at endpoint and, when the test ends, removes every
// sandbox it still holds.
func connectRuntime(ctx context.Context, t *testing.T, endpoint string) (cri.RuntimeService, cri.ImageManagerService) {
	rs, is, err := pods.Connect(ctx, endpoint, "", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { removeAllSandboxes(rs) })
	return rs, is
}

// removeAllSandboxes stops and removes whatever a failed run left in the runtime.
func removeAllSandboxes(rs cri.RuntimeService) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sbs, _ := rs.ListPodSandbox(ctx, nil)
	for _, s := range sbs {
		_ = rs.StopPodSandbox(ctx, s.Id)
		_ = rs.RemovePodSandbox(ctx, s.Id)
	}
}

// removePodLogs removes the pod's log directories orchlet made the runtime write under
// /var/log/pods (namespace_name_uid).
func removePodLogs(pod string) {
	dirs, _ := filepath.Glob(filepath.Join(e2ePodsDir, "default_"+pod+"_*"))
	for _, d := range dirs {
		_ = os.RemoveAll(d)
	}
}

// cleanupPodLogs removes, when the test ends, the pods' log directories, and /var/log/pods itself
// if it was not there before (only if empty).
func cleanupPodLogs(t *testing.T, pods ...string) {
	_, statErr := os.Stat(e2ePodsDir)
	t.Cleanup(func() {
		for _, p := range pods {
			removePodLogs(p)
		}
		if os.IsNotExist(statErr) {
			_ = os.Remove(e2ePodsDir) // only if empty
		}
	})
}

// containerd is a containerd started for one test.
type containerd struct {
	dir  string // everything of it lives here
	sock string
	cmd  *exec.Cmd
	log  *syncbuf.Buffer
}

// runSleeperPod writes manifest, a static pod with a container named sleeper, as file into the
// agent's manifest directory and waits for the sleeper Running, returning its container ID; when
// the test ends the manifest is removed and the pod's containers are waited gone.
func runSleeperPod(t *testing.T, ctd *containerd, a *servingAgent, manifests, file, manifest, podName string) string {
	t.Helper()
	if err := os.WriteFile(filepath.Join(manifests, file), []byte(manifest), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = os.Remove(filepath.Join(manifests, file))
		apptest.WaitWithin(t, clock.New(), "the pod gone", 30*time.Second, func() (bool, error) {
			out := strings.TrimSpace(ctd.ctrOut("containers", "ls", "-q"))
			return out == "", fmt.Errorf("containers left: %s", out)
		})
	})
	client := &http.Client{Timeout: 2 * time.Second}
	var id string
	apptest.WaitWithin(t, clock.New(), "the sleeper Running", 30*time.Second, func() (bool, error) {
		list, err := getPods(client, "http://127.0.0.1:"+a.readOnly+"/pods")
		if err != nil {
			return false, err
		}
		s, ok := containerStatus(list, podName, "sleeper")
		id = strings.TrimPrefix(s.ContainerID, "containerd://")
		return ok && s.State.Running != nil, fmt.Errorf("sleeper %+v", s.State)
	})
	return id
}

// startContainerd writes a config from testdata/containerd.toml with every path under a temporary
// directory, starts containerd on it, waits for its socket and imports the locally built images.
// Cleanup stops it, kills any shim of its left behind and unmounts what remains under the directory.
func startContainerd(t *testing.T) *containerd {
	t.Helper()
	for _, bin := range []string{"containerd", "ctr", "runc", "containerd-shim-runc-v2"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Fatalf("%s: %v (install Debian's containerd, runc and busybox-static)", bin, err)
		}
	}
	// containerd 1.6's runc shims put their sockets in /run/containerd/s whatever the state
	// directory; remove what they leave there if the system had no /run/containerd.
	if _, err := os.Stat(shimSocketRoot); os.IsNotExist(err) {
		t.Cleanup(func() {
			_ = os.Remove(filepath.Join(shimSocketRoot, "s"))
			_ = os.Remove(shimSocketRoot)
		})
	}
	// A short directory name: unix socket paths are limited to 108 bytes.
	dir, err := os.MkdirTemp("", "orch-ctd-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		unmountAll(t, dir)
		if err := os.RemoveAll(dir); err != nil {
			t.Errorf("removing %s: %v", dir, err)
		}
	})
	tmpl, err := os.ReadFile(filepath.Join("testdata", "containerd.toml"))
	if err != nil {
		t.Fatal(err)
	}
	cfg := strings.NewReplacer("{{DIR}}", dir, "{{SANDBOX_IMAGE}}", e2ePauseImage).Replace(string(tmpl))
	if err := os.WriteFile(filepath.Join(dir, "config.toml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	c := &containerd{dir: dir, sock: filepath.Join(dir, "containerd.sock"), log: &syncbuf.Buffer{}}
	c.cmd = exec.Command("containerd", "--config", filepath.Join(dir, "config.toml"))
	c.cmd.Stdout, c.cmd.Stderr = c.log, c.log
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.stop(t) })
	deadline := time.Now().Add(20 * time.Second)
	for {
		if _, err := exec.Command("ctr", "--address", c.sock, "version").CombinedOutput(); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("containerd not serving on %s within 20s:\n%s", c.sock, c.log.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	archive := filepath.Join(dir, "images.tar")
	if err := writeBusyboxImages(archive, map[string][]string{
		e2eImage:       {"Cmd", "sh"},
		e2eLatestImage: {"Cmd", "sh"},
		e2ePauseImage:  {"Entrypoint", "sleep", "2147483647"},
	}); err != nil {
		t.Fatal(err)
	}
	c.ctr(t, "images", "import", archive)
	out := c.ctr(t, "images", "ls", "-q")
	for _, want := range []string{e2eImage, e2eLatestImage, e2ePauseImage} {
		if !strings.Contains(out, want) {
			t.Fatalf("ctr images ls after the import lacks %s:\n%s", want, out)
		}
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("containerd log:\n%s", c.log.String())
		}
	})
	return c
}

// ctr runs ctr on the test's containerd in the CRI plugin's namespace.
func (c *containerd) ctr(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command("ctr", append([]string{"--address", c.sock, "--namespace", "k8s.io"}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("ctr %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

func (c *containerd) ctrOut(args ...string) string {
	out, err := exec.Command("ctr", append([]string{"--address", c.sock, "--namespace", "k8s.io"}, args...)...).CombinedOutput()
	if err != nil {
		return fmt.Sprintf("ctr %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// stop ends containerd and then any shim it started that is still alive (a shim outlives
// containerd by design); shims are found by the containerd address on their command line.
func (c *containerd) stop(t *testing.T) {
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _, _ = c.cmd.Process.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = c.cmd.Process.Kill()
		<-done
	}
	for _, pid := range processesWith(c.sock) {
		t.Logf("killing shim %d left by containerd", pid)
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

// processesWith lists the processes whose command line contains s.
func processesWith(s string) []int {
	var pids []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && bytes.Contains(cmdline, []byte(s)) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// mountsUnder lists the mount points under dir, deepest first.
func mountsUnder(dir string) []string {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	var out []string
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) > 4 && strings.HasPrefix(f[4], dir+"/") {
			out = append(out, f[4])
		}
	}
	sort.Slice(out, func(i, j int) bool { return len(out[i]) > len(out[j]) })
	return out
}

func unmountAll(t *testing.T, dir string) {
	for _, m := range mountsUnder(dir) {
		if err := syscall.Unmount(m, syscall.MNT_DETACH); err != nil {
			t.Errorf("unmounting %s: %v", m, err)
		} else {
			t.Logf("unmounted %s left under the containerd directory", m)
		}
	}
}

// writeBusyboxImages writes an OCI image layout archive, as `ctr images import` reads it, holding
// one image per name: a single layer with Debian's static busybox as /bin/busybox and the applets
// the tests use as links to it, and a config whose process is given as {field, args...} with field
// Cmd or Entrypoint. The io.containerd.image.name annotation names each image.
func writeBusyboxImages(path string, images map[string][]string) error {
	busybox, err := os.ReadFile("/bin/busybox")
	if err != nil {
		return fmt.Errorf("busybox-static: %w", err)
	}
	var layer bytes.Buffer
	lw := tar.NewWriter(&layer)
	mtime := time.Unix(0, 0)
	for _, d := range []struct {
		name string
		mode int64
	}{{"bin/", 0o755}, {"dev/", 0o755}, {"etc/", 0o755}, {"proc/", 0o755}, {"sys/", 0o755}, {"tmp/", 0o1777}} {
		if err := lw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d.name, Mode: d.mode, ModTime: mtime}); err != nil {
			return err
		}
	}
	if err := lw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: "bin/busybox", Mode: 0o755, Size: int64(len(busybox)), ModTime: mtime}); err != nil {
		return err
	}
	if _, err := lw.Write(busybox); err != nil {
		return err
	}
	for _, applet := range []string{"sh", "sleep", "echo", "true", "false", "cat", "ls", "ps", "id", "seq", "httpd", "tar", "tty", "nc", "sha256sum"} {
		if err := lw.WriteHeader(&tar.Header{Typeflag: tar.TypeSymlink, Name: "bin/" + applet, Linkname: "busybox", Mode: 0o777, ModTime: mtime}); err != nil {
			return err
		}
	}
	etc := map[string]string{"etc/passwd": "root:x:0:0:root:/root:/bin/sh\n", "etc/group": "root:x:0:\n"}
	for _, name := range []string{"etc/group", "etc/passwd"} {
		if err := lw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o644, Size: int64(len(etc[name])), ModTime: mtime}); err != nil {
			return err
		}
		if _, err := lw.Write([]byte(etc[name])); err != nil {
			return err
		}
	}
	if err := lw.Close(); err != nil {
		return err
	}

	blobs := map[string][]byte{}
	add := func(b []byte) (string, int) {
		sum := sha256.Sum256(b)
		d := "sha256:" + hex.EncodeToString(sum[:])
		blobs[d] = b
		return d, len(b)
	}
	layerDigest, layerSize := add(layer.Bytes())
	type descriptor struct {
		MediaType   string            `json:"mediaType"`
		Digest      string            `json:"digest"`
		Size        int               `json:"size"`
		Annotations map[string]string `json:"annotations,omitempty"`
		Platform    map[string]string `json:"platform,omitempty"`
	}
	var manifests []descriptor
	names := make([]string, 0, len(images))
	for name := range images {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		proc := images[name]
		config, err := json.Marshal(map[string]any{
			"architecture": "amd64",
			"os":           "linux",
			"created":      mtime.UTC().Format(time.RFC3339),
			"config":       map[string]any{"Env": []string{"PATH=/bin"}, proc[0]: proc[1:], "WorkingDir": "/"},
			"rootfs":       map[string]any{"type": "layers", "diff_ids": []string{layerDigest}},
		})
		if err != nil {
			return err
		}
		configDigest, configSize := add(config)
		manifest, err := json.Marshal(map[string]any{
			"schemaVersion": 2,
			"mediaType":     "application/vnd.oci.image.manifest.v1+json",
			"config":        descriptor{MediaType: "application/vnd.oci.image.config.v1+json", Digest: configDigest, Size: configSize},
			"layers":        []descriptor{{MediaType: "application/vnd.oci.image.layer.v1.tar", Digest: layerDigest, Size: layerSize}},
		})
		if err != nil {
			return err
		}
		d, size := add(manifest)
		manifests = append(manifests, descriptor{
			MediaType: "application/vnd.oci.image.manifest.v1+json", Digest: d, Size: size,
			Annotations: map[string]string{"io.containerd.image.name": name, "org.opencontainers.image.ref.name": name[strings.LastIndex(name, ":")+1:]},
			Platform:    map[string]string{"architecture": "amd64", "os": "linux"},
		})
	}
	index, err := json.Marshal(map[string]any{"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json", "manifests": manifests})
	if err != nil {
		return err
	}

	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	w := tar.NewWriter(f)
	file := func(name string, b []byte) error {
		if err := w.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o644, Size: int64(len(b)), ModTime: mtime}); err != nil {
			return err
		}
		_, err := w.Write(b)
		return err
	}
	if err := file("oci-layout", []byte(`{"imageLayoutVersion":"1.0.0"}`)); err != nil {
		return err
	}
	if err := file("index.json", index); err != nil {
		return err
	}
	digests := make([]string, 0, len(blobs))
	for d := range blobs {
		digests = append(digests, d)
	}
	sort.Strings(digests)
	for _, d := range digests {
		if err := file("blobs/sha256/"+strings.TrimPrefix(d, "sha256:"), blobs[d]); err != nil {
			return err
		}
	}
	if err := w.Close(); err != nil {
		return err
	}
	return f.Close()
}
