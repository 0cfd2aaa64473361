package server

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
)

// /readyz fails with the shutdown check once the server is terminating; /healthz and /livez do not.
func TestReadyzFailsWhenTerminating(t *testing.T) {
	terminating := make(chan struct{})
	e := newEnv(t, func(c *Config) { c.Terminating = terminating })
	if r := e.do(http.MethodGet, "/readyz?verbose", nil); r.code != http.StatusOK || !strings.Contains(string(r.body), "[+]shutdown ok") {
		t.Fatalf("before: %d %s", r.code, r.body)
	}
	close(terminating)
	if r := e.do(http.MethodGet, "/readyz?verbose", nil); r.code != http.StatusInternalServerError || !strings.Contains(string(r.body), "[-]shutdown failed: process is shutting down") {
		t.Fatalf("terminating: %d %s", r.code, r.body)
	}
	for _, path := range []string{"/healthz", "/livez"} {
		if r := e.do(http.MethodGet, path, nil); r.code != http.StatusOK {
			t.Errorf("%s while terminating: %d %s", path, r.code, r.body)
		}
	}
}

// The storage check asks storage once a second at most; the checks in between answer the latest
// probe's result, failure included, and a probe slower than a later one does not replace its result.
func TestStorageCheckProbesOnceASecond(t *testing.T) {
	clk := clock.NewMock()
	clk.Set(start)
	var mu sync.Mutex
	probes := 0
	answer := error(nil)
	p := &storageProbe{clk: clk, every: time.Second, probe: func(context.Context) error {
		mu.Lock()
		defer mu.Unlock()
		probes++
		return answer
	}}
	// Each check answers the latest result known, the one that sends a probe too: it does not wait
	// for storage's answer.
	steps := []struct {
		advance    time.Duration
		answer     error
		wantErr    error
		wantProbes int
		wantAfter  error // once the probe sent, if any, has answered
	}{
		{0, nil, nil, 1, nil},
		{500 * time.Millisecond, errDown, nil, 1, nil}, // storage failed, not asked yet
		{500 * time.Millisecond, errDown, nil, 2, errDown},
		{999 * time.Millisecond, nil, errDown, 2, errDown}, // the latest result, until the next probe
		{time.Millisecond, nil, errDown, 3, nil},
	}
	for i, s := range steps {
		clk.Add(s.advance)
		mu.Lock()
		answer = s.answer
		mu.Unlock()
		if err := p.check(context.Background()); err != s.wantErr {
			t.Errorf("step %d: %v, want %v", i, err, s.wantErr)
		}
		eventually(t, func() bool {
			mu.Lock()
			defer mu.Unlock()
			return probes == s.wantProbes
		})
		eventually(t, func() bool { return p.check(context.Background()) == s.wantAfter })
	}

	// While a probe waits on storage, checks answer at once; a probe still waiting when a later
	// one answers does not replace the later one's result.
	release := make(chan error)
	slow := &storageProbe{clk: clk, every: time.Second, probe: func(context.Context) error { return <-release }}
	if err := slow.check(context.Background()); err != nil {
		t.Errorf("the first check: %v, want nil (no result yet)", err)
	}
	if err := slow.check(context.Background()); err != nil {
		t.Errorf("while the first probe waits: %v, want nil (no result yet)", err)
	}
	clk.Add(time.Second)
	if err := slow.check(context.Background()); err != nil { // sends the second probe
		t.Errorf("while both probes wait: %v, want nil", err)
	}
	release <- nil     // one of the two probes answers ok...
	release <- errDown // ...and the other fails
	eventually(t, func() bool {
		slow.mu.Lock()
		defer slow.mu.Unlock()
		return slow.sent.Equal(clk.Now())
	})
}

var errDown = errors.New("etcd down")
