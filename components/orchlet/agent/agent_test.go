package agent

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/klog/v2"

	"orch.io/orch/components/apis/orchlet/v1beta1"
	"orch.io/orch/components/featuregates"
	"orch.io/orch/components/orchlet/cpumanager"
	"orch.io/orch/components/orchlet/events"
	"orch.io/orch/components/orchlet/memorymanager"
	"orch.io/orch/components/orchlet/pods"
	"orch.io/orch/components/orchlet/server"
	"orch.io/orch/components/syncbuf"
	"orch.io/orch/fakecri"
	"orch.io/orch/fakecri/calllog"
	"orch.io/orch/fakecri/fakecritest"
	"orch.io/orch/fakecri/script"
)

var t0 = time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)

const webManifest = `apiVersion: v1
kind: Pod
metadata: {name: web}
spec:
  containers:
  - {name: app, image: busybox:1.36, imagePullPolicy: IfNotPresent}
`

type world struct {
	t     *testing.T
	ctx   context.Context
	mock  *clock.Mock
	rt    *fakecri.Runtime
	fs    fstest.MapFS
	agent *Agent
	log   *syncbuf.Buffer
}

func newWorld(t *testing.T, script *script.Script, tune ...func(*v1beta1.OrchletConfiguration)) *world {
	t.Helper()
	return newWorldDeps(t, script, nil, tune...)
}

