//go:build e2e && benchstreams

// `make bench-streams`: reaching the pods, orch-apiserver and orchlet side by side with Kubernetes'
// kube-apiserver and kubelet v1.34 (built by `make peers`, given in ORCH_PEERS) on one containerd
// started for the run, measured with kubectl. It needs root, containerd, runc and busybox-static, so
// it builds only under -tags e2e,benchstreams (with benchnode's helpers: -tags e2e,benchnode,benchstreams).

package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/remotecommand"
	cri "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"

	"orch.io/orch/components/orchlet/app/apptest"
	"orch.io/orch/components/syncbuf"
)

const (
	streamsNode    = "node-streams"
	streamsPod     = "streams-bench" // exec, logs and idle streams
	streamsWebPod  = "streams-web"   // busybox httpd serving streamsPFBytes for port-forward
	streamsExecs   = 50
	streamsLines   = 50
	streamsPFBytes = 256 << 20
	streamsPFRuns  = 3
	streamsIdle    = 100 // idle exec streams held open for the memory figure
	streamsAdmin   = "bench-admin-token"
	streamsNodeTok = "bench-node-token"
	// streamsIdleArg marks the idle streams' processes, so that the bench counts them in the container.
	streamsIdleArg = "3597"
)

// streamsRun is what one run of one pair measured.
type streamsRun struct {
	kubectlExec []time.Duration // `kubectl exec -- true`, process start to exit
	clientExec  []time.Duration // the same exec through client-go's WebSocket executor, in this process
	// The floors under an exec's round trip that neither pair's servers take part in: kubectl
	// starting and exiting (`kubectl version --client`), and the runtime running `true` in the
	// container (a CRI ExecSync straight to containerd: runc exec).
	kubectlStart []time.Duration
	runtimeExec  []time.Duration
	logLines     []time.Duration // a line written to the container's stdout to `kubectl logs -f` printing it
	pfMiBps      []float64       // `kubectl port-forward`: MiB/s of an HTTP GET of streamsPFBytes
	// CPU time (user and system, all threads) each process spent over those GETs, per GET: on a
	// loaded machine the throughput follows the chain's CPU per byte, which this splits.
	pfCPU        pfCPU
	serverBefore int64 // the API server's RSS before the idle streams, bytes
	serverAfter  int64
	agentBefore  int64
	agentAfter   int64
	// The Go runtime's own view from each /metrics (the agent's through nodes/proxy), before and
	// after the idle streams: RSS also moves with what a process had freed but kept resident.
	serverGo, agentGo [2]goFigures
}

// pfCPU is the CPU time of the port-forward chain's processes per GET of streamsPFBytes.
type pfCPU struct{ server, agent, runtime, kubectl time.Duration }

// goFigures are a Go process's heap in use (bytes) and goroutines, from its /metrics.
type goFigures struct{ heap, goroutines float64 }

// streamsPair is an API server and a node agent registered to it, both running.
type streamsPair struct {
	name             string
	kubeconfig       string
	serverPID        int
	agentPID         int
	stop             func()
	serverLog, agLog *syncbuf.Buffer
}

