//go:build e2e && (benchnode || benchstreams)

// `make bench-node`: issue 13's speed figures, orchlet side by side with Kubernetes' kubelet (built
// by `make peers`, given in ORCH_PEER_KUBELET) on one containerd started for the run. It needs
// root, containerd, runc and busybox-static, so it builds only under -tags e2e,benchnode.

package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	cri "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"orch.io/orch/components/orchlet/app/apptest"
	"orch.io/orch/components/orchlet/pods"
)

const (
	benchNode     = "node-bench"
	benchSingles  = 7   // single-pod samples per run
	benchPods     = 100 // pods written at once
	benchCPUOver  = 60 * time.Second
	benchClockTck = 100 // USER_HZ: /proc's utime and stime are in 1/100 s on Linux
)

// benchRun is what one run of one agent measured.
type benchRun struct {
	singles  []time.Duration // manifest written to its container Running, per sample
	hundred  time.Duration   // 100 manifests written to all 100 containers Running
	idleRSS  int64           // bytes, before any pod
	fullRSS  int64           // bytes, 100 pods running
	cpuShare float64         // cores used over benchCPUOver at 100 pods
	// Over the 100-pod burst: the machine's busy CPU (every process, every core) and the agent's
	// own. What is left is the runtime's (containerd, its shims and runc) and the bench's polling:
	// when busy approaches the cores times the wall time, the runtime bounds the burst, not the agent.
	burstBusy, burstAgent time.Duration
	// burstRuntime is containerd's CPU over the burst with every shim and runc it started (a
	// cgroup of its own); the containers' own processes join cgroups of their own and are not in it.
	burstRuntime time.Duration
	burstBench   time.Duration // this test's own polling of the runtime
}

// benchAgent is an agent under measurement: both take the same flags, named the same.
type benchAgent struct{ name, bin string }

// TestBenchNode runs each agent twice, alternating (orchlet, kubelet, orchlet, kubelet), on the
// same containerd, with the same flags and static busybox pods on the host network, and prints
// each run's figures, the figures over both runs and the ratios orchlet/kubelet against the
// issue's targets. "Running" is read from the runtime's side for both agents: the container in
// state CONTAINER_RUNNING in a CRI ListContainers through containerd's socket.
func TestBenchNode(t *testing.T) {
	kubelet := os.Getenv("ORCH_PEER_KUBELET")
	if kubelet == "" {
		t.Fatal("ORCH_PEER_KUBELET: the path of Kubernetes' kubelet (make bench-node builds it with make peers)")
	}
	if _, err := os.Stat(kubelet); err != nil {
		t.Fatalf("ORCH_PEER_KUBELET: %v", err)
	}
	ctd := startContainerd(t)
	runtimeCPU := cgroupCPU(t, "orch-bench-runtime", ctd.cmd.Process.Pid)
	endpoint := "unix://" + ctd.sock
	rs := connectBenchRuntime(t, endpoint, removeBenchPodLogs)

	agents := []benchAgent{{"orchlet", binary}, {"kubelet", kubelet}}
	runs := map[string][]benchRun{}
	for round := 1; round <= 2; round++ {
		for _, a := range agents {
			r := runBenchAgent(t, endpoint, rs, a, runtimeCPU)
			t.Logf("%s run %d: one pod %v (median of %v); %d pods %v (machine CPU busy %v over %d cores, containerd with its shims and runc %v, the agent %v, this bench %v); RSS idle %.1f MiB, at %d pods %.1f MiB; CPU at %d pods %.1f%% of a core",
				a.name, round, median(r.singles), roundAll(r.singles), benchPods, r.hundred.Round(time.Millisecond),
				r.burstBusy.Round(time.Millisecond), runtime.NumCPU(), r.burstRuntime.Round(time.Millisecond), r.burstAgent.Round(time.Millisecond), r.burstBench.Round(time.Millisecond),
				mib(r.idleRSS), benchPods, mib(r.fullRSS), benchPods, 100*r.cpuShare)
			runs[a.name] = append(runs[a.name], r)
		}
	}

	type figure struct {
		name, unit string
		of         func(rs []benchRun) float64
		target     float64 // the bound on orchlet/kubelet
	}
	meanOf := func(f func(benchRun) float64) func([]benchRun) float64 {
		return func(rs []benchRun) float64 {
			s := 0.0
			for _, r := range rs {
				s += f(r)
			}
			return s / float64(len(rs))
		}
	}
	figures := []figure{
		{"one pod to Running (median)", "s", func(rs []benchRun) float64 {
			var all []time.Duration
			for _, r := range rs {
				all = append(all, r.singles...)
			}
			return median(all).Seconds()
		}, 1},
		{fmt.Sprintf("%d pods to all Running (mean)", benchPods), "s", meanOf(func(r benchRun) float64 { return r.hundred.Seconds() }), 2.0 / 3},
		{fmt.Sprintf("machine CPU busy in the %d-pod burst", benchPods), "s", meanOf(func(r benchRun) float64 { return r.burstBusy.Seconds() }), 0},
		{fmt.Sprintf("runtime's CPU in the %d-pod burst", benchPods), "s", meanOf(func(r benchRun) float64 { return r.burstRuntime.Seconds() }), 0},
		{fmt.Sprintf("the agent's CPU in the %d-pod burst", benchPods), "s", meanOf(func(r benchRun) float64 { return r.burstAgent.Seconds() }), 0},
		{"runtime-bound floor of the burst", "s", meanOf(func(r benchRun) float64 {
			return (r.burstBusy - r.burstAgent - r.burstBench).Seconds() / float64(runtime.NumCPU())
		}), 0},
		{"RSS idle (mean)", "MiB", meanOf(func(r benchRun) float64 { return mib(r.idleRSS) }), 0},
		{fmt.Sprintf("RSS at %d pods (mean)", benchPods), "MiB", meanOf(func(r benchRun) float64 { return mib(r.fullRSS) }), 0.5},
		{fmt.Sprintf("CPU at %d pods over %v (mean)", benchPods, benchCPUOver), "% of a core", meanOf(func(r benchRun) float64 { return 100 * r.cpuShare }), 0.5},
	}
	var report strings.Builder
	fmt.Fprintf(&report, "%-36s %12s %12s %8s  %s\n", "figure", "orchlet", "kubelet", "ratio", "target")
	for _, f := range figures {
		o, k := f.of(runs["orchlet"]), f.of(runs["kubelet"])
		verdict := "-"
		if f.target > 0 {
			verdict = fmt.Sprintf("<= %.2f: not met", f.target)
			if o/k <= f.target {
				verdict = fmt.Sprintf("<= %.2f: met", f.target)
			}
		}
		fmt.Fprintf(&report, "%-36s %8.2f %-3s %8.2f %-3s %8.2f  %s\n", f.name, o, unitShort(f.unit), k, unitShort(f.unit), o/k, verdict)
	}
	t.Logf("orchlet and kubelet on containerd, each run twice alternating:\n%s", report.String())
}

