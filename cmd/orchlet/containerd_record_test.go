//go:build e2e

package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"

	"orch.io/orch/components/apiserver/server"
	"orch.io/orch/components/apiserver/storage/memory"
	"orch.io/orch/components/authn"
	"orch.io/orch/components/authz"
	"orch.io/orch/components/orchlet/app/apptest"
	"orch.io/orch/fakecri"
	"orch.io/orch/fakecri/record"
	"orch.io/orch/fakecri/script"
	"orch.io/orch/sim"
	"orch.io/orch/sim/scenario"
)

// recordPeriod is the recorder's sampling period: the replay must match the recording within it.
const recordPeriod = 5 * time.Second

// recordSpan is how long the node is recorded.
const recordSpan = 60 * time.Second

// recordPods are the recorded node's pods, from the API server (a static pod is critical, and so
// never evicted): one that holds 40MB of memory in /dev/shm, one that logs a line and crashes
// (exit 3) 4s after each start, one OOM-killed by its 16Mi limit 2s after each start, and one that writes 20MB to
// its writable layer past its 8Mi ephemeral-storage limit, and is evicted.
var recordPods = map[string]string{
	"hog.yaml": `apiVersion: v1
kind: Pod
metadata: {name: hog}
spec:
  nodeName: ` + e2eNode + `
  hostNetwork: true
  terminationGracePeriodSeconds: 2
  containers:
  - name: app
    image: ` + e2eImage + `
    imagePullPolicy: IfNotPresent
    command: [sh, -c, "head -c 40000000 /dev/zero > /dev/shm/hold; sleep 3600"]
`,
	"crash.yaml": `apiVersion: v1
kind: Pod
metadata: {name: crash}
spec:
  nodeName: ` + e2eNode + `
  hostNetwork: true
  terminationGracePeriodSeconds: 2
  containers:
  - name: app
    image: ` + e2eImage + `
    imagePullPolicy: IfNotPresent
    command: [sh, -c, "echo starting; sleep 4; exit 3"]
`,
	"oom.yaml": `apiVersion: v1
kind: Pod
metadata: {name: oom}
spec:
  nodeName: ` + e2eNode + `
  hostNetwork: true
  terminationGracePeriodSeconds: 2
  containers:
  - name: app
    image: ` + e2eImage + `
    imagePullPolicy: IfNotPresent
    command: [sh, -c, "sleep 2; x=$(head -c 100000000 /dev/zero | tr '\\0' a); sleep 3600"]
    resources: {limits: {memory: 16Mi}}
`,
	"disk.yaml": `apiVersion: v1
kind: Pod
metadata: {name: disk}
spec:
  nodeName: ` + e2eNode + `
  hostNetwork: true
  terminationGracePeriodSeconds: 2
  containers:
  - name: app
    image: ` + e2eImage + `
    imagePullPolicy: IfNotPresent
    command: [sh, -c, "sleep 3; head -c 20000000 /dev/zero > /fill; sleep 3600"]
    resources: {limits: {ephemeral-storage: 8Mi}}
`,
}

// podSeen is one pod as orchlet's read-only server showed it at one time.
type podSeen struct {
	at       time.Duration
	restarts int
	evicted  bool
	reasons  string // the containers' last termination reasons
}

