package app

import (
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// limitedServer serves "ok" over TLS with at most n handshakes computing at once; computing, when
// set, runs inside each handshake with its place held (as a slow key exchange would).
func limitedServer(t *testing.T, n int, computing func()) (*httptest.Server, *handshakeLimit) {
	t.Helper()
	limit := newHandshakeLimit(n)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") }))
	srv.Listener = limit.listener(srv.Listener)
	srv.TLS = limit.config(&tls.Config{GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
		if computing != nil {
			computing()
		}
		return nil, nil
	}})
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv, limit
}

func get(t *testing.T, c *http.Client, url string) {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || string(body) != "ok" {
		t.Fatalf("GET %s: %d %q", url, resp.StatusCode, body)
	}
}

// waitFor polls cond: the test waits for the server to reach a state, it times nothing.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("never: %s", what)
		}
	}
}

// The handshake after the limit is parked until a place is given back, and meanwhile a request on
// a connection already open is answered.
func TestHandshakeLimitParksTheNextHandshake(t *testing.T) {
	var mu sync.Mutex
	hold := false
	entered := make(chan struct{}, 4)
	release := make(chan struct{})
	srv, limit := limitedServer(t, 1, func() {
		mu.Lock()
		h := hold
		mu.Unlock()
		if h {
			entered <- struct{}{}
			<-release
		}
	})
	probe := srv.Client()
	get(t, probe, srv.URL) // its connection open before the burst

	mu.Lock()
	hold = true
	mu.Unlock()
	done := make(chan error, 2)
	dial := func() {
		c, err := tls.Dial("tcp", srv.Listener.Addr().String(), probe.Transport.(*http.Transport).TLSClientConfig)
		if err == nil {
			c.Close()
		}
		done <- err
	}
	go dial()
	<-entered // the first new handshake computing, its place held
	go dial()
	waitFor(t, "the second new handshake parked", func() bool { return limit.waiting.Load() == 1 })
	select {
	case <-entered:
		t.Fatal("the second handshake computed while the first held the only place")
	default:
	}
	get(t, probe, srv.URL) // answered with one handshake computing and one parked

	close(release)
	for range 2 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "both places given back", func() bool { return len(limit.places) == 0 })
}

// stallingConn is a client's connection that sends its ClientHello and then never sends its next
// flight: a client slow in the middle of its handshake.
type stallingConn struct {
	net.Conn
	writes atomic.Int32
	stall  chan struct{}
}

func (c *stallingConn) Write(p []byte) (int, error) {
	if c.writes.Add(1) > 1 {
		<-c.stall
		return 0, net.ErrClosed
	}
	return c.Conn.Write(p)
}

// A client that stops in the middle of its handshake holds no place: once the server has
// answered its ClientHello, other handshakes go on.
func TestHandshakeLimitIsNotHeldByASlowClient(t *testing.T) {
	srv, limit := limitedServer(t, 1, nil)
	cfg := srv.Client().Transport.(*http.Transport).TLSClientConfig
	raw, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	slow := &stallingConn{Conn: raw, stall: make(chan struct{})}
	defer func() { close(slow.stall); raw.Close() }()
	clientCfg := cfg.Clone()
	clientCfg.ServerName = "127.0.0.1"
	go func() { _ = tls.Client(slow, clientCfg).Handshake() }()
	// The slow client's handshake took the only place; the server's answer written, it gave it back.
	waitFor(t, "the slow client's ClientHello answered", func() bool { return slow.writes.Load() > 1 && len(limit.places) == 0 })
	fresh := &http.Client{Transport: &http.Transport{TLSClientConfig: cfg}}
	get(t, fresh, srv.URL)
}