// newWorldDeps is newWorld with deps changed as the test needs.
func newWorldDeps(t *testing.T, script *script.Script, deps func(*Deps), tune ...func(*v1beta1.OrchletConfiguration)) *world {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	mock := clock.NewMock()
	mock.Set(t0)
	rt, sock := fakecritest.Start(t, fakecri.Options{Clock: mock, Seed: 1, Script: script})
	rs, is, err := pods.Connect(ctx, sock, "", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	cfg := v1beta1.NewDefault()
	cfg.StaticPodPath = "/etc/orch/manifests"
	for _, f := range tune {
		f(cfg)
	}
	fsys := fstest.MapFS{
		"etc/orch/manifests/web.yaml":     {Data: []byte(webManifest)},
		"etc/orch/manifests/.hidden.yaml": {Data: []byte(strings.Replace(webManifest, "name: web", "name: hidden", 1))},
		"etc/orch/manifests/broken.yaml":  {Data: []byte("kind: Pod\nmetadata: {name: broken}\nspec: {containers: []}\n")},
	}
	log := &syncbuf.Buffer{}
	d := Deps{
		Clock: mock, NodeName: "node-a", Runtime: rs, Images: is, Sink: events.NewLogSink(log),
		FS: fsys, Cores: 2, PodLogsDir: t.TempDir(), Logger: klog.Background(), Gates: gatesOf(t, cfg),
	}
	if deps != nil {
		deps(&d)
	}
	a, err := New(cfg, d)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Start(ctx); err != nil {
		t.Fatal(err)
	}
	return &world{t: t, ctx: ctx, mock: mock, rt: rt, fs: fsys, agent: a, log: log}
}

// step does the work due now in each component, handing the sources' updates to the pod workers.
func (w *world) step() {
	for _, c := range w.agent.Components() {
		c.Step(w.ctx)
		if c.Name() == ComponentSources {
			if us := w.agent.Sources.Drain(); len(us) > 0 {
				w.agent.Pods.Update(us...)
			}
		}
	}
}

// nextDeadline is the earliest time any component has work due.
func (w *world) nextDeadline() (time.Time, bool) {
	var next time.Time
	found := false
	for _, c := range w.agent.Components() {
		if t, ok := c.NextDeadline(); ok && (!found || t.Before(next)) {
			next, found = t, true
		}
	}
	return next, found
}

// runUntil steps the agent and moves the fake clock to the next thing either side has due.
func (w *world) runUntil(d time.Duration) {
	w.t.Helper()
	fakecritest.RunUntil(w.t, w.ctx, w.rt, w.mock, t0.Add(d), w.step, func() (time.Time, bool) {
		next, ok := w.nextDeadline()
		if wake, ok2 := w.rt.NextWakeup(); ok2 && (!ok || wake.Before(next)) {
			next, ok = wake, true
		}
		return next, ok
	})
}

func (w *world) pod(name string) (corev1.Pod, bool) {
	for _, p := range w.agent.Pods.Pods() {
		if p.Name == name {
			return p, true
		}
	}
	return corev1.Pod{}, false
}

// A static pod from the manifest directory runs, its events are recorded, a broken manifest is
// reported, a dot-file is ignored, and removing the manifest tears the pod down.
func TestStandaloneStaticPod(t *testing.T) {
	w := newWorld(t, nil)
	w.runUntil(5 * time.Second)
	p, ok := w.pod("web-node-a")
	if !ok || p.Status.Phase != corev1.PodRunning {
		t.Fatalf("web-node-a = %v (found %v), want Running; pods %v", p.Status.Phase, ok, w.agent.Pods.Pods())
	}
	if _, ok := w.pod("hidden-node-a"); ok {
		t.Error("a dot-file's pod is running")
	}
	log := w.log.String()
	for _, want := range []string{`"reason":"Started"`, `"reason":"InvalidManifest"`, `"type":"Warning"`, `"reportingController":"orch.io/orchlet"`} {
		if !strings.Contains(log, want) {
			t.Errorf("event log lacks %s:\n%s", want, log)
		}
	}

	delete(w.fs, "etc/orch/manifests/web.yaml")
	w.runUntil(5*time.Second + 25*time.Second)
	if _, ok := w.pod("web-node-a"); ok {
		t.Fatal("the pod of a removed manifest is still known")
	}
	if len(w.rt.Calls(calllog.Filter{Method: "*StopPodSandbox"})) == 0 || len(w.rt.Calls(calllog.Filter{Method: "*RemovePodSandbox"})) == 0 {
		t.Fatal("the removed pod's sandbox was never stopped and removed")
	}
}

// The servers' views of the node come from the runtime: stats of this agent's containers, their
// CRI log files, and ExecSync.
func TestNodeViews(t *testing.T) {
	w := newWorld(t, &script.Script{Exec: []script.ExecRule{{Command: "fail*", ExitCode: 2, Stderr: "boom"}}})
	w.runUntil(5 * time.Second)

	sum, err := w.agent.Summary(w.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Node.NodeName != "node-a" || len(sum.Pods) != 1 || sum.Pods[0].PodRef.Name != "web-node-a" ||
		len(sum.Pods[0].Containers) != 1 || sum.Pods[0].Containers[0].Name != "app" || sum.Pods[0].Containers[0].Memory == nil {
		t.Fatalf("summary = %+v", sum)
	}

	c, err := w.agent.container(w.ctx, "default", "web-node-a", "app")
	if err != nil {
		t.Fatal(err)
	}
	status, err := w.agent.runtime.ContainerStatus(w.ctx, c.Id, false)
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	if err := w.agent.ContainerLogs(w.ctx, "default", "web-node-a", "app", nil, &logs); !errors.Is(err, server.ErrNotFound) {
		t.Fatalf("logs before the runtime wrote any: %v, want ErrNotFound", err)
	}
	path := status.GetStatus().GetLogPath()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	cri := "2026-11-22T00:00:01.000000000Z stdout F first\n" +
		"2026-11-22T00:00:02.000000000Z stdout P sec\n" +
		"2026-11-22T00:00:02.500000000Z stdout F ond\n" +
		"2026-11-22T00:00:03.000000000Z stderr F third\n"
	if err := os.WriteFile(path, []byte(cri), 0o644); err != nil {
		t.Fatal(err)
	}
	tail := int64(2)
	for _, tc := range []struct {
		opts *corev1.PodLogOptions
		want string
	}{
		{nil, "first\nsecond\nthird\n"},
		{&corev1.PodLogOptions{TailLines: &tail}, "second\nthird\n"},
		{&corev1.PodLogOptions{Timestamps: true, TailLines: &tail}, "2026-11-22T00:00:02.000000000Z second\n2026-11-22T00:00:03.000000000Z third\n"},
	} {
		logs.Reset()
		if err := w.agent.ContainerLogs(w.ctx, "default", "web-node-a", "app", tc.opts, &logs); err != nil || logs.String() != tc.want {
			t.Errorf("logs %+v = %q, %v; want %q", tc.opts, logs.String(), err, tc.want)
		}
	}
}

// In standalone mode --pod-cidr goes to the runtime, so pod IPs come from it.
func TestPodCIDRGoesToTheRuntime(t *testing.T) {
	w := newWorld(t, nil, func(c *v1beta1.OrchletConfiguration) { c.PodCIDR = "10.200.0.0/24" })
	w.runUntil(5 * time.Second)
	p, ok := w.pod("web-node-a")
	if !ok || !strings.HasPrefix(p.Status.PodIP, "10.200.0.") {
		t.Fatalf("pod IP %q (found %v), want one from --pod-cidr 10.200.0.0/24", p.Status.PodIP, ok)
	}
	if n := len(w.rt.Calls(calllog.Filter{Method: "*UpdateRuntimeConfig"})); n != 1 {
		t.Errorf("%d UpdateRuntimeConfig calls, want 1", n)
	}
}

// The runtime's log rotates at --container-log-max-size keeping --container-log-max-files, and
// the log endpoint reads every line across the rotated files, gzipped or not.
func TestLogsAcrossRotation(t *testing.T) {
	script := &script.Script{Containers: []script.ContainerRule{{
		Match: script.ContainerMatch{Name: "app"},
		Logs:  &script.LogSpec{Lines: []string{"line {n}"}, Every: script.Duration(time.Second)},
	}}}
	w := newWorld(t, script, func(c *v1beta1.OrchletConfiguration) {
		c.ContainerLogMaxSize = "200"
		c.ContainerLogMaxFiles = 10
	})
	for i := 1; i <= 4; i++ {
		w.runUntil(time.Duration(i) * 10 * time.Second)
		if err := w.agent.Logs.Rotate(w.ctx); err != nil {
			t.Fatal(err)
		}
	}
	c, err := w.agent.container(w.ctx, "default", "web-node-a", "app")
	if err != nil {
		t.Fatal(err)
	}
	status, err := w.agent.runtime.ContainerStatus(w.ctx, c.Id, false)
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(status.GetStatus().GetLogPath() + ".*")
	if err != nil || len(files) != 4 {
		t.Fatalf("rotated files %v (%v), want 4", files, err)
	}
	var logs bytes.Buffer
	if err := w.agent.ContainerLogs(w.ctx, "default", "web-node-a", "app", nil, &logs); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(logs.String(), "\n"), "\n")
	if len(lines) < 35 {
		t.Fatalf("%d lines: %q", len(lines), logs.String())
	}
	for i, l := range lines {
		if want := fmt.Sprintf("line %d", i+1); l != want {
			t.Fatalf("line %d is %q, want %q", i+1, l, want)
		}
	}
	logs.Reset()
	tail := int64(2)
	if err := w.agent.ContainerLogs(w.ctx, "default", "web-node-a", "app", &corev1.PodLogOptions{TailLines: &tail}, &logs); err != nil {
		t.Fatal(err)
	}
	if want := lines[len(lines)-2] + "\n" + lines[len(lines)-1] + "\n"; logs.String() != want {
		t.Fatalf("tail 2: %q, want %q", logs.String(), want)
	}
}

// With --cpu-manager-policy=static a Guaranteed pod's container asking for whole CPUs is created
// on CPUs of its own, the others on the shared pool, which the reconcile loop narrows on the
// runtime; the state is in <root-dir>/cpu_manager_state.
func TestStaticCPUManager(t *testing.T) {
	root := t.TempDir()
	topology := &cpumanager.Topology{CPUs: []cpumanager.CPUInfo{{ID: 0, Core: 0}, {ID: 1, Core: 0}, {ID: 2, Core: 2}, {ID: 3, Core: 2}}}
	w := newWorldDeps(t, nil, func(d *Deps) {
		d.RootDir = root
		d.CPUTopology = func() (*cpumanager.Topology, error) { return topology, nil }
	}, func(c *v1beta1.OrchletConfiguration) {
		c.CPUManagerPolicy = "static"
		c.ReservedSystemCPUs = "0"
	})
	w.fs["etc/orch/manifests/db.yaml"] = &fstest.MapFile{Data: []byte(`apiVersion: v1
kind: Pod
metadata: {name: db}
spec:
  containers:
  - name: db
    image: busybox:1.36
    imagePullPolicy: IfNotPresent
    resources: {limits: {cpu: "2", memory: 1Gi}}
`)}
	w.runUntil(5 * time.Second)
	cpus := func(pod, name string) string {
		c, err := w.agent.container(w.ctx, "default", pod, name)
		if err != nil {
			t.Fatal(err)
		}
		st, err := w.agent.runtime.ContainerStatus(w.ctx, c.Id, false)
		if err != nil {
			t.Fatal(err)
		}
		return st.GetStatus().GetResources().GetLinux().GetCpusetCpus()
	}
	if got := cpus("db-node-a", "db"); got != "2-3" {
		t.Fatalf("db's cpuset %q, want its own 2-3", got)
	}
	if got := cpus("web-node-a", "app"); got != "0-1" {
		t.Fatalf("web's cpuset %q, want the shared pool", got)
	}
	if err := w.agent.CPUs.Reconcile(w.ctx); err != nil {
		t.Fatal(err)
	}
	if got := cpus("web-node-a", "app"); got != "0-1" {
		t.Fatalf("web's cpuset after a reconcile %q, want the shared pool without db's CPUs", got)
	}
	data, err := os.ReadFile(filepath.Join(root, cpumanager.StateFile))
	if err != nil || !strings.Contains(string(data), `"defaultCpuSet":"0-1"`) || !strings.Contains(string(data), `{"db":"2-3"}`) {
		t.Fatalf("checkpoint %s, %v", data, err)
	}
}

// The static policy assigns CPUs from the machine's topology: without one (a simulated machine)
// it refuses to start rather than read the real machine's.
func TestStaticCPUManagerNeedsATopology(t *testing.T) {
	w := newWorld(t, nil)
	cfg := v1beta1.NewDefault()
	cfg.CPUManagerPolicy = "static"
	_, err := New(cfg, Deps{Clock: w.mock, NodeName: "node-a", Runtime: w.agent.runtime, Images: w.agent.images,
		Sink: events.NewLogSink(w.log), RootDir: t.TempDir(), Logger: klog.Background(), Gates: gatesOf(t, cfg)})
	if err == nil || !strings.Contains(err.Error(), "--cpu-manager-policy=static: the machine's CPU topology is unknown") {
		t.Fatalf("err = %v, want the static policy refused without a topology", err)
	}
}

// With follow, the log endpoint writes the container's lines as the runtime writes them, and
// ends when the container stops.
func TestFollowLogs(t *testing.T) {
	script := &script.Script{Containers: []script.ContainerRule{{
		Match: script.ContainerMatch{Name: "app"},
		Logs:  &script.LogSpec{Lines: []string{"line {n}"}, Every: script.Duration(time.Second)},
	}}}
	w := newWorld(t, script)
	w.runUntil(5 * time.Second)
	c, err := w.agent.container(w.ctx, "default", "web-node-a", "app")
	if err != nil {
		t.Fatal(err)
	}
	out := &syncbuf.Buffer{}
	done := make(chan error, 1)
	go func() {
		done <- w.agent.ContainerLogs(w.ctx, "default", "web-node-a", "app", &corev1.PodLogOptions{Follow: true}, out)
	}()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(out.String(), "line 12\n") {
		if time.Now().After(deadline) {
			t.Fatalf("followed %q, want line 12", out.String())
		}
		if err := w.rt.Advance(w.ctx, w.mock, 250*time.Millisecond); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Millisecond)
	}
	if err := w.agent.runtime.StopContainer(w.ctx, c.Id, 0); err != nil {
		t.Fatal(err)
	}
	for {
		select {
		case err := <-done:
			lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
			for i, l := range lines {
				if want := fmt.Sprintf("line %d", i+1); l != want {
					t.Fatalf("line %d is %q, want %q (err %v)", i+1, l, want, err)
				}
			}
			if err != nil {
				t.Fatal(err)
			}
			return
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("following did not end when the container stopped")
		}
		if err := w.rt.Advance(w.ctx, w.mock, 250*time.Millisecond); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Millisecond)
	}
}