// TestBenchStreams runs each pair twice, alternating (orch, Kubernetes, orch, Kubernetes), on the
// same containerd with the same pods, kubectl and options (webhook authentication and authorization
// of the API server's client certificate on the agent, as a careful operator sets a kubelet), and
// prints each run's figures and the ratios orch/Kubernetes against the targets.
func TestBenchStreams(t *testing.T) {
	peers := os.Getenv("ORCH_PEERS")
	if peers == "" {
		t.Fatal("ORCH_PEERS: the directory of Kubernetes' kube-apiserver and kubelet (make bench-streams builds them with make peers)")
	}
	kubectl := os.Getenv("KUBECTL")
	if kubectl == "" {
		kubectl = "kubectl"
	}
	if out, err := exec.Command(kubectl, "version", "--client").CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", kubectl, err, out)
	} else {
		t.Logf("kubectl: %s", strings.TrimSpace(string(out)))
	}
	bins := t.TempDir()
	for _, b := range []string{"orch-apiserver", "orchload"} {
		if out, err := exec.Command("go", "build", "-o", filepath.Join(bins, b), "../"+b).CombinedOutput(); err != nil {
			t.Fatalf("building %s: %v\n%s", b, err, out)
		}
	}
	pki := filepath.Join(t.TempDir(), "pki")
	if out, err := exec.Command("go", "run", "../internal/runpki", pki).CombinedOutput(); err != nil {
		t.Fatalf("runpki: %v\n%s", err, out)
	}

	ctd := startContainerd(t)
	endpoint := "unix://" + ctd.sock
	rs := connectBenchRuntime(t, endpoint, removeStreamsPodLogs)
	runtimePID := ctd.cmd.Process.Pid

	starts := []struct {
		name  string
		start func(t *testing.T) *streamsPair
	}{
		{"orch", func(t *testing.T) *streamsPair { return startOrchPair(t, bins, pki, endpoint) }},
		{"kubernetes", func(t *testing.T) *streamsPair { return startPeerPair(t, bins, peers, pki, endpoint) }},
	}
	runs := map[string][]streamsRun{}
	for round := 1; round <= 2; round++ {
		for _, s := range starts {
			if load, err := os.ReadFile("/proc/loadavg"); err == nil {
				t.Logf("%s run %d starts, the machine's load average: %s", s.name, round, strings.TrimSpace(string(load)))
			}
			p := s.start(t)
			r := runStreams(t, p, kubectl, rs, runtimePID)
			p.stop()
			clearRuntime(t, rs)
			removeStreamsPodLogs()
			t.Logf("%s run %d: kubectl exec p50 %v p99 %v (client-go exec p50 %v p99 %v; kubectl's start p50 %v, the runtime's exec p50 %v); logs -f line p50 %v p99 %v; port-forward %.0f MiB/s (%v), CPU per GET: API server %v, agent %v, containerd %v, kubectl %v; %d idle streams: API server RSS %.1f -> %.1f MiB, agent %.1f -> %.1f MiB",
				s.name, round, pct(r.kubectlExec, 50), pct(r.kubectlExec, 99), pct(r.clientExec, 50), pct(r.clientExec, 99),
				pct(r.kubectlStart, 50), pct(r.runtimeExec, 50),
				pct(r.logLines, 50), pct(r.logLines, 99), medianF(r.pfMiBps), roundF(r.pfMiBps),
				r.pfCPU.server.Round(time.Millisecond), r.pfCPU.agent.Round(time.Millisecond), r.pfCPU.runtime.Round(time.Millisecond), r.pfCPU.kubectl.Round(time.Millisecond), streamsIdle,
				mib(r.serverBefore), mib(r.serverAfter), mib(r.agentBefore), mib(r.agentAfter))
			runs[s.name] = append(runs[s.name], r)
		}
	}

	all := func(name string, f func(streamsRun) []time.Duration) []time.Duration {
		var ds []time.Duration
		for _, r := range runs[name] {
			ds = append(ds, f(r)...)
		}
		return ds
	}
	perStream := func(name string, server bool) float64 {
		s := 0.0
		for _, r := range runs[name] {
			if server {
				s += float64(r.serverAfter-r.serverBefore) / streamsIdle
			} else {
				s += float64(r.agentAfter-r.agentBefore) / streamsIdle
			}
		}
		return s / float64(len(runs[name])) / 1024
	}
	goPer := func(name string, server bool, f func(goFigures) float64) float64 {
		s := 0.0
		for _, r := range runs[name] {
			g := r.agentGo
			if server {
				g = r.serverGo
			}
			s += (f(g[1]) - f(g[0])) / streamsIdle
		}
		return s / float64(len(runs[name]))
	}
	cpuOf := func(name string, f func(pfCPU) time.Duration) float64 {
		var s time.Duration
		for _, r := range runs[name] {
			s += f(r.pfCPU)
		}
		return float64(s.Milliseconds()) / float64(len(runs[name]))
	}
	heap := func(g goFigures) float64 { return g.heap / 1024 }
	goroutines := func(g goFigures) float64 { return g.goroutines }
	pfOf := func(name string) float64 {
		var all []float64
		for _, r := range runs[name] {
			all = append(all, r.pfMiBps...)
		}
		return medianF(all)
	}
	type figure struct {
		name, unit string
		orch, kube float64
		target     string
		met        func(ratio float64) bool
	}
	cpu := func(name string, f func(pfCPU) time.Duration) figure {
		return figure{name: name, unit: "ms", orch: cpuOf("orch", f), kube: cpuOf("kubernetes", f), target: "-"}
	}
	lat := func(name string, f func(streamsRun) []time.Duration, p int, target string, bound float64) figure {
		o, k := pct(all("orch", f), p), pct(all("kubernetes", f), p)
		fig := figure{name: name, unit: "ms", orch: float64(o.Microseconds()) / 1000, kube: float64(k.Microseconds()) / 1000, target: target}
		if bound > 0 {
			fig.met = func(r float64) bool { return r <= bound }
		}
		return fig
	}
	exe := func(r streamsRun) []time.Duration { return r.kubectlExec }
	cli := func(r streamsRun) []time.Duration { return r.clientExec }
	logs := func(r streamsRun) []time.Duration { return r.logLines }
	figures := []figure{
		lat("kubectl exec -- true, p50", exe, 50, "<= 0.50", 0.5),
		lat("kubectl exec -- true, p99", exe, 99, "<= 0.50", 0.5),
		lat("client-go exec true, p50", cli, 50, "-", 0),
		lat("client-go exec true, p99", cli, 99, "-", 0),
		lat("floor: kubectl's start, p50", func(r streamsRun) []time.Duration { return r.kubectlStart }, 50, "-", 0),
		lat("floor: runtime exec true, p50", func(r streamsRun) []time.Duration { return r.runtimeExec }, 50, "-", 0),
		lat("logs -f line latency, p50", logs, 50, "<= 0.50", 0.5),
		lat("logs -f line latency, p99", logs, 99, "<= 0.50", 0.5),
		{name: "port-forward 256 MiB", unit: "MiB/s", orch: pfOf("orch"), kube: pfOf("kubernetes"), target: ">= 1.50", met: func(r float64) bool { return r >= 1.5 }},
		cpu("pf CPU/GET: API server", func(c pfCPU) time.Duration { return c.server }),
		cpu("pf CPU/GET: agent", func(c pfCPU) time.Duration { return c.agent }),
		cpu("pf CPU/GET: containerd", func(c pfCPU) time.Duration { return c.runtime }),
		cpu("pf CPU/GET: kubectl", func(c pfCPU) time.Duration { return c.kubectl }),
		{name: "API server RSS per stream", unit: "KiB", orch: perStream("orch", true), kube: perStream("kubernetes", true), target: "-"},
		{name: "agent RSS per stream", unit: "KiB", orch: perStream("orch", false), kube: perStream("kubernetes", false), target: "-"},
		{name: "API server heap per stream", unit: "KiB", orch: goPer("orch", true, heap), kube: goPer("kubernetes", true, heap), target: "-"},
		{name: "agent heap per stream", unit: "KiB", orch: goPer("orch", false, heap), kube: goPer("kubernetes", false, heap), target: "-"},
		{name: "API server goroutines/stream", unit: "", orch: goPer("orch", true, goroutines), kube: goPer("kubernetes", true, goroutines), target: "-"},
		{name: "agent goroutines per stream", unit: "", orch: goPer("orch", false, goroutines), kube: goPer("kubernetes", false, goroutines), target: "-"},
	}
	var report strings.Builder
	fmt.Fprintf(&report, "%-30s %14s %14s %8s  %s\n", "figure", "orch", "kubernetes", "ratio", "target")
	for _, f := range figures {
		ratio := f.orch / f.kube
		verdict := f.target
		if f.met != nil {
			verdict += map[bool]string{true: ": met", false: ": not met"}[f.met(ratio)]
		}
		fmt.Fprintf(&report, "%-30s %8.1f %-5s %8.1f %-5s %8.2f  %s\n", f.name, f.orch, f.unit, f.kube, f.unit, ratio, verdict)
	}
	t.Logf("orch-apiserver+orchlet and kube-apiserver+kubelet on containerd, each pair run twice alternating:\n%s", report.String())
}

