package server

import (
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"
)

func TestProfilingServedWithTheDebuggingHandlers(t *testing.T) {
	tests := []struct {
		name      string
		debugging bool
		path      string
		want      int
		body      string
	}{
		{"index", true, "/debug/pprof/", 200, "goroutine"},
		{"a named profile", true, "/debug/pprof/goroutine?debug=1", 200, "goroutine profile:"},
		{"cmdline", true, "/debug/pprof/cmdline", 200, ""},
		{"without the debugging handlers", false, "/debug/pprof/", 405, "Debug endpoints are disabled."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testConfig()
			cfg.EnableDebuggingHandlers = tt.debugging
			deps := testDeps(t, newClock())
			s := start(t, cfg, deps)
			r := do(t, httpsClient(t, deps.CertDir, nil), "GET", "https://"+s.Addrs().HTTPS+tt.path, "")
			if r.status != tt.want || !strings.Contains(r.body, tt.body) {
				t.Fatalf("GET %s: %d %.200q, want %d containing %q", tt.path, r.status, r.body, tt.want, tt.body)
			}
		})
	}
}

// blockSample is a line of the block profile (debug=1) recording one place that blocked.
var blockSample = regexp.MustCompile(`(?m)^\d+ \d+ @( 0x[0-9a-f]+)+$`)

func TestContentionProfilingRecordsBlocking(t *testing.T) {
	t.Cleanup(func() { runtime.SetBlockProfileRate(0) })
	for _, contention := range []bool{false, true} {
		runtime.SetBlockProfileRate(0)
		cfg := testConfig()
		cfg.EnableDebuggingHandlers = true
		cfg.EnableContentionProfiling = contention
		deps := testDeps(t, newClock())
		s := start(t, cfg, deps)
		// A goroutine blocked on a channel: recorded only while block profiling is on.
		ch := make(chan struct{})
		go func() { time.Sleep(10 * time.Millisecond); close(ch) }()
		<-ch
		r := do(t, httpsClient(t, deps.CertDir, nil), "GET", "https://"+s.Addrs().HTTPS+"/debug/pprof/block?debug=1", "")
		if got := blockSample.MatchString(r.body); r.status != 200 || got != contention {
			t.Fatalf("--contention-profiling=%v: GET /debug/pprof/block: %d, samples %v:\n%.400s", contention, r.status, got, r.body)
		}
	}
}