// previous=true reads the attempt before the running one, as the kubelet's previous logs, and is
// not found for a container that has not restarted.
func TestPreviousLogs(t *testing.T) {
	zero, one := uint32(0), uint32(1)
	script := &script.Script{Containers: []script.ContainerRule{
		{
			Match: script.ContainerMatch{Name: "app", MaxAttempt: &zero},
			Logs:  &script.LogSpec{Lines: []string{"first {n}"}, Every: script.Duration(time.Second)},
			Exit:  &script.ExitSpec{After: script.Duration(3 * time.Second), Code: 1},
		},
		{
			Match: script.ContainerMatch{Name: "app", MinAttempt: &one},
			Logs:  &script.LogSpec{Lines: []string{"second {n}"}, Every: script.Duration(time.Second)},
		},
	}}
	w := newWorld(t, script)
	var logs bytes.Buffer
	w.runUntil(2 * time.Second)
	err := w.agent.ContainerLogs(w.ctx, "default", "web-node-a", "app", &corev1.PodLogOptions{Previous: true}, &logs)
	if !errors.Is(err, server.ErrNotFound) || !strings.Contains(err.Error(), `previous terminated container "app" in pod "web-node-a" not found`) {
		t.Fatalf("previous logs of a first attempt: %v", err)
	}
	w.runUntil(40 * time.Second)
	if err := w.agent.ContainerLogs(w.ctx, "default", "web-node-a", "app", &corev1.PodLogOptions{Previous: true}, &logs); err != nil {
		t.Fatal(err)
	}
	if got := logs.String(); got != "first 1\nfirst 2\nfirst 3\n" {
		t.Fatalf("previous logs %q", got)
	}
	logs.Reset()
	if err := w.agent.ContainerLogs(w.ctx, "default", "web-node-a", "app", nil, &logs); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(logs.String(), "second 1\n") {
		t.Fatalf("current logs %q", logs.String())
	}
}