// runStreams creates the two pods, waits for them Running and measures.
func runStreams(t *testing.T, p *streamsPair, kubectl string, rs cri.RuntimeService, runtimePID int) streamsRun {
	t.Helper()
	defer func() {
		if t.Failed() {
			t.Logf("%s API server log (tail):\n%s", p.name, tail([]byte(p.serverLog.String()), 6000))
			t.Logf("%s agent log (tail):\n%s", p.name, tail([]byte(p.agLog.String()), 8000))
		}
	}()
	cfg, err := clientcmd.BuildConfigFromFlags("", p.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	client := kubernetes.NewForConfigOrDie(cfg)
	ctx := context.Background()
	port := apptest.FreePort(t)
	for _, pod := range []*corev1.Pod{
		streamsPodSpec(streamsPod, []string{"sleep", "3600"}),
		// 256 MiB in the container's writable layer, then httpd serves it on the host network.
		streamsPodSpec(streamsWebPod, []string{"sh", "-c", fmt.Sprintf("mkdir -p /tmp/www && busybox head -c %d /dev/zero > /tmp/www/big && exec busybox httpd -f -p 127.0.0.1:%s -h /tmp/www", streamsPFBytes, port)}),
	} {
		if _, err := client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	benchWait(t, p.name+": the pods Running", 2*time.Minute, 100*time.Millisecond, func() bool {
		for _, name := range []string{streamsPod, streamsWebPod} {
			pod, err := client.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
			if err != nil || pod.Status.Phase != corev1.PodRunning {
				return false
			}
		}
		return true
	})
	benchWait(t, p.name+": httpd serving", time.Minute, 100*time.Millisecond, func() bool {
		resp, err := http.Head("http://127.0.0.1:" + port + "/big")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	kc := func(args ...string) *exec.Cmd {
		return exec.Command(kubectl, append([]string{"--kubeconfig=" + p.kubeconfig, "--namespace=default"}, args...)...)
	}
	var r streamsRun

	// (a) exec round trips: kubectl's, then client-go's in this process (what kubectl's own start costs).
	for i := -3; i < streamsExecs; i++ { // three to warm up
		start := time.Now()
		if out, err := kc("exec", streamsPod, "--", "true").CombinedOutput(); err != nil {
			t.Fatalf("%s: kubectl exec: %v\n%s", p.name, err, out)
		}
		if i >= 0 {
			r.kubectlExec = append(r.kubectlExec, time.Since(start))
		}
	}
	for i := -3; i < streamsExecs; i++ {
		start := time.Now()
		if err := execIn(ctx, cfg, client, []string{"true"}, nil); err != nil {
			t.Fatalf("%s: client-go exec: %v", p.name, err)
		}
		if i >= 0 {
			r.clientExec = append(r.clientExec, time.Since(start))
		}
	}

	for i := 0; i < streamsExecs; i++ {
		start := time.Now()
		if out, err := exec.Command(kubectl, "version", "--client").CombinedOutput(); err != nil {
			t.Fatalf("kubectl version --client: %v\n%s", err, out)
		}
		r.kubectlStart = append(r.kubectlStart, time.Since(start))
	}
	id := containerID(t, rs, streamsPod)
	for i := 0; i < streamsExecs; i++ {
		start := time.Now()
		if _, _, err := rs.ExecSync(ctx, id, []string{"true"}, 10*time.Second); err != nil {
			t.Fatalf("%s: the runtime's ExecSync: %v", p.name, err)
		}
		r.runtimeExec = append(r.runtimeExec, time.Since(start))
	}

	// (b) logs -f: a line written straight into the container's stdout (the pipe its runtime reads,
	// opened through /proc as root), timed until kubectl prints it.
	r.logLines = measureLogs(t, p, kc, rs)

	// (c) port-forward throughput of an HTTP GET of streamsPFBytes.
	local := apptest.FreePort(t)
	pf := kc("port-forward", "pod/"+streamsWebPod, local+":"+port)
	pfOut, err := pf.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	pf.Stderr = pf.Stdout
	if err := pf.Start(); err != nil {
		t.Fatal(err)
	}
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(pfOut)
		signalled := false
		for sc.Scan() {
			if !signalled && strings.HasPrefix(sc.Text(), "Forwarding from") {
				close(ready)
				signalled = true
			}
		}
	}()
	select {
	case <-ready:
	case <-time.After(30 * time.Second):
		t.Fatalf("%s: kubectl port-forward not forwarding within 30s", p.name)
	}
	pids := []int{p.serverPID, p.agentPID, runtimePID, pf.Process.Pid}
	ticks0 := make([]int64, len(pids))
	for i, pid := range pids {
		ticks0[i] = cpuTicks(t, pid)
	}
	for i := 0; i < streamsPFRuns; i++ {
		start := time.Now()
		resp, err := http.Get("http://127.0.0.1:" + local + "/big")
		if err != nil {
			t.Fatalf("%s: GET through port-forward: %v", p.name, err)
		}
		n, err := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if err != nil || n != streamsPFBytes {
			t.Fatalf("%s: GET through port-forward: %d of %d bytes: %v", p.name, n, streamsPFBytes, err)
		}
		r.pfMiBps = append(r.pfMiBps, float64(n)/(1<<20)/time.Since(start).Seconds())
	}
	perGET := make([]time.Duration, len(pids))
	for i, pid := range pids {
		perGET[i] = time.Duration(cpuTicks(t, pid)-ticks0[i]) * time.Second / benchClockTck / streamsPFRuns
	}
	r.pfCPU = pfCPU{server: perGET[0], agent: perGET[1], runtime: perGET[2], kubectl: perGET[3]}
	_ = pf.Process.Kill()
	_ = pf.Wait()

	// (d) memory per open idle exec stream (stdin open, nothing sent), in both servers.
	time.Sleep(3 * time.Second)
	r.serverBefore, r.agentBefore = rss(t, p.serverPID), rss(t, p.agentPID)
	r.serverGo[0], r.agentGo[0] = goMetrics(t, client, "/metrics"), goMetrics(t, client, "/api/v1/nodes/"+streamsNode+"/proxy/metrics")
	idleCtx, cancelIdle := context.WithCancel(ctx)
	var wg sync.WaitGroup
	var writers []*io.PipeWriter
	for i := 0; i < streamsIdle; i++ {
		pr, pw := io.Pipe()
		writers = append(writers, pw)
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = execIn(idleCtx, cfg, client, []string{"sleep", streamsIdleArg}, pr)
		}()
	}
	benchWait(t, fmt.Sprintf("%s: %d idle exec streams open", p.name, streamsIdle), 2*time.Minute, 200*time.Millisecond, func() bool {
		return len(processesWith("sleep\x00"+streamsIdleArg+"\x00")) >= streamsIdle
	})
	time.Sleep(5 * time.Second)
	r.serverAfter, r.agentAfter = rss(t, p.serverPID), rss(t, p.agentPID)
	r.serverGo[1], r.agentGo[1] = goMetrics(t, client, "/metrics"), goMetrics(t, client, "/api/v1/nodes/"+streamsNode+"/proxy/metrics")
	// client-go logs each cancelled stream's copy loop as an error: expected here, and noise.
	klog.SetOutput(io.Discard)
	klog.LogToStderr(false)
	cancelIdle()
	for _, w := range writers {
		w.Close()
	}
	wg.Wait()
	return r
}

// goMetrics reads go_memstats_heap_inuse_bytes and go_goroutines from the metrics at path.
func goMetrics(t *testing.T, client kubernetes.Interface, path string) goFigures {
	t.Helper()
	body, err := client.CoreV1().RESTClient().Get().AbsPath(path).DoRaw(context.Background())
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	var g goFigures
	for _, line := range strings.Split(string(body), "\n") {
		name, value, _ := strings.Cut(line, " ")
		v, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		switch {
		case err != nil:
		case name == "go_memstats_heap_inuse_bytes":
			g.heap = v
		case name == "go_goroutines":
			g.goroutines = v
		}
	}
	if g.heap == 0 || g.goroutines == 0 {
		t.Fatalf("GET %s: no go_memstats_heap_inuse_bytes or go_goroutines", path)
	}
	return g
}

// measureLogs follows the bench pod's log with kubectl and times streamsLines lines from their
// write into the container's stdout to kubectl printing them.
func measureLogs(t *testing.T, p *streamsPair, kc func(args ...string) *exec.Cmd, rs cri.RuntimeService) []time.Duration {
	t.Helper()
	pid := containerPID(t, rs, streamsPod)
	stdout, err := os.OpenFile(fmt.Sprintf("/proc/%d/fd/1", pid), os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer stdout.Close()
	follow := kc("logs", "-f", "--tail=0", streamsPod)
	stderr := &syncbuf.Buffer{}
	follow.Stderr = stderr
	out, err := follow.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := follow.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = follow.Process.Kill(); _ = follow.Wait() }()
	type seen struct {
		line string
		at   time.Time
	}
	lines := make(chan seen, 1024)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- seen{sc.Text(), time.Now()}
		}
		close(lines)
	}()
	// kubectl is following once a line written now reaches it.
	following := false
	for i := 0; i < 100 && !following; i++ {
		fmt.Fprintf(stdout, "warm-%d\n", i)
		select {
		case _, ok := <-lines:
			if !ok {
				t.Fatalf("%s: kubectl logs -f ended: %v\n%s", p.name, follow.Wait(), stderr.String())
			}
			following = true
		case <-time.After(300 * time.Millisecond):
		}
	}
	if !following {
		t.Fatalf("%s: kubectl logs -f printed nothing within 30s: %s", p.name, stderr.String())
	}
	time.Sleep(500 * time.Millisecond)
	for drained := false; !drained; {
		select {
		case _, ok := <-lines:
			if !ok {
				t.Fatalf("%s: kubectl logs -f ended: %v\n%s", p.name, follow.Wait(), stderr.String())
			}
		default:
			drained = true
		}
	}
	var ds []time.Duration
	for i := 0; i < streamsLines; i++ {
		want := fmt.Sprintf("line-%d", i)
		start := time.Now()
		fmt.Fprintln(stdout, want)
		deadline := time.After(10 * time.Second)
		for got := false; !got; {
			select {
			case s, ok := <-lines:
				if !ok {
					t.Fatalf("%s: kubectl logs -f ended: %v\n%s", p.name, follow.Wait(), stderr.String())
				}
				if s.line == want {
					ds = append(ds, s.at.Sub(start))
					got = true
				}
			case <-deadline:
				t.Fatalf("%s: %q not printed by kubectl logs -f within 10s", p.name, want)
			}
		}
		time.Sleep(time.Duration(50+37*(i%5)) * time.Millisecond) // out of phase with any periodic loop
	}
	return ds
}

