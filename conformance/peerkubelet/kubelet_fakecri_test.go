//go:build peers

package peerkubelet

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"orch.io/orch/components/freeport"
	"orch.io/orch/conformance/hostmounts"
)

var (
	kubeletBin = flag.String("kubelet", "", "Kubernetes' kubelet (default $ORCH_PEERS/kubelet, else ~/.cache/orch-peers/v1.34.4/kubelet)")
	fakecriBin = flag.String("fakecri", "../../bin/fakecri", "the fakecri command (go build -o bin/fakecri ./cmd/fakecri)")
	duration   = flag.Duration("duration", 70*time.Second, "how long the kubelet runs on fakecri, from its start")
	reference  = flag.String("reference", "../../../shared/reference/kubelet-cri-call-counts.txt", "the kubelet's CRI call counts on containerd, first minute")
	reportDir  = flag.String("report", "", "a directory for the evidence (counts table, pods, error lines, the kubelet's log); none: only the test log")
	extra      = flag.String("extra-script", "", "a file of fakecri script sections (node, images, faults) added to the test's own, to see the checks catch a runtime fault")
)

const node = "peer-node"

// script makes the web container log a line a second (read back through the kubelet's
// /containerLogs) and the init container finish after a second.
const script = `containers:
- match: {name: web}
  logs: {lines: ["GET / 200 {n}"], every: 1s}
- match: {name: init}
  exit: {after: 1s, code: 0}
`

var manifests = map[string]string{
	"web.yaml": `apiVersion: v1
kind: Pod
metadata: {name: web, namespace: default}
spec:
  containers:
  - {name: web, image: "nginx:1.27"}
`,
	"sleeper.yaml": `apiVersion: v1
kind: Pod
metadata: {name: sleeper, namespace: default}
spec:
  containers:
  - {name: main, image: "busybox:1.36", command: [sleep, "3600"]}
  - {name: side, image: "busybox:1.36", command: [sleep, "3600"]}
`,
	"initialized.yaml": `apiVersion: v1
kind: Pod
metadata: {name: initialized, namespace: default}
spec:
  initContainers:
  - {name: init, image: "busybox:1.36", command: ["true"]}
  containers:
  - {name: main, image: "busybox:1.36", command: [sleep, "3600"]}
`,
}

