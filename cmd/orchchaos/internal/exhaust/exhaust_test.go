package exhaust

import (
	"bufio"
	"bytes"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"orch.io/orch/cmd/orchchaos/internal/eventsapi"
)

// The exhaustion campaign fails on /readyz not answered 200 and on the well-behaved client not
// served; its latencies and memory are figures, never a verdict.
func TestExhaustVerdict(t *testing.T) {
	ms := func(n ...int) []time.Duration {
		var out []time.Duration
		for _, v := range n {
			out = append(out, time.Duration(v)*time.Millisecond)
		}
		return out
	}
	tests := []struct {
		name string
		r    exhaustReport
		want []string
	}{
		{"served, slow", exhaustReport{readyz: ms(5, 900, 3000), served: 3, servedLatencies: ms(10, 20, 5000), rssMax: 1 << 30}, nil},
		{"readyz failed", exhaustReport{readyz: ms(5), readyzFailed: 2, readyzFailures: []string{"503 Service Unavailable at 3s", "EOF at 9s"}, served: 1},
			[]string{"/readyz not answered 200 2 times: 503 Service Unavailable at 3s; EOF at 9s"}},
		{"client failed", exhaustReport{readyz: ms(5), served: 4, failed: 1}, []string{"the well-behaved client failed 1 times"}},
		{"never served", exhaustReport{readyz: ms(5)}, []string{"the well-behaved client was never served"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			problems := tt.r.print(&out)
			if !slices.Equal(problems, tt.want) {
				t.Errorf("problems %q, want %q", problems, tt.want)
			}
			if !strings.Contains(out.String(), "/readyz: ") || !strings.Contains(out.String(), "resident memory") {
				t.Errorf("figures missing:\n%s", out.String())
			}
		})
	}
	// Latencies: percentiles of the sorted answers, and how many were under 100 ms.
	d := ms(1, 2, 3, 50, 150, 2000)
	if pct(d, 50) != 3*time.Millisecond || pct(d, 100) != 2*time.Second || countUnder(d, 100*time.Millisecond) != 4 {
		t.Errorf("pct %v %v, under 100ms %d", pct(d, 50), pct(d, 100), countUnder(d, 100*time.Millisecond))
	}
}

// The runtime's figures are read from a heap profile as the server writes it.
func TestParseHeapStats(t *testing.T) {
	var profile bytes.Buffer
	if err := pprof.Lookup("heap").WriteTo(&profile, 1); err != nil {
		t.Fatal(err)
	}
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	s, err := parseHeapStats(profile.String())
	if err != nil {
		t.Fatal(err)
	}
	if s.heapInuse <= 0 || s.heapIdle < s.heapReleased || s.stack <= 0 || s.sys < s.heapInuse || s.sys > int64(m.Sys)*2 {
		t.Errorf("figures %+v do not agree with the runtime's %d bytes from the system", s, m.Sys)
	}
	if _, err := parseHeapStats("heap profile: 0: 0 [0: 0] @ heap/1048576\n"); err == nil || !strings.Contains(err.Error(), "of the 6 runtime figures found") {
		t.Errorf("a profile without the runtime's figures: %v", err)
	}
}

// The server's own timing of the probe is the difference of its histogram over the window.
func TestNonResourceGETs(t *testing.T) {
	scrape := func(counts ...int) nonResourceGETs {
		var text strings.Builder
		text.WriteString(`apiserver_request_duration_seconds_bucket{group="events.orch.io",resource="events",verb="create",version="v1",le="0.005"} 99` + "\n")
		for i, le := range []string{"0.005", "0.025", "0.1", "+Inf"} {
			fmt.Fprintf(&text, "%s%s\"} %d\n", nonResourceBucket, le, counts[i])
		}
		h, err := parseNonResourceGETs(text.String())
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	got := scrape(110, 190, 198, 200).since(scrape(10, 10, 10, 10))
	if want := "190 answered; within 5 ms 52.6%, 25 ms 94.7%, 100 ms 98.9%"; got != want {
		t.Errorf("since = %q, want %q", got, want)
	}
	if _, err := parseNonResourceGETs("go_goroutines 10\n"); err == nil {
		t.Error("metrics without the histogram: no error")
	}
}

// The server's runtime over a stretch of the window is the difference of two scrapes of /metrics:
// its goroutines' waits to run by the runtime's two largest bounds, its collections and its CPU.
func TestRuntimeFigures(t *testing.T) {
	scrape := func(waits [4]int, cycles int, cpu, gc, assist float64) runtimeFigures {
		var text strings.Builder
		for i, le := range []string{"0.0009175039999999999", "0.010485759999999998", "0.11744051199999998", "+Inf"} {
			fmt.Fprintf(&text, "%s%s\"} %d\n", schedBucket, le, waits[i])
		}
		fmt.Fprintf(&text, "# HELP go_gc_cycles_total_gc_cycles_total Count.\ngo_gc_cycles_total_gc_cycles_total %d\n", cycles)
		fmt.Fprintf(&text, "process_cpu_seconds_total %g\ngo_cpu_classes_gc_total_cpu_seconds_total %g\ngo_cpu_classes_gc_mark_assist_cpu_seconds_total %g\n", cpu, gc, assist)
		f, err := parseRuntime(text.String())
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	got := scrape([4]int{900, 980, 995, 1000}, 7, 3.5, 0.75, 0.25).since(scrape([4]int{90, 100, 100, 100}, 5, 1.25, 0.25, 0.125))
	if want := "900 waits, over 10.5 ms 20, over 117.4 ms 5, 2 collections, CPU 2.25 s (the collector's 0.50 s, assists 0.12 s)"; got != want {
		t.Errorf("since = %q, want %q", got, want)
	}
	if _, err := parseRuntime(schedBucket + "+Inf\"} 3\n"); err == nil || !strings.Contains(err.Error(), "no ") {
		t.Errorf("metrics without the collector's figures: %v", err)
	}
}

// A slow probe is told apart by where its time went: a new connection's handshake, or the answer
// on a connection already open.
func TestProbeTraceDescribe(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)
	ms := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }
	for _, c := range []struct {
		p    probeTrace
		want string
	}{
		{probeTrace{reused: true, gotConn: t0, wrote: t0, firstByte: ms(1859)},
			"connection reused, connection at 0s, request written at 0s, first byte at 1.859s"},
		{probeTrace{handshakeStart: ms(160), handshakeDone: ms(641), gotConn: ms(641), wrote: ms(641), firstByte: ms(1661)},
			"new connection, TLS handshake 160ms to 641ms, connection at 641ms, request written at 641ms, first byte at 1.661s"},
		{probeTrace{handshakeStart: ms(211)},
			"new connection, TLS handshake 211ms to never, connection at never, request written at never, first byte at never"},
	} {
		if got := c.p.describe(t0); got != c.want {
			t.Errorf("got  %s\nwant %s", got, c.want)
		}
	}
}

