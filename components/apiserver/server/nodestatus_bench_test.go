package server

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"syscall"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"

	"orch.io/orch/components/apiserver/storage/memory"
	"orch.io/orch/components/authn"
	"orch.io/orch/components/authz"
)

// BenchmarkNodeStatusPostHTTP is a node's status post in protobuf through the whole handler
// chain (filters, routing, decoding, the store, the answer), called in-process as the simulator
// calls it, taking 10,000 nodes in turn as the simulator's largest world does: the server's CPU
// per request, without the client's.
func BenchmarkNodeStatusPostHTTP(b *testing.B) {
	const nodes = 10000
	clk := clock.NewUnyieldingMock()
	clk.Set(start)
	st := memory.New(clk)
	defer func() { _ = st.Close() }()
	stopping := make(chan struct{})
	defer close(stopping)
	h, err := New(Config{
		Clock: clk, Storage: st, EventTTL: time.Hour, Authenticator: authn.Anonymous(), Authorizer: authz.AlwaysAllow(),
		MinRequestTimeout: 30 * time.Minute, BookmarkInterval: time.Minute, Stopping: stopping, Terminating: stopping,
	})
	if err != nil {
		b.Fatal(err)
	}
	scheme := runtime.NewScheme()
	if err := corev1.AddToScheme(scheme); err != nil {
		b.Fatal(err)
	}
	codec := protobuf.NewSerializer(scheme, scheme)
	const pb = "application/vnd.kubernetes.protobuf"
	do := func(method, path string, body []byte) int {
		r := httptest.NewRequestWithContext(context.Background(), method, path, bytes.NewReader(body))
		r.Header.Set("Content-Type", pb)
		r.Header.Set("Accept", pb+", application/json")
		r.Header.Set("User-Agent", "orchlet/v0.0.0-bench")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w.Code
	}
	bodies := make([][]byte, nodes)
	for i := range bodies {
		n := &corev1.Node{TypeMeta: metav1.TypeMeta{Kind: "Node", APIVersion: "v1"}, ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("node-%d", i)}}
		var buf bytes.Buffer
		if err := codec.Encode(n, &buf); err != nil {
			b.Fatal(err)
		}
		if code := do(http.MethodPost, "/api/v1/nodes", buf.Bytes()); code != http.StatusCreated {
			b.Fatalf("creating node %d: %d", i, code)
		}
		now := metav1.NewTime(clk.Now())
		n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastHeartbeatTime: now, Reason: "KubeletReady"}}
		n.Status.NodeInfo = corev1.NodeSystemInfo{KubeletVersion: "v1.34.4", OperatingSystem: "linux", Architecture: "amd64"}
		buf.Reset()
		if err := codec.Encode(n, &buf); err != nil {
			b.Fatal(err)
		}
		bodies[i] = buf.Bytes()
	}
	b.ReportAllocs()
	cpu := processCPU(b)
	i := 0
	for b.Loop() {
		if code := do(http.MethodPut, fmt.Sprintf("/api/v1/nodes/node-%d/status", i), bodies[i]); code != http.StatusOK {
			b.Fatalf("node %d: %d", i, code)
		}
		i = (i + 1) % nodes
	}
	// CPU rather than wall time: the machine is shared, and a loaded one stretches wall time.
	b.ReportMetric(float64((processCPU(b)-cpu).Microseconds())/float64(b.N), "cpu-µs/op")
}

// processCPU is the CPU (user and system) the process has used.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
