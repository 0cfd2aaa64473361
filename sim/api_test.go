package sim

import (
	"runtime"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// apiStory: a node registers with the world's API server, a pod is created bound to it and runs,
// the API server goes away for a minute and comes back, the pod is deleted through the API.
func apiStory(t testing.TB, seed int64) (string, *World) {
	t.Helper()
	w, err := New(Options{Seed: seed, APIServer: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Close() })
	if _, err := w.AddNode(NodeOptions{Name: "node-a", API: true}); err != nil {
		t.Fatal(err)
	}
	if err := w.RunUntil(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: corev1.PodSpec{NodeName: "node-a",
		Containers: []corev1.Container{{Name: "app", Image: "nginx:1.27"}}}}
	if err := w.CreatePod(pod); err != nil {
		t.Fatal(err)
	}
	if err := w.RunUntil(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	if err := w.SetAPIServerDown(true); err != nil {
		t.Fatal(err)
	}
	if err := w.RunUntil(90 * time.Second); err != nil {
		t.Fatal(err)
	}
	if err := w.SetAPIServerDown(false); err != nil {
		t.Fatal(err)
	}
	if err := w.RunUntil(100 * time.Second); err != nil {
		t.Fatal(err)
	}
	if err := w.DeletePod("default", "web", nil); err != nil {
		t.Fatal(err)
	}
	if err := w.RunUntil(140 * time.Second); err != nil {
		t.Fatal(err)
	}
	return w.TraceText(), w
}

// The node registers, posts its status and renews its lease every 10s from the registration, runs
// the pod created for it and posts its status; while the API server is down its requests fail and
// the pod keeps running; once it is back the status and lease catch up, and a pod deleted through
// the API is stopped and its deletion confirmed.
func TestAPIStory(t *testing.T) {
	tr, w := apiStory(t, 1)
	for _, want := range []string{
		"00:00:00.000 node-a api create nodes node-a -> 201 Ready=True since 00:00:00.000",
		"00:00:00.000 node-a api create leases orch-node-lease/node-a -> 201 renewed 00:00:00.000",
		"00:00:10.000 node-a api update nodes/status node-a -> 200 Ready=True since 00:00:00.000",
		"00:00:20.000 node-a api update leases orch-node-lease/node-a -> 200 renewed 00:00:20.000",
		"00:00:05.000 node-a source api ADDED default/web",
		"00:00:05.000 node-a api patch pods/status default/web -> 200 Running app=running",
		"00:00:40.000 node-a api update leases orch-node-lease/node-a -> connection refused",
		"00:01:40.000 node-a api update leases orch-node-lease/node-a -> 200 renewed 00:01:40.000",
		"00:01:40.000 node-a api update nodes/status node-a -> 200 Ready=True since 00:00:00.000",
		"00:01:40.000 node-a api delete pods default/web -> 200",
		"00:01:40.000 node-a pod default/web gone",
		"00:01:40.000 node-a source api DELETED default/web",
	} {
		if !strings.Contains(tr, want) {
			t.Errorf("trace lacks %q", want)
		}
	}
	for _, absent := range []string{"00:01:00.000 node-a pod default/web gone", "00:00:50.000 node-a api * -> 200"} {
		if strings.Contains(tr, absent) {
			t.Errorf("trace has %q", absent)
		}
	}
	counts := w.APIRequestCounts()
	// Leases: created at 0s, renewed at 10s..140s (14), of which 6 (40s..90s) were refused.
	if got := counts["update leases"]; got != 14 {
		t.Errorf("update leases: %d requests, want 14", got)
	}
	if t.Failed() {
		t.Log(tr)
	}
}

// An API-server world gives the same bytes whatever the scheduler does.
func TestAPIDeterministic(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	want := ""
	for i := range 6 {
		runtime.GOMAXPROCS(1 + 7*(i%2))
		got, _ := apiStory(t, 1)
		if want == "" {
			want = got
		} else if got != want {
			t.Fatalf("run %d differs from run 0:\n%s", i, firstDifference(want, got))
		}
	}
}