// The bystanders' lines read back as written, the probe's and the client's apart, their details
// (with spaces) whole, an error spread over lines on one.
func TestBystanderLine(t *testing.T) {
	for _, want := range []bystanderLine{
		{kind: readyzLine, sent: time.Unix(0, 1764374400123456789), took: 1859 * time.Millisecond, status: "200", details: "connection reused, connection at 0s, request written at 0s, first byte at 1.859s"},
		{kind: readyzLine, sent: time.Unix(0, 1), status: `Get "https://127.0.0.1:1/readyz": context deadline exceeded`, details: "new connection"},
		{kind: clientLine, sent: time.Unix(0, 1764374400123456789), took: 12 * time.Millisecond, status: clientOK},
	} {
		got, err := parseBystanderLine(want.String())
		if err != nil || got.kind != want.kind || !got.sent.Equal(want.sent) || got.took != want.took || got.status != want.status || got.details != want.details {
			t.Errorf("got %+v, %v; want %+v", got, err, want)
		}
	}
	failed := bystanderLine{kind: clientLine, sent: time.Unix(0, 2), status: "create good-1: 500 {\n\t\"message\": \"x\"\n}"}
	if got, err := parseBystanderLine(failed.String()); err != nil || got.status != `create good-1: 500 {  "message": "x" }` {
		t.Errorf("got %+v, %v", got, err)
	}
	for _, bad := range []string{"ready", "probe 1 2 200\tx", "readyz x 2 200\tx", "client 1 2"} {
		if _, err := parseBystanderLine(bad); err == nil {
			t.Errorf("%q read as an answer", bad)
		}
	}
}

// The bystanders' process against a real TLS server: nothing before start, then the probe's
// answers on the connection it opened first and the client's creates and reads, one line each,
// read back by the campaign's reader; a refused create is the client's failure, named.
func TestRunBystanders(t *testing.T) {
	var creates atomic.Int32
	ts := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/readyz":
			fmt.Fprint(w, "ok")
		case r.Method == http.MethodPost && r.URL.Path == eventsapi.Path:
			if creates.Add(1) == 1 {
				http.Error(w, "etcd\nunavailable", http.StatusServiceUnavailable)
				return
			}
			w.WriteHeader(http.StatusCreated)
			fmt.Fprint(w, `{"metadata":{"resourceVersion":"7"}}`)
		case r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, eventsapi.Path+"/good-"):
			fmt.Fprint(w, `{}`)
		default:
			http.NotFound(w, r)
		}
	}))
	defer ts.Close()
	ca := filepath.Join(t.TempDir(), "ca.crt")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ts.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- RunBystanders(ts.URL, ca, "", inR, outW); outW.Close() }()
	lines := bufio.NewScanner(outR)
	if !lines.Scan() || lines.Text() != "ready" {
		t.Fatalf("first line %q, want ready", lines.Text())
	}
	if creates.Load() != 0 {
		t.Fatal("the client wrote before start")
	}
	if _, err := io.WriteString(inW, "start\n"); err != nil {
		t.Fatal(err)
	}
	var probes, served, failed []bystanderLine
	err := eachBystanderLine(lines, func(b bystanderLine) {
		switch {
		case b.kind == readyzLine:
			probes = append(probes, b)
		case b.status == clientOK:
			served = append(served, b)
		default:
			failed = append(failed, b)
		}
		if len(probes) == 3 && len(served) >= 2 {
			inW.Close()
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if len(probes) < 3 || len(served) < 2 || len(failed) != 1 {
		t.Fatalf("%d probes, %d served, %d failed; want 3, 2 or more, 1", len(probes), len(served), len(failed))
	}
	for _, p := range probes {
		if p.status != "200" || p.took <= 0 || !strings.HasPrefix(p.details, "connection reused") {
			t.Errorf("probe %+v: want 200 on the connection opened before", p)
		}
	}
	if want := "create good-0: 503 etcd unavailable "; failed[0].status != want {
		t.Errorf("failure %q, want %q", failed[0].status, want)
	}
}
