package main

import (
	"bytes"
	"fmt"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"testing"
	"time"
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
			v := tt.r.print(&out)
			if !slices.Equal(v.Problems, tt.want) {
				t.Errorf("problems %q, want %q", v.Problems, tt.want)
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

// The probe process's lines read back as written, its details (with spaces) whole.
func TestProbeLine(t *testing.T) {
	want := probeLine{sent: time.Unix(0, 1764374400123456789), took: 1859 * time.Millisecond, status: "200", details: "connection reused, connection at 0s, request written at 0s, first byte at 1.859s"}
	got, err := parseProbeLine(want.String())
	if err != nil || !got.sent.Equal(want.sent) || got.took != want.took || got.status != want.status || got.details != want.details {
		t.Errorf("got %+v, %v; want %+v", got, err, want)
	}
	failed := probeLine{sent: time.Unix(0, 1), status: `Get "https://127.0.0.1:1/readyz": context deadline exceeded`, details: "new connection"}
	if got, err := parseProbeLine(failed.String()); err != nil || got.status != failed.status {
		t.Errorf("got %+v, %v; want status %q", got, err, failed.status)
	}
	if _, err := parseProbeLine("ready"); err == nil {
		t.Error(`"ready" read as an answer`)
	}
}
