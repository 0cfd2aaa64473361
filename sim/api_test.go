package sim

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"runtime"
	"strconv"
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

// apiNodesStory: four API-server-mode nodes, each with a static pod (a mirror pod to create) and a
// pod bound to it through the API, registering and heartbeating at once; what the trace says and
// the uids every object was given.
func apiNodesStory(t testing.TB) string {
	t.Helper()
	w, err := New(Options{Seed: 3, APIServer: true})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = w.Close() }()
	for i := range 4 {
		name := fmt.Sprintf("node-%d", i)
		n, err := w.AddNode(NodeOptions{Name: name, API: true, Args: []string{"--pod-manifest-path=/etc/orch/manifests"}})
		if err != nil {
			t.Fatal(err)
		}
		n.WriteManifest("static.yaml", []byte("apiVersion: v1\nkind: Pod\nmetadata: {name: static}\nspec:\n  containers:\n  - {name: app, image: \"app:1\"}\n"))
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-" + name}, Spec: corev1.PodSpec{NodeName: name,
			Containers: []corev1.Container{{Name: "app", Image: "nginx:1.27"}}}}
		if err := w.CreatePod(pod); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.RunUntil(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	if err := w.DeletePod("default", "web-node-2", nil); err != nil {
		t.Fatal(err)
	}
	if err := w.RunUntil(time.Minute); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	out.WriteString(w.TraceText())
	nodes, err := w.api.admin.CoreV1().Nodes().List(w.ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes.Items {
		fmt.Fprintf(&out, "node %s %s\n", n.Name, n.UID)
	}
	leases, err := w.api.admin.CoordinationV1().Leases("").List(w.ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range leases.Items {
		fmt.Fprintf(&out, "lease %s %s\n", l.Name, l.UID)
	}
	pods, err := w.api.admin.CoreV1().Pods("").List(w.ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		fmt.Fprintf(&out, "pod %s/%s %s %s\n", p.Namespace, p.Name, p.UID, p.Status.Phase)
	}
	return out.String()
}

// Nodes in API-server mode make their requests at once (stepAPIs), yet the trace and every uid
// the API server drew are the same whatever the scheduler does: the creates keep the nodes' order.
func TestAPINodesAtOnceDeterministic(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	want := ""
	for i := range 6 {
		runtime.GOMAXPROCS(1 + 7*(i%2))
		got := apiNodesStory(t)
		if want == "" {
			want = got
			for _, line := range []string{"create pods default/static-node-3", "node node-3 ", "lease node-3 "} {
				if !strings.Contains(got, line) {
					t.Fatalf("the story lacks %q:\n%s", line, got)
				}
			}
		} else if got != want {
			t.Fatalf("run %d (GOMAXPROCS %d) differs from run 0:\n%s", i, runtime.GOMAXPROCS(0), firstDifference(want, got))
		}
	}
}

// The transport's recorder answers as httptest.ResponseRecorder does: the code, the header as
// written with it, Content-Type sniffed when unset, the body, the length a header gives; and a
// closed body's buffer, back in the pool, is not read again.
func TestRecorderAnswersAsResponseRecorder(t *testing.T) {
	for name, h := range map[string]http.HandlerFunc{
		"nothing written": func(http.ResponseWriter, *http.Request) {},
		"a body alone":    func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("<html>hi</html>")) },
		"a code, a type, a body, a header set after": func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/vnd.kubernetes.protobuf")
			w.Header().Set("Content-Length", "3")
			w.WriteHeader(http.StatusConflict)
			w.Header().Set("X-After", "not sent")
			_, _ = w.Write([]byte("abc"))
			w.WriteHeader(http.StatusOK) // ignored
		},
		"created": func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusCreated)
			_, _ = w.Write([]byte(`{}`))
		},
		"ok, written": func(w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(http.StatusOK)
			_, _ = w.Write([]byte(`{}`))
		},
		"unprocessable": func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusUnprocessableEntity) },
		"flushed": func(w http.ResponseWriter, _ *http.Request) {
			w.(http.Flusher).Flush()
			_, _ = w.Write([]byte(`{"kind":"Status"}`))
		},
	} {
		req := httptest.NewRequest(http.MethodGet, "/api/v1/nodes", nil)
		want := httptest.NewRecorder()
		h(want, req)
		rec := newRecorder()
		h(rec, req)
		got, wantResp := rec.result(req), want.Result()
		gotBody, _ := io.ReadAll(got.Body)
		wantBody, _ := io.ReadAll(wantResp.Body)
		if got.StatusCode != wantResp.StatusCode || got.Status != wantResp.Status || !reflect.DeepEqual(got.Header, wantResp.Header) ||
			got.ContentLength != wantResp.ContentLength || string(gotBody) != string(wantBody) {
			t.Errorf("%s: %s %v %d %q, want %s %v %d %q", name, got.Status, got.Header, got.ContentLength, gotBody,
				wantResp.Status, wantResp.Header, wantResp.ContentLength, wantBody)
		}
		_ = got.Body.Close()
		_ = got.Body.Close()
		if n, err := got.Body.Read(make([]byte, 1)); n != 0 || err != io.EOF {
			t.Errorf("%s: a closed body read %d, %v; want nothing", name, n, err)
		}
	}
}

// A heartbeat's answer through the recorder, read and closed as client-go does, takes the
// recorder with its body, its header, the response, and what the handler itself makes (here the
// header's value and entry): main's recorder took one more. Under the race detector the body's
// pooled buffer is made again (a buffer and its array) whenever the detector dropped it.
func TestRecorderAllocations(t *testing.T) {
	limit := 5.0
	if raceDetector {
		limit += 2
	}
	req := httptest.NewRequest(http.MethodPut, "/api/v1/nodes/n1/status", nil)
	body := make([]byte, 4096)
	read := make([]byte, 8192)
	allocs := testing.AllocsPerRun(100, func() {
		rec := newRecorder()
		rec.Header()["Content-Type"] = []string{"application/vnd.orch.protobuf"}
		rec.WriteHeader(http.StatusOK)
		_, _ = rec.Write(body)
		resp := rec.result(req)
		if n, _ := io.ReadFull(resp.Body, read[:len(body)]); n != len(body) {
			t.Fatalf("read %d bytes, want %d", n, len(body))
		}
		_ = resp.Body.Close()
	})
	if allocs > limit {
		t.Errorf("%.0f allocations an answer, want at most %.0f", allocs, limit)
	}
}

// The trace's text of an answer starts with its code, the heartbeats' and every other.
func TestAnswerCode(t *testing.T) {
	w := &World{}
	for _, code := range []int{http.StatusOK, http.StatusCreated, http.StatusNoContent, http.StatusNotFound, http.StatusConflict, http.StatusInternalServerError} {
		if text, _ := answer("configmaps", code, nil, w); text != strconv.Itoa(code) {
			t.Errorf("%d: %q", code, text)
		}
	}
}