// containerID is the id of the running container of pod (its only container). The pod's name is
// in a label whose key differs (io.orch.pod.name, io.kubernetes.pod.name); only the running
// pair's pods are in the runtime.
func containerID(t *testing.T, rs cri.RuntimeService, pod string) string {
	t.Helper()
	ctx := context.Background()
	all, err := rs.ListContainers(ctx, &runtimeapi.ContainerFilter{
		State: &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING},
	})
	var cs []*runtimeapi.Container
	for _, c := range all {
		for k, v := range c.Labels {
			if strings.HasSuffix(k, ".pod.name") && v == pod {
				cs = append(cs, c)
			}
		}
	}
	if err != nil || len(cs) != 1 {
		t.Fatalf("running containers of %s: %d (%v)", pod, len(cs), err)
	}
	return cs[0].Id
}

// containerPID is the process id of the running container of pod, from the runtime's verbose status.
func containerPID(t *testing.T, rs cri.RuntimeService, pod string) int {
	t.Helper()
	st, err := rs.ContainerStatus(context.Background(), containerID(t, rs, pod), true)
	if err != nil {
		t.Fatal(err)
	}
	var info struct {
		Pid int `json:"pid"`
	}
	if err := json.Unmarshal([]byte(st.Info["info"]), &info); err != nil || info.Pid == 0 {
		t.Fatalf("the pid in the runtime's status of %s: %v", pod, err)
	}
	return info.Pid
}

