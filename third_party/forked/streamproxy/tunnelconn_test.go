package proxy

import (
	"bytes"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	gwebsocket "github.com/gorilla/websocket"
	"k8s.io/client-go/tools/portforward"
)

// sizesListener records the size of every write on the connections it accepts.
type sizesListener struct {
	net.Listener
	mu    sync.Mutex
	sizes []int
}

func (l *sizesListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	return &sizesConn{Conn: c, l: l}, err
}

type sizesConn struct {
	net.Conn
	l *sizesListener
}

func (c *sizesConn) Write(p []byte) (int, error) {
	c.l.mu.Lock()
	c.l.sizes = append(c.l.sizes, len(p))
	c.l.mu.Unlock()
	return c.Conn.Write(p)
}

// The tunnel writes what it is given as frames of at most tunnelFramePayload, each frame's header
// and payload in one write (one TLS record on the client's connection), every byte in order.
func TestTunnelConnWritesAFrameAtOnce(t *testing.T) {
	data := make([]byte, 40_000)
	for i := range data {
		data[i] = byte(i % 251)
	}
	written := make(chan []int, 1)
	srv := httptest.NewUnstartedServer(nil)
	l := &sizesListener{Listener: srv.Listener}
	srv.Listener = l
	srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := tunnelUpgrader(nil).Upgrade(w, r, nil)
		if err != nil {
			t.Error(err)
			return
		}
		defer ws.Close() //nolint:errcheck
		l.mu.Lock()
		before := len(l.sizes)
		l.mu.Unlock()
		conn := newTunnelConn(portforward.NewTunnelingConnection("server", ws), ws)
		if n, err := conn.Write(data); err != nil || n != len(data) {
			t.Errorf("wrote %d of %d bytes: %v", n, len(data), err)
		}
		l.mu.Lock()
		written <- append([]int{}, l.sizes[before:]...)
		l.mu.Unlock()
	})
	srv.Start()
	defer srv.Close()

	client, _, err := gwebsocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(srv.URL, "http"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close() //nolint:errcheck
	var got []byte
	var frames []int
	for len(got) < len(data) {
		kind, msg, err := client.ReadMessage()
		if err != nil || kind != gwebsocket.BinaryMessage {
			t.Fatalf("after %d bytes: message of type %d: %v", len(got), kind, err)
		}
		frames = append(frames, len(msg))
		got = append(got, msg...)
	}
	if !bytes.Equal(got, data) {
		t.Fatal("the bytes read are not the bytes written")
	}
	if want := []int{tunnelFramePayload, tunnelFramePayload, len(data) - 2*tunnelFramePayload}; !slices.Equal(frames, want) {
		t.Errorf("frames of %v bytes, want %v", frames, want)
	}
	if writes, want := <-written, []int{16 << 10, 16 << 10, len(data) - 2*tunnelFramePayload + tunnelFrameHeader}; !slices.Equal(writes, want) {
		t.Errorf("writes of %v bytes, want one per frame, header and payload: %v", writes, want)
	}
}
