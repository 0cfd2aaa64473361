package server

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// notifyingClock reports every AfterFunc, so that a test advances the clock only once the server
// has armed the timer it is about.
type notifyingClock struct {
	*clock.Mock
	armed chan time.Duration
}

func (c *notifyingClock) AfterFunc(d time.Duration, f func()) *clock.Timer {
	timer := c.Mock.AfterFunc(d, f)
	c.armed <- d
	return timer
}

func (c *notifyingClock) waitArmed(t *testing.T, d time.Duration) {
	t.Helper()
	select {
	case got := <-c.armed:
		if got != d {
			t.Fatalf("timer armed for %v, want %v", got, d)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("no timer armed for %v", d)
	}
}

type rawConn struct {
	conn net.Conn
	r    *bufio.Reader
}

func (c *rawConn) get(t *testing.T) {
	t.Helper()
	if _, err := io.WriteString(c.conn, "GET /healthz HTTP/1.1\r\nHost: node\r\n\r\n"); err != nil {
		t.Fatalf("writing a request: %v", err)
	}
	c.conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	resp, err := http.ReadResponse(c.r, nil)
	if err != nil {
		t.Fatalf("reading the response: %v", err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
}

// open reports whether the server still holds the connection: a read either times out (open)
// or ends (closed by the server).
func (c *rawConn) open(t *testing.T, wait time.Duration) bool {
	t.Helper()
	c.conn.SetReadDeadline(time.Now().Add(wait))
	_, err := c.r.ReadByte()
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded):
		return true
	case err != nil:
		return false
	}
	t.Fatal("unexpected data from the server")
	return false
}

func TestConnectionLimits(t *testing.T) {
	const idle = time.Minute
	tests := []struct {
		name  string
		idle  time.Duration
		steps func(t *testing.T, clk *notifyingClock, c *rawConn)
	}{
		{
			name: "idle connection closed after the idle timeout; a request restarts it",
			idle: idle,
			steps: func(t *testing.T, clk *notifyingClock, c *rawConn) {
				c.get(t)
				clk.waitArmed(t, idle)
				clk.Add(idle - time.Second)
				c.get(t) // active again: the idle timer starts over
				clk.waitArmed(t, idle)
				clk.Add(idle - time.Second)
				if !c.open(t, 100*time.Millisecond) {
					t.Fatal("closed before the idle timeout since the last request")
				}
				clk.Add(time.Second)
				if c.open(t, 5*time.Second) {
					t.Fatal("still open after the idle timeout")
				}
			},
		},
		{
			name: "no connection lives more than four hours",
			steps: func(t *testing.T, clk *notifyingClock, c *rawConn) {
				c.get(t)
				clk.Add(MaxConnectionAge - time.Second)
				c.get(t)
				if !c.open(t, 100*time.Millisecond) {
					t.Fatal("closed before four hours")
				}
				clk.Add(time.Second)
				if c.open(t, 5*time.Second) {
					t.Fatal("still open after four hours")
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := &notifyingClock{Mock: newClock(), armed: make(chan time.Duration, 100)}
			cfg := testConfig()
			cfg.EnableServer, cfg.HealthzPort = false, 0
			cfg.StreamingConnectionIdleTimeout = metav1.Duration{Duration: tt.idle}
			s := start(t, cfg, testDeps(t, clk))
			conn, err := net.Dial("tcp", s.Addrs().ReadOnly)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			c := &rawConn{conn: conn, r: bufio.NewReader(conn)}
			clk.waitArmed(t, MaxConnectionAge) // armed when the server accepts the connection
			tt.steps(t, clk, c)
		})
	}
}