// execIn runs argv in the bench pod through the API server with client-go's WebSocket executor (as
// kubectl v1.30+ does), stdin from in when given, output discarded.
func execIn(ctx context.Context, cfg *rest.Config, client kubernetes.Interface, argv []string, in io.Reader) error {
	req := client.CoreV1().RESTClient().Post().Resource("pods").Namespace("default").Name(streamsPod).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{Command: argv, Stdin: in != nil, Stdout: true, Stderr: true}, scheme.ParameterCodec)
	e, err := remotecommand.NewWebSocketExecutor(cfg, "GET", req.URL().String())
	if err != nil {
		return err
	}
	return e.StreamWithContext(ctx, remotecommand.StreamOptions{Stdin: in, Stdout: io.Discard, Stderr: io.Discard})
}

func streamsPodSpec(name string, command []string) *corev1.Pod {
	grace, automount := int64(1), false
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{
			NodeName: streamsNode, HostNetwork: true, TerminationGracePeriodSeconds: &grace,
			AutomountServiceAccountToken: &automount,
			Containers:                   []corev1.Container{{Name: "app", Image: e2eImage, ImagePullPolicy: corev1.PullIfNotPresent, Command: command}},
		},
	}
}

// streamsFiles writes what both pairs share the shape of: the token file (an admin in
// system:masters, the node), the admin's and the node's kubeconfigs for the API server at url, and
// the agent's configuration (apiVersion and kind its own): anonymous off, the API server's client
// certificate authority trusted, webhook authentication and authorization.
func streamsFiles(t *testing.T, dir, url, ca, pki, apiVersion, kind string) (tokens, admin, node, config string) {
	t.Helper()
	tokens, admin, node, config = filepath.Join(dir, "tokens.csv"), filepath.Join(dir, "admin.conf"), filepath.Join(dir, "node.conf"), filepath.Join(dir, "agent.yaml")
	kubeconfig := func(token string) string {
		return fmt.Sprintf("apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: %q, certificate-authority: %q}}]\nusers: [{name: u, user: {token: %s}}]\ncontexts: [{name: c, context: {cluster: c, user: u}}]\ncurrent-context: c\n", url, ca, token)
	}
	for path, content := range map[string]string{
		tokens: fmt.Sprintf("%s,bench-admin,bench-admin,system:masters\n%s,system:node:%s,system:node:%s,system:nodes\n", streamsAdmin, streamsNodeTok, streamsNode, streamsNode),
		admin:  kubeconfig(streamsAdmin),
		node:   kubeconfig(streamsNodeTok),
		config: fmt.Sprintf("apiVersion: %s\nkind: %s\nauthentication: {anonymous: {enabled: false}, webhook: {enabled: true}, x509: {clientCAFile: %s}}\nauthorization: {mode: Webhook}\n",
			apiVersion, kind, filepath.Join(pki, "orchlet-client-ca.crt")),
	} {
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return tokens, admin, node, config
}

// startOrchPair starts an etcd, orch-apiserver on it and orchlet registered to it.
func startOrchPair(t *testing.T, bins, pki, endpoint string) *streamsPair {
	t.Helper()
	dir := t.TempDir()
	etcdURL := startStreamsEtcd(t, bins, dir)
	port := apptest.FreePort(t)
	url := "https://127.0.0.1:" + port
	tokens, admin, node, config := streamsFiles(t, dir, url, filepath.Join(dir, "data", "pki", "apiserver.crt"), pki, "orchlet.config.orch.io/v1beta1", "OrchletConfiguration")
	p := &streamsPair{name: "orch", kubeconfig: admin, serverLog: &syncbuf.Buffer{}, agLog: &syncbuf.Buffer{}}
	server := startStreamsProcess(t, p.serverLog, filepath.Join(bins, "orch-apiserver"), "--bind-address=127.0.0.1", "--secure-port="+port,
		"--data-dir="+filepath.Join(dir, "data"), "--etcd-servers="+etcdURL, "--token-auth-file="+tokens,
		"--anonymous-auth=false", "--authorization-mode=AlwaysAllow",
		"--orchlet-client-certificate="+filepath.Join(pki, "orch-apiserver-orchlet-client.crt"),
		"--orchlet-client-key="+filepath.Join(pki, "orch-apiserver-orchlet-client.key"),
		"--orchlet-preferred-address-types=InternalIP")
	waitStreamsServer(t, p, url)
	agent := startStreamsProcess(t, p.agLog, binary, append([]string{"--config=" + config, "--orchconfig=" + node},
		agentStreamsFlags(t, dir, endpoint)...)...)
	p.serverPID, p.agentPID = server.pid(), agent.pid()
	p.stop = func() { agent.stop(t); server.stop(t) }
	waitStreamsNode(t, p)
	return p
}

// startPeerPair starts an etcd, kube-apiserver on it and the kubelet registered to it.
func startPeerPair(t *testing.T, bins, peers, pki, endpoint string) *streamsPair {
	t.Helper()
	dir := t.TempDir()
	// The kubelet bind-mounts its root directory onto itself (rshared) and leaves it so; this runs
	// after the processes stop and before the directory is removed.
	t.Cleanup(func() {
		for _, m := range mountsUnder(dir) {
			_ = syscall.Unmount(m, syscall.MNT_DETACH)
		}
	})
	etcdURL := startStreamsEtcd(t, bins, dir)
	port := apptest.FreePort(t)
	url := "https://127.0.0.1:" + port
	tokens, admin, node, config := streamsFiles(t, dir, url, filepath.Join(dir, "pki", "apiserver.crt"), pki, "kubelet.config.k8s.io/v1beta1", "KubeletConfiguration")
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	saKey := filepath.Join(dir, "sa.key")
	if err := os.WriteFile(saKey, pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}), 0o600); err != nil {
		t.Fatal(err)
	}
	const issuer = "https://kubernetes.default.svc.cluster.local"
	p := &streamsPair{name: "kubernetes", kubeconfig: admin, serverLog: &syncbuf.Buffer{}, agLog: &syncbuf.Buffer{}}
	// No kube-controller-manager makes the default service account: the pods mount no token.
	server := startStreamsProcess(t, p.serverLog, filepath.Join(peers, "kube-apiserver"), "--bind-address=127.0.0.1", "--secure-port="+port,
		"--etcd-servers="+etcdURL, "--cert-dir="+filepath.Join(dir, "pki"), "--token-auth-file="+tokens,
		"--anonymous-auth=false", "--authorization-mode=AlwaysAllow", "--disable-admission-plugins=ServiceAccount",
		"--service-account-issuer="+issuer, "--api-audiences="+issuer,
		"--service-account-key-file="+saKey, "--service-account-signing-key-file="+saKey,
		"--kubelet-client-certificate="+filepath.Join(pki, "orch-apiserver-orchlet-client.crt"),
		"--kubelet-client-key="+filepath.Join(pki, "orch-apiserver-orchlet-client.key"),
		"--kubelet-preferred-address-types=InternalIP")
	waitStreamsServer(t, p, url)
	agent := startStreamsProcess(t, p.agLog, filepath.Join(peers, "kubelet"), append([]string{"--config=" + config, "--kubeconfig=" + node},
		agentStreamsFlags(t, dir, endpoint)...)...)
	p.serverPID, p.agentPID = server.pid(), agent.pid()
	p.stop = func() { agent.stop(t); server.stop(t) }
	waitStreamsNode(t, p)
	return p
}

