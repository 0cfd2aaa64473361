package sim

import (
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"orch.io/orch/components/apis/orchlet/v1beta1"
	"orch.io/orch/fakecri/script"
)

const webManifest = `apiVersion: v1
kind: Pod
metadata: {name: web}
spec:
  containers:
  - {name: app, image: busybox:1.36}
`

const crashManifest = `apiVersion: v1
kind: Pod
metadata: {name: crash}
spec:
  containers:
  - {name: app, image: crasher:1}
`

// worldOf is a world of o with nodes added in their order, closed as the test ends.
func worldOf(t *testing.T, o Options, nodes ...NodeOptions) (*World, []*Node) {
	t.Helper()
	w, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	var added []*Node
	for _, no := range nodes {
		n, err := w.AddNode(no)
		if err != nil {
			t.Fatal(err)
		}
		added = append(added, n)
	}
	return w, added
}

// each does do to every node in turn, up to the first that fails.
func each(nodes []*Node, do func(*Node) error) error {
	for _, n := range nodes {
		if err := do(n); err != nil {
			return err
		}
	}
	return nil
}

// story runs a small node life (a file pod, an HTTP pod, a crash loop, a pull that takes time, a
// call that hangs past its deadline) and returns its trace.
func story(t testing.TB, seed int64) string {
	t.Helper()
	w, err := New(Options{Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	script := &script.Script{
		Images:     []script.ImageRule{{Match: "busybox*", PullDuration: script.Duration(30 * time.Second)}},
		Containers: []script.ContainerRule{{Match: script.ContainerMatch{Image: "crasher*"}, Exit: &script.ExitSpec{After: script.Duration(5 * time.Second), Code: 1}}},
		Faults:     []script.FaultRule{{Method: "StopPodSandbox", Hang: true, Times: 1}},
	}
	n, err := w.AddNode(NodeOptions{Name: "node-a", Script: script, Args: []string{
		"--pod-manifest-path=/etc/orch/manifests", "--manifest-url=http://manifests.sim/pods.yaml",
	}})
	if err != nil {
		t.Fatal(err)
	}
	n.WriteManifest("web.yaml", []byte(webManifest))
	n.WriteManifest(".hidden.yaml", []byte(strings.Replace(webManifest, "name: web", "name: hidden", 1)))
	n.Serve(200, []byte(crashManifest))
	if err := w.RunUntil(time.Minute); err != nil {
		t.Fatal(err)
	}
	n.DeleteManifest("web.yaml")
	if err := w.Advance(150 * time.Second); err != nil {
		t.Fatal(err)
	}
	return w.TraceText()
}

// A node's life is traced: source reads at the documented period, the dot-file ignored, pulls that
// take time, the crash loop's restarts and the hung call cancelled at --runtime-request-timeout.
func TestStoryTrace(t *testing.T) {
	tr := story(t, 1)
	for _, want := range []string{
		"00:00:00.000 node-a source file read /etc/orch/manifests: [.hidden.yaml web.yaml]",
		"00:00:20.000 node-a source file read /etc/orch/manifests",
		"00:00:20.000 node-a source http GET http://manifests.sim/pods.yaml -> 200",
		"node-a source ADD file default/web-node-a",
		"node-a cri PullImage image=busybox:1.36",
		"node-a cri PullImage -> OK after 30s",
		"node-a pod default/web-node-a Running app=running",
		"node-a pod default/crash-node-a Running app=running,restarts=1",
		"node-a event create Warning BackOff default/crash-node-a",
		"00:01:00.000 node-a world delete manifest web.yaml",
		"node-a cri StopPodSandbox -> DeadlineExceeded after 2m0s",
		"node-a pod default/web-node-a gone",
	} {
		if !strings.Contains(tr, want) {
			t.Errorf("trace lacks %q", want)
		}
	}
	if strings.Contains(tr, "hidden") && strings.Contains(tr, "hidden-node-a") {
		t.Error("a dot-file's pod reached the node")
	}
	if t.Failed() {
		t.Log(tr)
	}
}

// The same story gives the same bytes whatever the scheduler does: GOMAXPROCS 1 and 8, many runs.
func TestDeterministic(t *testing.T) {
	runs := 20
	if testing.Short() {
		runs = 4
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	want := ""
	for i := range runs {
		procs := 1
		if i%2 == 1 {
			procs = 8
		}
		runtime.GOMAXPROCS(procs)
		got := story(t, 1)
		if want == "" {
			want = got
			continue
		}
		if got != want {
			t.Fatalf("run %d (GOMAXPROCS=%d) differs from run 0:\n%s", i, procs, firstDifference(want, got))
		}
	}
}

// The seed changes the runtime's ids, so a different seed gives a different trace.
func TestSeedMatters(t *testing.T) {
	if story(t, 1) == story(t, 2) {
		t.Fatal("seeds 1 and 2 gave the same trace")
	}
}

func firstDifference(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := 0; i < len(al) && i < len(bl); i++ {
		if al[i] != bl[i] {
			return fmt.Sprintf("line %d:\n- %s\n+ %s", i+1, al[i], bl[i])
		}
	}
	return fmt.Sprintf("lengths %d and %d", len(al), len(bl))
}

// A node given a Config runs with that Config's feature gates, parsed once: a gate it names that
// does not exist is refused when the node is added.
func TestConfigFeatureGatesParsed(t *testing.T) {
	w, err := New(Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	cfg := v1beta1.NewDefault()
	cfg.FeatureGates = map[string]bool{"NoSuchGate": true}
	_, err = w.AddNode(NodeOptions{Name: "node-a", Config: cfg})
	if err == nil || !strings.Contains(err.Error(), "featureGates") || !strings.Contains(err.Error(), "NoSuchGate") {
		t.Fatalf("AddNode = %v, want the unknown gate refused under featureGates", err)
	}
	cfg.FeatureGates = map[string]bool{"ImageVolume": true}
	if _, err := w.AddNode(NodeOptions{Name: "node-b", Config: cfg}); err != nil {
		t.Fatalf("AddNode with a known gate: %v", err)
	}
}

// eachNode looks at every node once, whatever the number of processors and nodes, reports whether
// it did anything for any, and on failures the first node's in order, as the driver alone did.
func TestEachNode(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for _, tc := range []struct {
		name       string
		nodes      int
		doing      []int // the nodes f did something for
		failing    []int // the nodes f fails for
		wantDid    bool
		wantFailed string
	}{
		{name: "none", nodes: 0},
		{name: "one idle", nodes: 1},
		{name: "one busy", nodes: 1, doing: []int{0}, wantDid: true},
		{name: "many idle", nodes: 1000},
		{name: "the last busy", nodes: 1000, doing: []int{999}, wantDid: true},
		{name: "a failure", nodes: 1000, doing: []int{3}, failing: []int{700}, wantFailed: "700"},
		{name: "the first failure in order", nodes: 1000, failing: []int{998, 17, 500}, wantFailed: "17"},
	} {
		for _, procs := range []int{1, 2, 8} {
			runtime.GOMAXPROCS(procs)
			nodes := make([]*Node, tc.nodes)
			index := map[*Node]int{}
			for i := range nodes {
				nodes[i] = &Node{Name: fmt.Sprint(i)}
				index[nodes[i]] = i
			}
			looks := make([]int, len(nodes)) // each f writes its node's alone
			did, err := eachNode(nodes, func(n *Node) (bool, error) {
				i := index[n]
				looks[i]++
				if slices.Contains(tc.failing, i) {
					return false, errors.New(n.Name)
				}
				return slices.Contains(tc.doing, i), nil
			})
			failed := ""
			if err != nil {
				failed = err.Error()
			}
			if failed != tc.wantFailed || err == nil && did != tc.wantDid {
				t.Errorf("%s, GOMAXPROCS %d: did %v, failed %q; want %v, %q", tc.name, procs, did, failed, tc.wantDid, tc.wantFailed)
			}
			if tc.wantFailed != "" {
				continue // the nodes after a failure may or may not have been looked at
			}
			for i, l := range looks {
				if l != 1 {
					t.Fatalf("%s, GOMAXPROCS %d: node %d looked at %d times", tc.name, procs, i, l)
				}
			}
		}
	}
}

// settle's last round asks each node its next due time in the visit that gathers it, for next:
// those answers are the ones a look after the settle gives, at every instant of a busy world (pods
// starting, a crash loop, a pull that takes time), so the world visits the instants it visited
// when next asked them itself.
func TestSettleLeavesDues(t *testing.T) {
	w, err := New(Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	sc := &script.Script{
		Images:     []script.ImageRule{{Match: "busybox*", PullDuration: script.Duration(30 * time.Second)}},
		Containers: []script.ContainerRule{{Match: script.ContainerMatch{Image: "crasher*"}, Exit: &script.ExitSpec{After: script.Duration(5 * time.Second), Code: 1}}},
	}
	for i := range 3 {
		n, err := w.AddNode(NodeOptions{Name: fmt.Sprintf("node-%d", i), Script: sc, Args: []string{"--pod-manifest-path=/etc/orch/manifests"}})
		if err != nil {
			t.Fatal(err)
		}
		n.WriteManifest("web.yaml", []byte(webManifest))
		n.WriteManifest("crash.yaml", []byte(crashManifest))
	}
	end := w.Clock.Now().Add(3 * time.Minute)
	for instants := 0; ; instants++ {
		if err := w.settle(); err != nil {
			t.Fatal(err)
		}
		if !w.dues {
			t.Fatal("settle left no due times")
		}
		now := w.Clock.Now()
		for _, n := range w.live {
			if want := n.nextDue(now); !n.due.Equal(want) {
				t.Fatalf("%s at %v: settle left due %v, a look after it %v", n.Name, w.Now(), n.due, want)
			}
		}
		next, ok := w.next()
		if !ok || next.After(end) {
			if instants < 30 {
				t.Fatalf("%d instants in 3m, want at least 30", instants)
			}
			return
		}
		w.Clock.Set(next)
	}
}

// A world finds each of its nodes by name, and nothing by a name none has; a second node of a
// name is refused.
func TestNodeByName(t *testing.T) {
	w, err := New(Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	names := []string{"node-a", "node-b", "node-c"}
	for _, name := range names {
		if _, err := w.AddNode(NodeOptions{Name: name}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := w.AddNode(NodeOptions{Name: "node-b"}); err == nil {
		t.Error("a second node-b added")
	}
	for i, name := range names {
		if n, ok := w.Node(name); !ok || n != w.Nodes()[i] {
			t.Errorf("Node(%q) = %v, %v: not the node added as %s", name, n, ok, name)
		}
	}
	if n, ok := w.Node("node-d"); ok {
		t.Errorf("Node(%q) found %s", "node-d", n.Name)
	}
}