// gatesOf parses cfg's feature gates, as the agent's caller does once.
func gatesOf(t testing.TB, cfg *v1beta1.OrchletConfiguration) *featuregates.Gates {
	t.Helper()
	g, err := featuregates.New(cfg.FeatureGates)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// --topology-manager-policy=single-numa-node refuses, through the agent's admission, a pod whose
// exclusive CPUs no NUMA node holds alone, with the kubelet's TopologyAffinityError.
func TestTopologyManagerRefusesAtAdmission(t *testing.T) {
	topology := &cpumanager.Topology{CPUs: []cpumanager.CPUInfo{
		{ID: 0, Core: 0, NUMANode: 0}, {ID: 1, Core: 1, NUMANode: 0}, {ID: 2, Core: 2, NUMANode: 1}, {ID: 3, Core: 3, NUMANode: 1},
	}}
	w := newWorldDeps(t, nil, func(d *Deps) {
		d.RootDir = t.TempDir()
		d.CPUTopology = func() (*cpumanager.Topology, error) { return topology, nil }
	}, func(c *v1beta1.OrchletConfiguration) {
		c.CPUManagerPolicy, c.ReservedSystemCPUs, c.TopologyManagerPolicy = "static", "0", "single-numa-node"
	})
	w.fs["etc/orch/manifests/db.yaml"] = &fstest.MapFile{Data: []byte(`apiVersion: v1
kind: Pod
metadata: {name: db}
spec:
  containers:
  - name: db
    image: busybox:1.36
    imagePullPolicy: IfNotPresent
    resources: {limits: {cpu: "3", memory: 1Gi}}
`)}
	w.runUntil(5 * time.Second)
	p, ok := w.pod("db-node-a")
	if !ok || p.Status.Phase != corev1.PodFailed || p.Status.Reason != "TopologyAffinityError" || p.Status.Message != "Resources cannot be allocated with Topology locality" {
		t.Fatalf("db: %v %s %s %q, want Failed TopologyAffinityError", ok, p.Status.Phase, p.Status.Reason, p.Status.Message)
	}
	if web, ok := w.pod("web-node-a"); !ok || web.Status.Phase != corev1.PodRunning {
		t.Errorf("web (no exclusive CPUs) %v %s, want Running", ok, web.Status.Phase)
	}
}

// twoNUMAWorld is an agent on two NUMA nodes of two CPUs and 2Gi each, with the Static memory
// manager under single-numa-node keeping 128Mi of each node, its CPU manager as cpus sets it.
func twoNUMAWorld(t *testing.T, root string, cpus func(*v1beta1.OrchletConfiguration)) *world {
	t.Helper()
	topology := &cpumanager.Topology{CPUs: []cpumanager.CPUInfo{
		{ID: 0, Core: 0, NUMANode: 0}, {ID: 1, Core: 1, NUMANode: 0}, {ID: 2, Core: 2, NUMANode: 1}, {ID: 3, Core: 3, NUMANode: 1},
	}}
	return newWorldDeps(t, nil, func(d *Deps) {
		d.RootDir = root
		d.CPUTopology = func() (*cpumanager.Topology, error) { return topology, nil }
		d.NUMANodes = func() ([]memorymanager.Node, error) {
			return []memorymanager.Node{{ID: 0, Memory: 2 << 30}, {ID: 1, Memory: 2 << 30}}, nil
		}
		d.Reservation = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("256Mi")}
	}, func(c *v1beta1.OrchletConfiguration) {
		c.TopologyManagerPolicy, c.MemoryManagerPolicy = "single-numa-node", "Static"
		c.ReservedMemory = []v1beta1.MemoryReservation{
			{NumaNode: 0, Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("128Mi")}},
			{NumaNode: 1, Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("128Mi")}},
		}
		cpus(c)
	})
}