// agentStreamsFlags are both agents' flags, named the same: the runtime, the node's name and
// address (the host's first non-loopback IPv4 address: the kubelet refuses a loopback node IP), the
// server on a free port of that address, no QoS cgroup tree (a test host's).
func agentStreamsFlags(t *testing.T, dir, endpoint string) []string {
	ip := hostIPv4(t)
	return []string{"--container-runtime-endpoint=" + endpoint, "--hostname-override=" + streamsNode, "--node-ip=" + ip,
		"--root-dir=" + filepath.Join(dir, "root"), "--cert-dir=" + filepath.Join(dir, "certs"),
		"--fail-swap-on=false", "--cgroups-per-qos=false", "--enforce-node-allocatable=", "--cgroup-driver=cgroupfs",
		// A shared test host's disk is often past the default thresholds: no eviction of the bench's pods.
		"--eviction-hard=memory.available<100Mi,nodefs.available<1%,imagefs.available<1%",
		"--address=" + ip, "--port=" + apptest.FreePort(t), "--read-only-port=0", "--healthz-port=0"}
}

func hostIPv4(t *testing.T) string {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && !n.IP.IsLoopback() && n.IP.To4() != nil {
			return n.IP.String()
		}
	}
	t.Fatal("no non-loopback IPv4 address: the kubelet refuses a loopback node IP")
	return ""
}

