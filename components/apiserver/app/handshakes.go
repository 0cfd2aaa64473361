package app

import (
	"context"
	"crypto/tls"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
)

// handshakeLimit bounds the TLS handshakes the server computes at once. Thousands of connections
// arriving together (a watch storm's clients each dialling, a fleet reconnecting) would otherwise
// make as many goroutines runnable at once, each with a key exchange and a signature to compute,
// and a request on a connection already open (a /readyz probe, a controller's watch) would wait
// behind all of them in the scheduler's run queue, for seconds on two cores. A handshake takes a
// place once its ClientHello has arrived and gives it back at its next read, when its answer is
// written and it waits for the client: a place is held only while the server computes, never
// while a client is slow, so no client can hold one. The handshakes waiting for a place are parked
// on a channel, not runnable, and take their turns in order of arrival.
type handshakeLimit struct {
	places  chan struct{}
	waiting atomic.Int64 // handshakes parked for a place
}

// handshakesAtOnce is the limit: a few per processor, enough to keep every processor busy with
// handshakes while a burst lasts, few enough that a request already in flight is not queued
// behind them.
func handshakesAtOnce() int { return 4 * runtime.GOMAXPROCS(0) }

func newHandshakeLimit(n int) *handshakeLimit {
	return &handshakeLimit{places: make(chan struct{}, n)}
}

// listener makes every connection l accepts take part in the limit.
func (h *handshakeLimit) listener(l net.Listener) net.Listener {
	return limitedListener{Listener: l, limit: h}
}

// config is cfg with its handshakes limited; cfg's own GetConfigForClient, if any, runs with the
// place held.
func (h *handshakeLimit) config(cfg *tls.Config) *tls.Config {
	cfg = cfg.Clone()
	next := cfg.GetConfigForClient
	cfg.GetConfigForClient = func(hello *tls.ClientHelloInfo) (*tls.Config, error) {
		if c, ok := hello.Conn.(*limitedConn); ok {
			if err := c.take(hello.Context()); err != nil {
				return nil, err
			}
		}
		if next != nil {
			return next(hello)
		}
		return nil, nil
	}
	return cfg
}

type limitedListener struct {
	net.Listener
	limit *handshakeLimit
}

func (l limitedListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &limitedConn{Conn: c, limit: l.limit, closed: make(chan struct{})}, nil
}

// limitedConn is an accepted connection: the place its handshake holds, given back at its next
// read or when it closes.
type limitedConn struct {
	net.Conn
	limit     *handshakeLimit
	held      atomic.Bool
	closed    chan struct{}
	closeOnce sync.Once
}

func (c *limitedConn) take(ctx context.Context) error {
	c.limit.waiting.Add(1)
	defer c.limit.waiting.Add(-1)
	select {
	case c.limit.places <- struct{}{}:
		c.held.Store(true)
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-c.closed:
		return net.ErrClosed
	}
}

func (c *limitedConn) give() {
	if c.held.Load() && c.held.CompareAndSwap(true, false) {
		<-c.limit.places
	}
}

func (c *limitedConn) Read(p []byte) (int, error) {
	c.give()
	return c.Conn.Read(p)
}

func (c *limitedConn) Close() error {
	c.closeOnce.Do(func() { close(c.closed) })
	c.give()
	return c.Conn.Close()
}
