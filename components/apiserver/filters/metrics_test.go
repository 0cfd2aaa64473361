package filters

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/prometheus/client_golang/prometheus"
)

// A code's label is its decimal text, made once for the codes HTTP has and at each use for others.
func TestCodeLabel(t *testing.T) {
	for _, code := range []int{-1, 0, 7, 99, 100, 200, 201, 404, 429, 599, 600, 1000} {
		if got, want := codeLabel(code), strconv.Itoa(code); got != want {
			t.Errorf("codeLabel(%d) = %q, want %q", code, got, want)
		}
	}
	if n := testing.AllocsPerRun(10, func() { _ = codeLabel(200) }); n != 0 {
		t.Errorf("codeLabel(200) allocated %v times", n)
	}
}

// Every request is counted and timed under its own labels, each labels' series found again for
// the next request with them: verbs, groups, resources (a subresource under its resource's), codes and non-resource
// paths, interleaved and repeated.
func TestRequestMetricsPerLabels(t *testing.T) {
	clk := clock.NewMock()
	reg := prometheus.NewRegistry()
	h := WithRequestMetrics(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		clk.Add(time.Duration(len(r.URL.Path)) * time.Millisecond)
		if code, err := strconv.Atoi(r.URL.Query().Get("code")); err == nil {
			w.WriteHeader(code)
		}
	}), clk, reg)
	requests := []struct{ method, path, want string }{
		{"PUT", "/api/v1/nodes/n1/status", `update,,v1,nodes,200`},
		{"PUT", "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/n1", `update,coordination.k8s.io,v1,leases,200`},
		{"PUT", "/api/v1/nodes/n2/status?code=409", `update,,v1,nodes,409`},
		{"GET", "/api/v1/nodes/n1", `get,,v1,nodes,200`},
		{"GET", "/api/v1/nodes", `list,,v1,nodes,200`},
		{"POST", "/api/v1/nodes?code=201", `create,,v1,nodes,201`},
		{"GET", "/healthz", `GET,,,,200`},
		{"POST", "/healthz?code=405", `POST,,,,405`},
		{"PUT", "/api/v1/nodes/n3/status", `update,,v1,nodes,200`},
		{"PUT", "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/n2", `update,coordination.k8s.io,v1,leases,200`},
		{"GET", "/healthz", `GET,,,,200`},
	}
	wantTotal, wantCount, wantSum := map[string]float64{}, map[string]uint64{}, map[string]float64{}
	for round := 0; round < 3; round++ {
		for _, r := range requests {
			h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(r.method, r.path, nil))
			wantTotal[r.want]++
			noCode := r.want[:strings.LastIndex(r.want, ",")]
			wantCount[noCode]++
			wantSum[noCode] += float64(len(strings.Split(r.path, "?")[0])) / 1000
		}
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	gotTotal, gotCount, gotSum := map[string]float64{}, map[string]uint64{}, map[string]float64{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			key := strings.Join([]string{labels["verb"], labels["group"], labels["version"], labels["resource"]}, ",")
			switch f.GetName() {
			case "apiserver_request_total":
				gotTotal[key+","+labels["code"]] = m.GetCounter().GetValue()
			case "apiserver_request_duration_seconds":
				gotCount[key], gotSum[key] = m.GetHistogram().GetSampleCount(), m.GetHistogram().GetSampleSum()
			}
		}
	}
	if len(gotTotal) != len(wantTotal) || len(gotCount) != len(wantCount) {
		t.Errorf("series: got %v and %v, want %v and %v", gotTotal, gotCount, wantTotal, wantCount)
	}
	for k, want := range wantTotal {
		if gotTotal[k] != want {
			t.Errorf("apiserver_request_total{%s} = %v, want %v", k, gotTotal[k], want)
		}
	}
	for k, want := range wantCount {
		if gotCount[k] != want || gotSum[k] < wantSum[k]-1e-9 || gotSum[k] > wantSum[k]+1e-9 {
			t.Errorf("apiserver_request_duration_seconds{%s}: %d samples summing %v, want %d summing %v", k, gotCount[k], gotSum[k], want, wantSum[k])
		}
	}
}

// BenchmarkRequestMetrics is the metrics of a node's status post, around a handler doing nothing.
func BenchmarkRequestMetrics(b *testing.B) {
	h := WithRequestMetrics(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}), clock.NewMock(), prometheus.NewRegistry())
	r := httptest.NewRequest("PUT", "/api/v1/nodes/node-1234/status", nil)
	w := httptest.NewRecorder()
	b.ReportAllocs()
	for b.Loop() {
		h.ServeHTTP(w, r)
	}
}