// streamsProcess is a started process of a pair.
type streamsProcess struct {
	cmd  *exec.Cmd
	done chan struct{}
}

func (s *streamsProcess) pid() int { return s.cmd.Process.Pid }

func (s *streamsProcess) stop(t *testing.T) {
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(30 * time.Second):
		t.Logf("%s did not exit within 30s of SIGTERM: killed", filepath.Base(s.cmd.Path))
		_ = s.cmd.Process.Kill()
		<-s.done
	}
}

func startStreamsProcess(t *testing.T, log *syncbuf.Buffer, bin string, args ...string) *streamsProcess {
	t.Helper()
	s := &streamsProcess{cmd: exec.Command(bin, args...), done: make(chan struct{})}
	s.cmd.Stdout, s.cmd.Stderr = log, log
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = s.cmd.Wait(); close(s.done) }()
	t.Cleanup(func() {
		select {
		case <-s.done:
		default:
			s.stop(t)
		}
	})
	return s
}

// startStreamsEtcd runs orchload's embedded etcd under dir and answers its client URL.
func startStreamsEtcd(t *testing.T, bins, dir string) string {
	t.Helper()
	out := &syncbuf.Buffer{}
	s := &streamsProcess{cmd: exec.Command(filepath.Join(bins, "orchload"), "--serve-etcd", filepath.Join(dir, "etcd")), done: make(chan struct{})}
	s.cmd.Stdout = out
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = s.cmd.Wait(); close(s.done) }()
	t.Cleanup(func() { s.stop(t) })
	var url string
	benchWait(t, "etcd serving", time.Minute, 50*time.Millisecond, func() bool {
		url, _, _ = strings.Cut(out.String(), "\n")
		return strings.HasPrefix(url, "http") && strings.Contains(out.String(), "\n")
	})
	return url
}