// runGuaranteed gives the agent a Guaranteed pod of one CPU for each name with its memory (read
// in the names' order), runs it 5 s and wants the pod big refused with TopologyAffinityError,
// which it answers.
func runGuaranteed(t *testing.T, w *world, memory map[string]string) corev1.Pod {
	t.Helper()
	for name, m := range memory {
		w.fs["etc/orch/manifests/"+name+".yaml"] = &fstest.MapFile{Data: []byte(`apiVersion: v1
kind: Pod
metadata: {name: ` + name + `}
spec:
  containers:
  - name: app
    image: busybox:1.36
    imagePullPolicy: IfNotPresent
    resources: {limits: {cpu: "1", memory: ` + m + `}}
`)}
	}
	w.runUntil(5 * time.Second)
	p, ok := w.pod("big-node-a")
	if !ok || p.Status.Phase != corev1.PodFailed || p.Status.Reason != "TopologyAffinityError" || p.Status.Message != "Resources cannot be allocated with Topology locality" {
		t.Fatalf("big: %v %s %s %q, want Failed TopologyAffinityError", ok, p.Status.Phase, p.Status.Reason, p.Status.Message)
	}
	return p
}

// --memory-manager-policy=Static beside the static CPU manager under single-numa-node, on two NUMA
// nodes of 2Gi: a Guaranteed pod whose memory no node holds alone is refused with the kubelet's
// TopologyAffinityError; one that fits is created with cpuset.mems of the node its memory and CPU
// came from, as <root-dir>/memory_manager_state records.
func TestStaticMemoryManager(t *testing.T) {
	root := t.TempDir()
	w := twoNUMAWorld(t, root, func(c *v1beta1.OrchletConfiguration) { c.CPUManagerPolicy, c.ReservedSystemCPUs = "static", "0" })
	p := runGuaranteed(t, w, map[string]string{"big": "3Gi", "db": "1Gi"})
	c, err := w.agent.container(w.ctx, "default", "db-node-a", "app")
	if err != nil {
		t.Fatal(err)
	}
	st, err := w.agent.runtime.ContainerStatus(w.ctx, c.Id, false)
	if err != nil {
		t.Fatal(err)
	}
	linux := st.GetStatus().GetResources().GetLinux()
	// CPU 0 is reserved, so node 1's CPUs and memory are the narrowest fit left of node 0's one.
	if linux.GetCpusetMems() == "" || linux.GetCpusetCpus() == "" {
		t.Fatalf("db's cpuset %q mems %q", linux.GetCpusetCpus(), linux.GetCpusetMems())
	}
	data, err := os.ReadFile(filepath.Join(root, memorymanager.StateFile))
	want := `{"app":[{"numaAffinity":[` + linux.GetCpusetMems() + `],"type":"memory","size":1073741824}]}`
	if err != nil || !strings.Contains(string(data), want) || !strings.Contains(string(data), `"policyName":"Static"`) {
		t.Fatalf("checkpoint %s, %v; want %s", data, err, want)
	}
	if strings.Contains(string(data), string(p.UID)) {
		t.Errorf("the refused pod's memory is still assigned: %s", data)
	}
	cpus := map[string]string{"0": "1", "1": "2"}[linux.GetCpusetMems()]
	if linux.GetCpusetCpus() != cpus {
		t.Errorf("db's CPUs %q and memory nodes %q are not aligned", linux.GetCpusetCpus(), linux.GetCpusetMems())
	}
}