// TestRecordReplayOnContainerd records orchlet running recordPods on containerd through
// `fakecri record`'s proxy for a minute, replays the recording in the simulator, and checks that
// the replay's pod phases, restarts and evictions match what orchlet's read-only server showed,
// each within one sampling period; then asks the recording what would have happened with other
// options, and draws both runs.
func TestRecordReplayOnContainerd(t *testing.T) {
	ctd := startContainerd(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	connectRuntime(ctx, t, "unix://"+ctd.sock)
	names := []string{"crash", "disk", "hog", "oom"}
	cleanupPodLogs(t, names...)

	rec, err := record.New(ctx, record.Options{Upstream: "unix://" + ctd.sock, SamplePeriod: recordPeriod, Logs: true})
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Close()
	sock := filepath.Join(ctd.dir, "rec.sock")
	lis, err := fakecri.Listen("unix://" + sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := rec.NewGRPCServer()
	go srv.Serve(lis)
	t.Cleanup(srv.Stop)
	sampling, stopSampling := context.WithCancel(ctx)
	defer stopSampling()
	go rec.Run(sampling)

	kubeconfig, client := e2eAPIServer(t, nil)
	var podYAMLs []string
	for _, name := range sortedKeys(recordPods) {
		var pod corev1.Pod
		if err := yaml.UnmarshalStrict([]byte(recordPods[name]), &pod); err != nil {
			t.Fatal(err)
		}
		if _, err := client.CoreV1().Pods("default").Create(ctx, &pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		podYAMLs = append(podYAMLs, recordPods[name])
	}
	began := time.Now()
	a := startServing(t, "--container-runtime-endpoint", "unix://"+sock, "--orchconfig="+kubeconfig,
		"--hostname-override="+e2eNode, "--fail-swap-on=false",
		"--cgroup-driver=cgroupfs", "--cert-dir="+t.TempDir(), "--root-dir="+t.TempDir())
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("orchlet stderr:\n%s", a.stderr.String())
		}
	})

	// What the real node did, as orchlet reports it, every half second.
	readOnly := &http.Client{Timeout: 2 * time.Second}
	seen := map[string][]podSeen{}
	for time.Since(began) < recordSpan {
		at := time.Since(began)
		list, err := getPods(readOnly, "http://127.0.0.1:"+a.readOnly+"/pods")
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range list.Items {
			s := podSeen{at: at, evicted: p.Status.Phase == corev1.PodFailed && p.Status.Reason == "Evicted"}
			var reasons []string
			for _, c := range p.Status.ContainerStatuses {
				s.restarts += int(c.RestartCount)
				if c.LastTerminationState.Terminated != nil {
					reasons = append(reasons, c.LastTerminationState.Terminated.Reason)
				}
			}
			s.reasons = strings.Join(reasons, ",")
			seen["default/"+p.Name] = append(seen["default/"+p.Name], s)
		}
		time.Sleep(500 * time.Millisecond)
	}
	stopSampling()
	if err := rec.Sample(ctx); err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	if err := rec.WriteRecording(out, record.Recording{Node: e2eNode, APIPods: podYAMLs, Upstream: "containerd"}); err != nil {
		t.Fatal(err)
	}
	sk, _ := os.ReadFile(filepath.Join(out, "scenario.yaml"))
	t.Logf("the recording's scenario:\n%s", sk)

	script, err := script.Load(filepath.Join(out, "fakecri.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range script.Containers {
		if c.Match.Pod == "crash" && (c.Logs == nil || strings.Join(c.Logs.Lines, "|") != "starting") {
			t.Errorf("crash's recorded log lines: %+v, want [starting]", c.Logs)
		}
	}

	// The replay, in the simulator.
	s, err := scenario.Load(filepath.Join(out, "scenario.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.Run(0)
	if err != nil {
		t.Fatal(err)
	}
	replayAt := func(at time.Duration) map[string]scenario.PodSummary {
		n := sort.Search(len(res.Entries), func(i int) bool { return res.Entries[i].At > at })
		m := map[string]scenario.PodSummary{}
		for _, p := range scenario.Summarize(append([]sim.Entry(nil), res.Entries[:n]...), at).Pods {
			m[p.Pod] = p
		}
		return m
	}
	final := replayAt(recordSpan)
	evictedAt := map[string]time.Duration{}
	for pod, obs := range seen {
		for _, o := range obs {
			if o.evicted {
				evictedAt[pod] = o.at
				break
			}
		}
	}
	var report []string
	for _, pod := range sortedPods(seen) {
		obs := seen[pod]
		last := obs[len(obs)-1]
		rp := final[pod]
		report = append(report, fmt.Sprintf("%s: recorded restarts=%d evicted=%v reasons=%s; replayed restarts=%d evicted=%v final=%s",
			pod, last.restarts, evictedAtString(evictedAt, pod), last.reasons, rp.Restarts, rp.Evicted, rp.Final))
	}
	t.Logf("recorded and replayed:\n%s", strings.Join(report, "\n"))

	// Not vacuous: the real node crashed, OOM-killed and evicted.
	want := map[string]func(podSeen) bool{
		"default/crash": func(o podSeen) bool { return o.restarts >= 2 },
		"default/oom":   func(o podSeen) bool { return o.restarts >= 2 && strings.Contains(o.reasons, "OOMKilled") },
		"default/hog":   func(o podSeen) bool { return o.restarts == 0 && !o.evicted },
		"default/disk":  func(o podSeen) bool { return o.evicted },
	}
	for pod, ok := range want {
		obs := seen[pod]
		if len(obs) == 0 || !ok(obs[len(obs)-1]) {
			t.Errorf("the recorded node did not do what the test set it to with %s: %d observations, the last %+v", pod, len(obs), last(obs))
		}
	}
	// Each observation of the real node lies within one sampling period of the replay.
	for pod, obs := range seen {
		for _, o := range obs {
			lo, hi := replayAt(max(0, o.at-recordPeriod))[pod], replayAt(o.at + recordPeriod)[pod]
			if o.restarts < lo.Restarts || o.restarts > hi.Restarts {
				t.Errorf("%s at %s: %d restarts recorded, the replay had %d to %d within %s", pod, o.at.Round(time.Millisecond), o.restarts, lo.Restarts, hi.Restarts, recordPeriod)
				break
			}
		}
		real, evicted := evictedAt[pod]
		replayed := final[pod].Evicted
		switch {
		case evicted != (len(replayed) > 0):
			t.Errorf("%s: evicted at %v in the recording, %v in the replay", pod, evictedAtString(evictedAt, pod), replayed)
		case evicted && (replayed[0] < real-recordPeriod || replayed[0] > real+recordPeriod):
			t.Errorf("%s: evicted at %s in the recording, %s in the replay: more than %s apart", pod, real, replayed[0], recordPeriod)
		}
		if obs[len(obs)-1].evicted != strings.Contains(final[pod].Final, "reason=Evicted") {
			t.Errorf("%s: final phase differs: recorded %+v, replayed %q", pod, obs[len(obs)-1], final[pod].Final)
		}
	}

	// What if: the recorded node with local storage capacity isolation off, drawn beside the
	// recording's replay. The disk pod is evicted in the first run only.
	set, err := scenario.ParseOptionSet("local-storage-capacity-isolation=false")
	if err != nil {
		t.Fatal(err)
	}
	runs, err := s.Compare(scenario.CompareOptions{Sets: []scenario.OptionSet{set}, SignalPeriod: s.SignalPeriod()})
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range runs {
		var evicted []string
		for _, p := range r.Summary.Pods {
			if len(p.Evicted) > 0 {
				evicted = append(evicted, p.Pod)
			}
		}
		if want := [][]string{{"default/disk"}, nil}[i]; strings.Join(evicted, " ") != strings.Join(want, " ") {
			t.Errorf("run %q evicted %v, want %v", r.Set.Name, evicted, want)
		}
	}
	page := scenario.Page(s, runs)
	if !strings.Contains(page, `<g class="eviction" data-pod="default/disk" data-run="1"`) || strings.Contains(page, `data-pod="default/disk" data-run="2"`) {
		t.Errorf("the compare page does not mark the disk pod's eviction in the first run only")
	}
}

func last(obs []podSeen) podSeen {
	if len(obs) == 0 {
		return podSeen{}
	}
	return obs[len(obs)-1]
}

// e2eAPIServer serves orch-apiserver's handler on memory storage over TLS, anonymous requests
// allowed everything unless configure changes the config, and writes a kubeconfig for the agent.
func e2eAPIServer(t *testing.T, configure func(*server.Config)) (string, kubernetes.Interface) {
	t.Helper()
	clk := clock.New()
	st := memory.New(clk)
	stopping := make(chan struct{})
	c := server.Config{
		Clock: clk, Storage: st, EventTTL: time.Hour, Authenticator: authn.Union(authn.Anonymous()), Authorizer: authz.AlwaysAllow(),
		MinRequestTimeout: 30 * time.Minute, BookmarkInterval: time.Minute, Stopping: stopping,
	}
	if configure != nil {
		configure(&c)
	}
	h, err := server.New(c)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewTLSServer(h)
	t.Cleanup(func() { close(stopping); srv.Close(); _ = st.Close() })
	kubeconfig := apptest.AnonymousKubeconfig(t, srv)
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return kubeconfig, client
}

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func sortedPods(m map[string][]podSeen) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func evictedAtString(m map[string]time.Duration, pod string) string {
	if at, ok := m[pod]; ok {
		return at.Round(time.Millisecond).String()
	}
	return "never"
}