// waitStreamsServer waits until the API server answers for the default namespace.
func waitStreamsServer(t *testing.T, p *streamsPair, url string) {
	t.Helper()
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	benchWait(t, p.name+" API server ready", 2*time.Minute, 100*time.Millisecond, func() bool {
		req, _ := http.NewRequest(http.MethodGet, url+"/api/v1/namespaces/default", nil)
		req.Header.Set("Authorization", "Bearer "+streamsAdmin)
		resp, err := client.Do(req)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
}

// waitStreamsNode waits until the agent has registered its node with its server's port.
func waitStreamsNode(t *testing.T, p *streamsPair) {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", p.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	client := kubernetes.NewForConfigOrDie(cfg)
	benchWait(t, p.name+": node registered", 2*time.Minute, 200*time.Millisecond, func() bool {
		n, err := client.CoreV1().Nodes().Get(context.Background(), streamsNode, metav1.GetOptions{})
		return err == nil && n.Status.DaemonEndpoints.KubeletEndpoint.Port != 0
	})
}

// removeStreamsPodLogs removes the log directories the bench's pods left under /var/log/pods.
func removeStreamsPodLogs() {
	for _, pod := range []string{streamsPod, streamsWebPod} {
		dirs, _ := filepath.Glob(filepath.Join(e2ePodsDir, "default_"+pod+"_*"))
		for _, d := range dirs {
			_ = os.RemoveAll(d)
		}
	}
}

// pct is the p-th percentile (nearest rank) of ds.
func pct(ds []time.Duration, p int) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration{}, ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	rank := (p*len(s) + 99) / 100
	if rank < 1 {
		rank = 1
	}
	return s[rank-1].Round(100 * time.Microsecond)
}

func medianF(xs []float64) float64 {
	s := append([]float64{}, xs...)
	sort.Float64s(s)
	if len(s) == 0 {
		return 0
	}
	return s[len(s)/2]
}

func roundF(xs []float64) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = strconv.FormatFloat(x, 'f', 0, 64)
	}
	return strings.Join(parts, ", ")
}