func unitShort(u string) string {
	if u == "% of a core" {
		return "%"
	}
	return u
}

// runBenchAgent starts the agent with a root, cert and manifest directory of its own, measures
// it, stops it and clears the runtime and the pod logs for the next run.
func runBenchAgent(t *testing.T, endpoint string, rs cri.RuntimeService, a benchAgent, runtimeCPU func() time.Duration) benchRun {
	t.Helper()
	dir := t.TempDir()
	manifests, staging := filepath.Join(dir, "manifests"), filepath.Join(dir, "staging")
	for _, d := range []string{manifests, staging} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	healthz := apptest.FreePort(t)
	logFile, err := os.Create(filepath.Join(dir, a.name+".log"))
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	cmd := exec.Command(a.bin,
		"--container-runtime-endpoint="+endpoint, "--pod-manifest-path="+manifests,
		"--hostname-override="+benchNode, "--root-dir="+filepath.Join(dir, "root"), "--cert-dir="+filepath.Join(dir, "certs"),
		"--fail-swap-on=false", "--cgroups-per-qos=false", "--enforce-node-allocatable=", "--cgroup-driver=cgroupfs",
		"--file-check-frequency=20s", // both agents' fallback poll; both watch the directory with inotify
		"--address=127.0.0.1", "--port="+apptest.FreePort(t), "--read-only-port=0",
		"--healthz-bind-address=127.0.0.1", "--healthz-port="+healthz)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	}
	defer func() {
		stop()
		// The kubelet bind-mounts its root directory onto itself (rshared) and leaves it so.
		for _, m := range mountsUnder(dir) {
			if err := syscall.Unmount(m, syscall.MNT_DETACH); err != nil {
				t.Errorf("unmounting %s left by %s: %v", m, a.name, err)
			}
		}
		if t.Failed() {
			log, _ := os.ReadFile(logFile.Name())
			t.Logf("%s log (last 8000 bytes):\n%s", a.name, tail(log, 8000))
		}
	}()
	pid := cmd.Process.Pid

	client := &http.Client{Timeout: time.Second}
	benchWait(t, a.name+" healthy", 60*time.Second, 50*time.Millisecond, func() bool {
		resp, err := client.Get("http://127.0.0.1:" + healthz + "/healthz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	// Settle: both agents do housekeeping at start (garbage collection, the first relists).
	time.Sleep(15 * time.Second)
	var r benchRun
	r.idleRSS = rss(t, pid)

	// (a) One manifest at a time, the previous one still running, at irregular spacing so that no
	// sample is in phase with a periodic loop.
	for i := 0; i < benchSingles; i++ {
		name := fmt.Sprintf("single%d", i)
		start := placeManifests(t, staging, manifests, []string{name})
		benchWait(t, a.name+": "+name+" Running", 60*time.Second, 5*time.Millisecond, func() bool {
			return len(runningNamed(t, rs, name)) == 1
		})
		r.singles = append(r.singles, time.Since(start))
		time.Sleep(time.Duration(700+137*i) * time.Millisecond)
	}
	// The single pods go, so that the next figures are at exactly 100 pods.
	for i := 0; i < benchSingles; i++ {
		if err := os.Remove(filepath.Join(manifests, fmt.Sprintf("single%d.yaml", i))); err != nil {
			t.Fatal(err)
		}
	}
	benchWait(t, a.name+": the single pods' containers stopped", 60*time.Second, 100*time.Millisecond, func() bool {
		return len(runningNamed(t, rs, "single")) == 0
	})

	// (b) 100 manifests at once.
	names := make([]string, benchPods)
	for i := range names {
		names[i] = fmt.Sprintf("pod%03d", i)
	}
	busy0, agent0, runtime0, bench0 := machineBusy(t), cpuTicks(t, pid), runtimeCPU(), selfCPU(t)
	start := placeManifests(t, staging, manifests, names)
	benchWait(t, fmt.Sprintf("%s: %d pods Running", a.name, benchPods), 5*time.Minute, 50*time.Millisecond, func() bool {
		return len(runningNamed(t, rs, "pod")) == benchPods
	})
	r.hundred = time.Since(start)
	r.burstBusy = machineBusy(t) - busy0
	r.burstRuntime = runtimeCPU() - runtime0
	r.burstBench = selfCPU(t) - bench0
	r.burstAgent = time.Duration(cpuTicks(t, pid)-agent0) * time.Second / benchClockTck

	// (c) and (d): RSS once settled at 100 pods, then CPU over a steady minute.
	time.Sleep(10 * time.Second)
	r.fullRSS = rss(t, pid)
	t0, c0 := time.Now(), cpuTicks(t, pid)
	time.Sleep(benchCPUOver)
	c1, t1 := cpuTicks(t, pid), time.Now()
	r.cpuShare = float64(c1-c0) / benchClockTck / t1.Sub(t0).Seconds()
	if n := len(runningNamed(t, rs, "pod")); n != benchPods {
		t.Fatalf("%s: %d of %d pods running at the end of the CPU window", a.name, n, benchPods)
	}

	stop()
	clearRuntime(t, rs)
	removeBenchPodLogs()
	return r
}

// connectBenchRuntime connects to the bench's containerd; at the end it clears the runtime, the
// pod logs removeLogs removes, and /var/log/pods itself when the bench made it.
func connectBenchRuntime(t *testing.T, endpoint string, removeLogs func()) cri.RuntimeService {
	t.Helper()
	rs, _, err := pods.Connect(context.Background(), endpoint, "", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	_, statErr := os.Stat(e2ePodsDir)
	t.Cleanup(func() {
		clearRuntime(t, rs)
		removeLogs()
		if os.IsNotExist(statErr) {
			_ = os.Remove(e2ePodsDir)
		}
	})
	return rs
}

// placeManifests writes each pod's manifest into staging, then renames them all into the manifest
// directory (a rename is atomic: no agent reads half a file), and answers when the first rename was.
func placeManifests(t *testing.T, staging, manifests string, names []string) time.Time {
	t.Helper()
	for _, n := range names {
		m := fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: %s}
spec:
  hostNetwork: true
  terminationGracePeriodSeconds: 2
  containers:
  - {name: %s, image: %s, imagePullPolicy: IfNotPresent, command: [sleep, "3600"]}
`, n, n, e2eImage)
		if err := os.WriteFile(filepath.Join(staging, n+".yaml"), []byte(m), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	start := time.Now()
	for _, n := range names {
		if err := os.Rename(filepath.Join(staging, n+".yaml"), filepath.Join(manifests, n+".yaml")); err != nil {
			t.Fatal(err)
		}
	}
	return start
}

// runningNamed lists the running containers whose name begins with prefix, from the runtime.
func runningNamed(t *testing.T, rs cri.RuntimeService, prefix string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ctrs, err := rs.ListContainers(ctx, &runtimeapi.ContainerFilter{State: &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING}})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, c := range ctrs {
		if strings.HasPrefix(c.Metadata.Name, prefix) {
			out = append(out, c.Metadata.Name)
		}
	}
	return out
}

// clearRuntime stops and removes every sandbox, 8 at a time, and checks none is left.
func clearRuntime(t *testing.T, rs cri.RuntimeService) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sbs, err := rs.ListPodSandbox(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, s := range sbs {
		ids = append(ids, s.Id)
	}
	apptest.RemoveSandboxes(ctx, rs, ids)
	if left, err := rs.ListPodSandbox(ctx, nil); err != nil || len(left) > 0 {
		t.Fatalf("after clearing the runtime: %d sandboxes left (%v)", len(left), err)
	}
}

// removeBenchPodLogs removes the log directories the runs' pods left under /var/log/pods.
func removeBenchPodLogs() {
	dirs, _ := filepath.Glob(filepath.Join(e2ePodsDir, "default_*-"+benchNode+"_*"))
	for _, d := range dirs {
		_ = os.RemoveAll(d)
	}
}

func benchWait(t *testing.T, what string, within, every time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, within)
		}
		time.Sleep(every)
	}
}

// rss is the process's resident set in bytes (VmRSS of /proc/<pid>/status).
func rss(t *testing.T, pid int) int64 {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(data), "\n") {
		if f := strings.Fields(l); len(f) == 3 && f[0] == "VmRSS:" && f[2] == "kB" {
			kb, err := strconv.ParseInt(f[1], 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb * 1024
		}
	}
	t.Fatalf("no VmRSS in /proc/%d/status", pid)
	return 0
}

// cpuTicks is the process's utime+stime, all threads, from /proc/<pid>/stat (fields 14 and 15;
// the command name, field 2, may hold spaces, so fields are counted after its closing parenthesis).
func cpuTicks(t *testing.T, pid int) int64 {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	s := string(data)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	// f[0] is field 3 (state): utime is field 14, stime 15.
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		t.Fatalf("/proc/%d/stat: %q", pid, s)
	}
	return utime + stime
}

// cgroupCPU moves pid into a CPU-accounting cgroup of its own, named name (cgroup v2, or v1's
// cpuacct hierarchy), whose processes' children stay in it, and answers a reader of the CPU time
// spent in it. The cgroup is removed at the end of the test.
func cgroupCPU(t *testing.T, name string, pid int) func() time.Duration {
	t.Helper()
	dir, stat := filepath.Join("/sys/fs/cgroup", name), "cpu.stat"
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err != nil {
		dir, stat = filepath.Join("/sys/fs/cgroup/cpuacct", name), "cpuacct.usage"
	}
	if err := os.Mkdir(dir, 0o755); err != nil && !os.IsExist(err) {
		t.Fatalf("a cgroup to count the runtime's CPU: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0o644); err != nil {
		t.Fatalf("moving containerd into %s: %v", dir, err)
	}
	t.Cleanup(func() {
		// containerd may still run (cleanups run last first): its processes go back to the root.
		procs, _ := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
		for _, p := range strings.Fields(string(procs)) {
			_ = os.WriteFile(filepath.Join(filepath.Dir(dir), "cgroup.procs"), []byte(p), 0o644)
		}
		if err := os.Remove(dir); err != nil {
			t.Errorf("removing the runtime's cgroup: %v", err)
		}
	})
	return func() time.Duration {
		data, err := os.ReadFile(filepath.Join(dir, stat))
		if err != nil {
			t.Fatal(err)
		}
		if stat == "cpuacct.usage" {
			ns, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
			if err != nil {
				t.Fatalf("%s: %q", stat, data)
			}
			return time.Duration(ns)
		}
		for _, l := range strings.Split(string(data), "\n") {
			if f := strings.Fields(l); len(f) == 2 && f[0] == "usage_usec" {
				us, err := strconv.ParseInt(f[1], 10, 64)
				if err != nil {
					t.Fatalf("%s: %q", stat, l)
				}
				return time.Duration(us) * time.Microsecond
			}
		}
		t.Fatalf("no usage_usec in %s", filepath.Join(dir, stat))
		return 0
	}
}

// selfCPU is this process's user and system time.
func selfCPU(t *testing.T) time.Duration {
	t.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// machineBusy is the CPU time every core has spent not idle since boot (the "cpu" line of
// /proc/stat less idle and iowait; steal is left in: it is time the machine was not ours).
func machineBusy(t *testing.T) time.Duration {
	t.Helper()
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		t.Fatal(err)
	}
	line, _, _ := strings.Cut(string(data), "\n")
	f := strings.Fields(line)
	if len(f) < 6 || f[0] != "cpu" {
		t.Fatalf("/proc/stat: %q", line)
	}
	var busy int64
	for i, v := range f[1:] {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			t.Fatalf("/proc/stat: %q", line)
		}
		if i != 3 && i != 4 && i < 8 { // idle, iowait; guest times are already in user
			busy += n
		}
	}
	return time.Duration(busy) * time.Second / benchClockTck
}

func median(ds []time.Duration) time.Duration {
	s := append([]time.Duration{}, ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func roundAll(ds []time.Duration) []time.Duration {
	out := make([]time.Duration, len(ds))
	for i, d := range ds {
		out[i] = d.Round(time.Millisecond)
	}
	return out
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}
