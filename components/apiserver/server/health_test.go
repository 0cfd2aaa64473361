package server

import (
	"context"
	"errors"
	"net/http"
	"strings"
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
	var probes int
	answer := error(nil)
	p := &storageProbe{clk: clk, every: time.Second, probe: func(context.Context) error { probes++; return answer }}
	steps := []struct {
		advance    time.Duration
		answer     error
		wantProbes int
		wantErr    error
	}{
		{0, nil, 1, nil},
		{500 * time.Millisecond, errDown, 1, nil}, // storage failed, not asked yet
		{500 * time.Millisecond, errDown, 2, errDown},
		{999 * time.Millisecond, nil, 2, errDown}, // the latest result, until the next probe
		{time.Millisecond, nil, 3, nil},
	}
	for i, s := range steps {
		clk.Add(s.advance)
		answer = s.answer
		if err := p.check(context.Background()); err != s.wantErr || probes != s.wantProbes {
			t.Errorf("step %d: %v after %d probes, want %v after %d", i, err, probes, s.wantErr, s.wantProbes)
		}
	}

	// A probe still waiting on storage when a later one answers: the later one's result stays.
	release := make(chan error)
	slow := &storageProbe{clk: clk, every: time.Second, probe: func(context.Context) error { return <-release }}
	done := make(chan error)
	go func() { done <- slow.check(context.Background()) }()
	eventually(t, func() bool {
		slow.mu.Lock()
		defer slow.mu.Unlock()
		return !slow.next.IsZero()
	})
	if err := slow.check(context.Background()); err != nil {
		t.Errorf("while the first probe waits: %v, want nil (no result yet)", err)
	}
	clk.Add(time.Second)
	go func() { done <- slow.check(context.Background()) }()
	release <- nil // one of the two probes answers ok...
	<-done
	release <- errDown // ...and the other fails
	<-done
	slow.mu.Lock()
	latestSent := slow.sent
	slow.mu.Unlock()
	if !latestSent.Equal(clk.Now()) {
		t.Errorf("the result kept is of the probe sent at %v, want the latest, sent at %v", latestSent, clk.Now())
	}
}

var errDown = errors.New("etcd down")
