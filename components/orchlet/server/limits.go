package server

import (
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/benbjohnson/clock"
)

// connLimits closes connections that have lived maxAge, or stayed idle (no request in progress)
// for idle; idle 0 means no idle limit. The timers run on the injected clock rather than through
// http.Server's own timeouts so that a simulated clock governs them too.
type connLimits struct {
	clk    clock.Clock
	maxAge time.Duration
	idle   time.Duration

	mu      sync.Mutex
	stopped bool
	conns   map[net.Conn]*connTimers
}

type connTimers struct {
	age  *clock.Timer
	idle *clock.Timer
}

func newConnLimits(clk clock.Clock, maxAge, idle time.Duration) *connLimits {
	return &connLimits{clk: clk, maxAge: maxAge, idle: idle, conns: map[net.Conn]*connTimers{}}
}

// track is the http.Server ConnState hook.
func (l *connLimits) track(c net.Conn, state http.ConnState) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.stopped {
		return
	}
	t := l.conns[c]
	switch state {
	case http.StateNew:
		l.conns[c] = &connTimers{age: l.clk.AfterFunc(l.maxAge, func() { c.Close() })}
	case http.StateActive:
		if t != nil && t.idle != nil {
			t.idle.Stop()
			t.idle = nil
		}
	case http.StateIdle:
		if t != nil && l.idle > 0 {
			if t.idle != nil {
				t.idle.Stop()
			}
			t.idle = l.clk.AfterFunc(l.idle, func() { c.Close() })
		}
	case http.StateHijacked, http.StateClosed:
		if t != nil {
			t.stopAll()
			delete(l.conns, c)
		}
	}
}

func (t *connTimers) stopAll() {
	t.age.Stop()
	if t.idle != nil {
		t.idle.Stop()
	}
}

// stop cancels every timer; the server is closing its connections itself.
func (l *connLimits) stop() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.stopped = true
	for c, t := range l.conns {
		t.stopAll()
		delete(l.conns, c)
	}
}