// The topology manager is an admit handler of its own, not the CPU manager's: under
// single-numa-node with --memory-manager-policy=Static and the CPU manager's none policy, as the
// kubelet, a Guaranteed pod whose memory one NUMA node holds is admitted with that node's
// cpuset.mems, a second is placed on the other node, and one whose memory no node holds alone is
// refused with TopologyAffinityError; the CPUs stay the runtime's (no exclusive CPUs).
func TestTopologyManagerWithoutStaticCPUManager(t *testing.T) {
	w := twoNUMAWorld(t, t.TempDir(), func(c *v1beta1.OrchletConfiguration) { c.CPUManagerPolicy = "none" })
	if w.agent.CPUs.Static() || w.agent.Topology == nil {
		t.Fatalf("CPU manager static %v, topology manager %v: want the none CPU policy and a topology manager", w.agent.CPUs.Static(), w.agent.Topology)
	}
	runGuaranteed(t, w, map[string]string{"big": "3Gi", "cache": "1500Mi", "db": "1500Mi"})
	mems := map[string]bool{}
	for _, name := range []string{"db", "cache"} {
		c, err := w.agent.container(w.ctx, "default", name+"-node-a", "app")
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		st, err := w.agent.runtime.ContainerStatus(w.ctx, c.Id, false)
		if err != nil {
			t.Fatal(err)
		}
		linux := st.GetStatus().GetResources().GetLinux()
		if m := linux.GetCpusetMems(); m != "0" && m != "1" {
			t.Errorf("%s's cpuset.mems %q, want one NUMA node", name, m)
		} else {
			mems[m] = true
		}
		if linux.GetCpusetCpus() != "" {
			t.Errorf("%s's cpuset %q under the none CPU policy, want the runtime's", name, linux.GetCpusetCpus())
		}
	}
	if len(mems) != 2 {
		t.Errorf("db and cache on NUMA nodes %v, want one each (1500Mi twice is more than a node's 1920Mi)", mems)
	}
	// The topology manager refused big before the memory manager allocated for it: two pinning
	// requests, no error, as the kubelet counts them.
	reg := prometheus.NewRegistry()
	reg.MustRegister(w.agent.Memory)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, mf := range mfs {
		got[mf.GetName()] = mf.GetMetric()[0].GetCounter().GetValue()
	}
	if got["orchlet_memory_manager_pinning_requests_total"] != 2 || got["orchlet_memory_manager_pinning_errors_total"] != 0 {
		t.Errorf("pinning metrics %v, want 2 requests and no error", got)
	}
}