// TestKubeletOnFakecri starts fakecri and Kubernetes' kubelet in standalone mode on it with three
// static pods, and checks fakecri against it: the pods reach Running in the kubelet's /pods, the
// kubelet reads a container's log and the image filesystem's size through fakecri, every CRI method
// the reference capture lists is called without an error and at the reference's rate, and the
// kubelet logs no error line that is not the host's.
func TestKubeletOnFakecri(t *testing.T) {
	kubelet := *kubeletBin
	if kubelet == "" {
		dir := os.Getenv("ORCH_PEERS")
		if dir == "" {
			home, _ := os.UserHomeDir()
			dir = filepath.Join(home, ".cache/orch-peers/v1.34.4")
		}
		kubelet = filepath.Join(dir, "kubelet")
	}
	for _, bin := range []string{kubelet, *fakecriBin} {
		if _, err := os.Stat(bin); err != nil {
			t.Fatalf("%v (make peers builds the kubelet, go build -o bin/fakecri ./cmd/fakecri the runtime)", err)
		}
	}
	refFile, err := os.Open(*reference)
	if err != nil {
		t.Fatalf("-reference: %v", err)
	}
	ref, err := ReferenceCounts(refFile)
	refFile.Close()
	if err != nil {
		t.Fatalf("-reference %s: %v", *reference, err)
	}

	dir := t.TempDir()
	for _, d := range []string{"manifests", "root", "podlogs", "pki", "plugins"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for name, m := range manifests {
		writeFile(t, filepath.Join(dir, "manifests", name), m)
	}
	full := script
	if *extra != "" {
		b, err := os.ReadFile(*extra)
		if err != nil {
			t.Fatalf("-extra-script: %v", err)
		}
		full += string(b)
	}
	writeFile(t, filepath.Join(dir, "script.yaml"), full)
	sock := filepath.Join(dir, "cri.sock")
	control := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", sock+".control")
		}}}

	fakecri := start(t, filepath.Join(dir, "fakecri.log"), *fakecriBin, "--listen", "unix://"+sock,
		"--state-dir", filepath.Join(dir, "state"), "--script", filepath.Join(dir, "script.yaml"))
	waitFor(t, 10*time.Second, "fakecri's control API", func() error {
		_, err := get(control, "http://fakecri/healthz")
		return err
	})

	port, roPort, healthzPort := freeport.For(t), freeport.For(t), freeport.For(t)
	// A standalone kubelet: no API server, so no webhook authentication or authorization; the
	// authenticated port answers anyone (the test reads /containerLogs there).
	writeFile(t, filepath.Join(dir, "kubelet.yaml"), fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
podLogsDir: %s
authentication:
  webhook: {enabled: false}
  anonymous: {enabled: true}
authorization: {mode: AlwaysAllow}
`, filepath.Join(dir, "podlogs")))
	kubeletLog := filepath.Join(dir, "kubelet.log")
	// Registered before the kubelet's stop, so it runs after it.
	t.Cleanup(func() {
		if err := hostmounts.UnmountUnder(dir); err != nil {
			t.Log(err)
		}
	})
	started := time.Now()
	k := start(t, kubeletLog, kubelet,
		"--config="+filepath.Join(dir, "kubelet.yaml"),
		"--container-runtime-endpoint=unix://"+sock,
		"--root-dir="+filepath.Join(dir, "root"),
		"--cert-dir="+filepath.Join(dir, "pki"),
		"--volume-plugin-dir="+filepath.Join(dir, "plugins"),
		"--pod-manifest-path="+filepath.Join(dir, "manifests"),
		"--file-check-frequency=1s",
		"--hostname-override="+node,
		"--address=127.0.0.1",
		fmt.Sprintf("--port=%d", port), fmt.Sprintf("--read-only-port=%d", roPort), fmt.Sprintf("--healthz-port=%d", healthzPort),
		// What a test host without systemd, swap accounting or a QoS cgroup tree needs.
		"--fail-swap-on=false", "--cgroups-per-qos=false", "--enforce-node-allocatable=",
	)
	t.Cleanup(func() { removeLogLinks(t, dir) })

	ro := fmt.Sprintf("http://127.0.0.1:%d", roPort)
	plain := &http.Client{Timeout: 10 * time.Second}
	var running time.Duration
	waitFor(t, 90*time.Second, "the static pods Running in the kubelet's /pods", func() error {
		if err := k.exited(); err != nil {
			t.Fatalf("the kubelet exited: %v\n%s", err, tail(kubeletLog))
		}
		b, err := get(plain, ro+"/pods")
		if err != nil {
			return err
		}
		if err := podsRunning(b); err != nil {
			return err
		}
		running = time.Since(started)
		return nil
	})
	t.Logf("static pods Running %.1fs after the kubelet started", running.Seconds())

	// The kubelet reads fakecri's log file (CRI format) back through /containerLogs.
	secure := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		// The kubelet's self-signed serving certificate, made at start in --cert-dir.
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	waitFor(t, 20*time.Second, "the web container's log through the kubelet", func() error {
		b, err := get(secure, fmt.Sprintf("https://127.0.0.1:%d/containerLogs/default/web-%s/web", port, node))
		if err != nil {
			return err
		}
		if !strings.HasPrefix(string(b), "GET / 200 1\nGET / 200 2\n") {
			return fmt.Errorf("log %q, want it to start with the scripted lines", b)
		}
		return nil
	})

	if rest := *duration - time.Since(started); rest > 0 {
		time.Sleep(rest)
	}
	if err := k.exited(); err != nil {
		t.Fatalf("the kubelet exited: %v\n%s", err, tail(kubeletLog))
	}
	if err := fakecri.exited(); err != nil {
		t.Fatalf("fakecri exited: %v\n%s", err, tail(filepath.Join(dir, "fakecri.log")))
	}
	summary, err := get(plain, ro+"/stats/summary")
	if err != nil {
		t.Fatal(err)
	}
	if err := statsHold(summary); err != nil {
		t.Errorf("/stats/summary: %v", err)
	}

	// Every call fakecri received.
	b, err := get(control, "http://fakecri/v1/calls")
	if err != nil {
		t.Fatal(err)
	}
	var log struct {
		Calls []struct {
			Call
			Start time.Time
		}
		Dropped int
	}
	if err := json.Unmarshal(b, &log); err != nil {
		t.Fatalf("calls: %v", err)
	}
	if log.Dropped > 0 || len(log.Calls) == 0 {
		t.Fatalf("fakecri kept %d calls and dropped %d", len(log.Calls), log.Dropped)
	}
	calls := make([]Call, len(log.Calls))
	for i, c := range log.Calls {
		calls[i] = c.Call
	}
	staleIDs := StaleIDs(calls)
	first, total, failed := map[string]int{}, map[string]int{}, map[string]int{}
	begin, stale := log.Calls[0].Start, 0
	for _, c := range log.Calls {
		total[c.Method]++
		if c.Start.Sub(begin) < time.Minute {
			first[c.Method]++
		}
		if c.Code == "OK" {
			continue
		}
		if c.Method == "ContainerStatus" && c.Code == "NotFound" && staleIDs[containerID(c.Request)] {
			stale++
			continue
		}
		failed[c.Method]++
		t.Errorf("%s %s: %s %s", c.Method, c.Request, c.Code, c.Error)
	}
	run := log.Calls[len(log.Calls)-1].Start.Sub(begin)
	rows := Compare(ref, first, total, failed, run)
	table := Table(rows)
	for _, r := range rows {
		if r.Problem != "" {
			t.Errorf("%s: %s", r.Method, r.Problem)
		}
	}

	lf, err := os.Open(kubeletLog)
	if err != nil {
		t.Fatal(err)
	}
	lines, err := ErrorLines(lf, func(id string) bool { return staleIDs[id] })
	lf.Close()
	if err != nil {
		t.Fatal(err)
	}
	host := map[string]int{}
	for _, l := range lines {
		if l.Reason == "" {
			t.Errorf("the kubelet logs an error that is not the host's: %s", l.Text)
			continue
		}
		host[l.Reason]++
	}
	var reasons []string
	for r, n := range host {
		reasons = append(reasons, fmt.Sprintf("- %d× %s", n, r))
	}
	sort.Strings(reasons)

	report := fmt.Sprintf("The kubelet on fakecri for %s (calls over %s), static pods Running %.1fs after start; "+
		"%d ContainerStatus NotFound for ids fakecri had not made (stale /var/log/containers links).\n\n%s\nError lines that are the host's:\n%s\n",
		duration.String(), run.Round(time.Second), running.Seconds(), stale, table, strings.Join(reasons, "\n"))
	t.Log("\n" + report)
	if *reportDir != "" {
		if err := os.MkdirAll(*reportDir, 0o755); err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(*reportDir, "report.md"), report)
		writeFile(t, filepath.Join(*reportDir, "summary.json"), string(summary))
		writeFile(t, filepath.Join(*reportDir, "calls.json"), string(b))
		if kl, err := os.ReadFile(kubeletLog); err == nil {
			writeFile(t, filepath.Join(*reportDir, "kubelet.log"), string(kl))
		}
	}
}

// podsRunning checks /pods: every static pod Running, its containers running, its init containers
// finished with exit code 0.
func podsRunning(b []byte) error {
	var list struct {
		Items []struct {
			Metadata struct{ Name string }
			Status   struct {
				Phase                                    string
				ContainerStatuses, InitContainerStatuses []struct {
					Name  string
					State map[string]struct {
						ExitCode *int `json:"exitCode"`
					}
				}
			}
		}
	}
	if err := json.Unmarshal(b, &list); err != nil {
		return err
	}
	if len(list.Items) != len(manifests) {
		return fmt.Errorf("%d pods, want %d", len(list.Items), len(manifests))
	}
	for _, p := range list.Items {
		if p.Status.Phase != "Running" {
			return fmt.Errorf("%s is %q", p.Metadata.Name, p.Status.Phase)
		}
		for _, c := range p.Status.ContainerStatuses {
			if _, ok := c.State["running"]; !ok {
				return fmt.Errorf("%s/%s is %v", p.Metadata.Name, c.Name, c.State)
			}
		}
		for _, c := range p.Status.InitContainerStatuses {
			if s, ok := c.State["terminated"]; !ok || s.ExitCode == nil || *s.ExitCode != 0 {
				return fmt.Errorf("init container %s/%s is %v", p.Metadata.Name, c.Name, c.State)
			}
		}
	}
	return nil
}

// statsHold checks what the kubelet's eviction manager and image GC read: the image filesystem's
// capacity (statfs of fakecri's mountpoint) and every running container's memory from
// ListContainerStats.
func statsHold(b []byte) error {
	var s struct {
		Node struct {
			Runtime struct {
				ImageFs *struct {
					CapacityBytes *uint64 `json:"capacityBytes"`
				} `json:"imageFs"`
			}
		}
		Pods []struct {
			PodRef     struct{ Name string }
			Containers []struct {
				Name   string
				Memory *struct {
					WorkingSetBytes *uint64 `json:"workingSetBytes"`
				}
			}
		}
	}
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	if fs := s.Node.Runtime.ImageFs; fs == nil || fs.CapacityBytes == nil || *fs.CapacityBytes == 0 {
		return fmt.Errorf("no image filesystem capacity")
	}
	n := 0
	for _, p := range s.Pods {
		for _, c := range p.Containers {
			if c.Name == "init" {
				continue
			}
			if c.Memory == nil || c.Memory.WorkingSetBytes == nil || *c.Memory.WorkingSetBytes == 0 {
				return fmt.Errorf("%s/%s: no working set", p.PodRef.Name, c.Name)
			}
			n++
		}
	}
	if n != 4 {
		return fmt.Errorf("stats of %d running containers, want 4", n)
	}
	return nil
}

type proc struct {
	cmd  *exec.Cmd
	done chan error
}

// exited is the process's end, if it has ended.
func (p *proc) exited() error {
	select {
	case err := <-p.done:
		p.done <- err
		if err == nil {
			err = fmt.Errorf("exit 0")
		}
		return err
	default:
		return nil
	}
}

// start runs a command with its output in logFile; cleanup stops it with SIGTERM, then SIGKILL.
func start(t *testing.T, logFile, bin string, args ...string) *proc {
	t.Helper()
	out, err := os.Create(logFile)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &proc{cmd: cmd, done: make(chan error, 1)}
	go func() { p.done <- cmd.Wait(); out.Close() }()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(15 * time.Second):
			cmd.Process.Kill()
			<-p.done
		}
	})
	return p
}

// removeLogLinks removes the kubelet's /var/log/containers links into dir (a fixed host path the
// kubelet writes whatever its flags), so later runs find no stale ones of this run.
func removeLogLinks(t *testing.T, dir string) {
	const links = "/var/log/containers"
	entries, _ := os.ReadDir(links)
	for _, e := range entries {
		p := filepath.Join(links, e.Name())
		if target, err := os.Readlink(p); err == nil && strings.HasPrefix(target, dir+"/") {
			if err := os.Remove(p); err != nil {
				t.Log(err)
			}
		}
	}
}

func get(c *http.Client, url string) ([]byte, error) {
	resp, err := c.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("GET %s: %s: %s", url, resp.Status, b)
	}
	return b, err
}

func waitFor(t *testing.T, within time.Duration, what string, ok func() error) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		err := ok()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s: %v", what, within, err)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func tail(path string) string {
	b, _ := os.ReadFile(path)
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}
