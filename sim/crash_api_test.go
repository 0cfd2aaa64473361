package sim

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"orch.io/orch/sim/converge"
)

// apiKillStory runs two nodes in API-server mode; node-a's agent is killed at 30s with two pods
// running, one of them is deleted through the API (grace 5s) and a third pod bound to the node
// while it is down, and the agent is restarted at 90s. It returns the trace, the API's pods and
// node-a's Lease as read at the end, and what converge found wrong on node-a's runtime.
func apiKillStory(t *testing.T) (trace, api string, findings []string) {
	t.Helper()
	w, err := New(Options{Seed: 5, APIServer: true})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = w.Close() }()
	var a *Node
	for _, name := range []string{"node-a", "node-b"} {
		n, err := w.AddNode(NodeOptions{Name: name, API: true})
		if err != nil {
			t.Fatal(err)
		}
		if a == nil {
			a = n
		}
	}
	grace := int64(5)
	create := func(name, node string) {
		t.Helper()
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PodSpec{NodeName: node,
			TerminationGracePeriodSeconds: &grace, Containers: []corev1.Container{{Name: "app", Image: "nginx:1.27"}}}}
		if err := w.CreatePod(pod); err != nil {
			t.Fatal(err)
		}
	}
	run := func(until time.Duration) {
		t.Helper()
		if err := w.RunUntil(until); err != nil {
			t.Fatal(err)
		}
	}
	run(5 * time.Second)
	create("web", "node-a")
	create("db", "node-a")
	create("web-b", "node-b")
	run(30 * time.Second)
	before := a.Runtime.State()
	if err := a.Kill(); err != nil {
		t.Fatal(err)
	}
	run(50 * time.Second)
	if err := w.DeletePod("default", "db", nil); err != nil {
		t.Fatal(err)
	}
	create("late", "node-a")
	run(90 * time.Second)
	lease, err := w.api.admin.CoordinationV1().Leases("orch-node-lease").Get(w.ctx, "node-a", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	stale := fmt.Sprintf("lease at 90s: renewed %s\n", FormatOffset(lease.Spec.RenewTime.Sub(w.start)))
	if err := a.Restart(); err != nil {
		t.Fatal(err)
	}
	run(150 * time.Second)

	want := map[string][]string{"default/web": {"app"}, "default/late": {"app"}}
	d := converge.Differences(a.Runtime.State(), want)
	findings = append(append(append(findings, d.Leaked...), d.Doubled...), d.Missing...)
	pods, containers := converge.Replaced(before, a.Runtime.State(), map[string][]string{"default/web": {"app"}})
	findings = append(append(findings, pods...), containers...)

	var out strings.Builder
	out.WriteString(stale)
	list, err := w.api.admin.CoreV1().Pods("").List(w.ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range list.Items {
		fmt.Fprintf(&out, "pod %s/%s on %s %s\n", p.Namespace, p.Name, p.Spec.NodeName, podSummary(&p))
	}
	node, err := w.api.admin.CoreV1().Nodes().Get(w.ctx, "node-a", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(&out, "node %s %s\n", node.Name, node.UID)
	return w.TraceText(), out.String(), findings
}

// A killed API-server-mode agent makes no request and its Lease goes stale; restarted, it
// registers its existing Node (the create refused, the Node read, its Ready transition kept) and
// takes its Lease up again, lists its pods and adopts the one running (no sandbox made again),
// stops the one deleted while it was down with its grace before confirming the deletion, and
// runs the one bound meanwhile; the API's statuses converge. The same bytes at GOMAXPROCS 1 and 8.
func TestKillRestartAPI(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	runtime.GOMAXPROCS(1)
	tr, api, findings := apiKillStory(t)
	for _, f := range findings {
		t.Errorf("after the restart: %s", f)
	}
	for _, want := range []string{
		"00:00:30.000 node-a world orchlet killed (SIGKILL)",
		"00:01:30.000 node-a world orchlet restarted on its root directory",
		"00:01:30.000 node-a api list pods  -> 200",
		"00:01:30.000 node-a source api ADDED default/late",
		`00:01:30.000 node-a api create nodes  -> 409 nodes "node-a" already exists`,
		"00:01:30.000 node-a api get nodes node-a -> 200 Ready=True since 00:00:00.000",
		"00:01:30.000 node-a api update nodes/status node-a -> 200 Ready=True since 00:00:00.000",
		"00:01:30.000 node-a api get leases orch-node-lease/node-a -> 200 renewed 00:00:30.000",
		"00:01:30.000 node-a api update leases orch-node-lease/node-a -> 200 renewed 00:01:30.000",
		"00:01:30.000 node-a api patch pods/status default/late -> 200 Running app=running",
		"00:01:30.000 node-a source api DELETED default/db",
	} {
		if !strings.Contains(tr, want+"\n") {
			t.Errorf("trace lacks %q", want)
		}
	}
	// Stopped with its own grace (5s), then the deletion confirmed.
	stopped, confirmed := strings.Index(tr, "timeout=5 -> OK exit_code=0"), strings.Index(tr, "00:01:30.000 node-a api delete pods default/db -> 200")
	if stopped < 0 || confirmed < stopped {
		t.Error("the deletion of default/db was confirmed before its container stopped")
	}
	for _, l := range strings.Split(tr, "\n") {
		if l > "00:00:30.001" && l < "00:01:30.000" && strings.Contains(l, " node-a ") {
			t.Errorf("node-a traced while its agent was down: %s", l)
		}
		if l > "00:00:30.000" && strings.Contains(l, "RunPodSandbox name=web ") {
			t.Errorf("a sandbox made again after the restart: %s", l)
		}
	}
	for _, want := range []string{
		"lease at 90s: renewed 00:00:30.000", // stale: nothing renewed it for a minute
		"pod default/late on node-a Running app=running",
		"pod default/web on node-a Running app=running",
		"pod default/web-b on node-b Running app=running",
	} {
		if !strings.Contains(api, want+"\n") {
			t.Errorf("the API lacks %q:\n%s", want, api)
		}
	}
	if strings.Contains(api, "default/db") {
		t.Errorf("the pod deleted while the agent was down is still in the API:\n%s", api)
	}
	runtime.GOMAXPROCS(8)
	if again, againAPI, _ := apiKillStory(t); again != tr || againAPI != api {
		t.Fatalf("a second run at GOMAXPROCS 8 differs:\n%s%s", firstDifference(tr, again), firstDifference(api, againAPI))
	}
	if t.Failed() {
		t.Log(tr)
	}
}

// An agent restarted while the API server is down cannot list its pods: it tries again every
// second (its registration backs off apart), and the runtime's pods wait meanwhile, none torn down
// as an orphan; once the API server is back the list succeeds and the pod is adopted, not made
// again.
func TestRestartAPIWhileTheAPIServerIsDown(t *testing.T) {
	w, err := New(Options{Seed: 2, APIServer: true})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = w.Close() }()
	n, err := w.AddNode(NodeOptions{Name: "node-a", API: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.CreatePod(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: corev1.PodSpec{NodeName: "node-a",
		Containers: []corev1.Container{{Name: "app", Image: "nginx:1.27"}}}}); err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		at time.Duration
		do func() error
	}{
		{10 * time.Second, n.Kill},
		{15 * time.Second, func() error { return w.SetAPIServerDown(true) }},
		{20 * time.Second, n.Restart},
		{25 * time.Second, func() error { return w.SetAPIServerDown(false) }},
		{time.Minute, func() error { return nil }},
	}
	for _, s := range steps {
		if err := w.RunUntil(s.at); err != nil {
			t.Fatal(err)
		}
		if err := s.do(); err != nil {
			t.Fatal(err)
		}
	}
	tr := w.TraceText()
	for _, want := range []string{
		"00:00:20.000 node-a api list pods  -> connection refused",
		"00:00:25.000 node-a api list pods  -> connection refused",
		"00:00:26.000 node-a api list pods  -> 200",
		"00:00:26.000 node-a source api ADDED default/web",
		"00:00:26.000 node-a api patch pods/status default/web -> 200 Running app=running",
		`00:00:26.300 node-a api create nodes  -> 409 nodes "node-a" already exists`,
	} {
		if !strings.Contains(tr, want+"\n") {
			t.Errorf("trace lacks %q", want)
		}
	}
	if got := strings.Count(tr, "list pods"); got != 7 {
		t.Errorf("%d lists, want 7 (a second apart from 20s, the API server back at 25s)", got)
	}
	if got := strings.Count(tr, "RunPodSandbox"); got != 1 {
		t.Errorf("RunPodSandbox made %d times, want once", got)
	}
	for _, stop := range []string{"StopContainer", "StopPodSandbox"} {
		if strings.Contains(tr, stop) {
			t.Errorf("%s made: the adopted pod was torn down", stop)
		}
	}
	if d := converge.Differences(n.Runtime.State(), map[string][]string{"default/web": {"app"}}); !d.None() {
		t.Errorf("after the restart: %+v", d)
	}
	if t.Failed() {
		t.Log(tr)
	}
}