// Static memory needs the machine's NUMA nodes, a topology policy aligning it the machine's
// layout, and the topology manager known options: each refused at start by name.
func TestStaticMemoryManagerRefusals(t *testing.T) {
	for _, tc := range []struct {
		name string
		deps func(*Deps)
		cfg  func(*v1beta1.OrchletConfiguration)
		want string
	}{
		{"no NUMA nodes", func(d *Deps) { d.RootDir = t.TempDir() }, func(c *v1beta1.OrchletConfiguration) { c.MemoryManagerPolicy = "Static" },
			"--memory-manager-policy=Static: the machine's NUMA nodes are unknown"},
		{"topology policy on an unknown layout", func(d *Deps) {
			d.RootDir = t.TempDir()
			d.NUMANodes = func() ([]memorymanager.Node, error) { return []memorymanager.Node{{ID: 0, Memory: 1 << 30}}, nil }
			d.Reservation = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("128Mi")}
		}, func(c *v1beta1.OrchletConfiguration) {
			c.MemoryManagerPolicy, c.TopologyManagerPolicy = "Static", "restricted"
			c.ReservedMemory = []v1beta1.MemoryReservation{{NumaNode: 0, Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("128Mi")}}}
		},
			"--topology-manager-policy=restricted: the machine's NUMA nodes are unknown"},
		{"an unknown topology policy option, whatever the managers", func(d *Deps) {}, func(c *v1beta1.OrchletConfiguration) {
			c.TopologyManagerPolicyOptions = map[string]string{"no-such": "1"}
		},
			`--topology-manager-policy-options (topologyManagerPolicyOptions): unknown Topology Manager Policy option: "no-such"`},
	} {
		w := newWorld(t, nil)
		cfg := v1beta1.NewDefault()
		tc.cfg(cfg)
		d := Deps{Clock: w.mock, NodeName: "node-a", Runtime: w.agent.runtime, Images: w.agent.images,
			Sink: events.NewLogSink(w.log), Logger: klog.Background(), Gates: gatesOf(t, cfg)}
		tc.deps(&d)
		if _, err := New(cfg, d); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}
