package server

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"
)

// upgradeBackend stands in for the runtime's streaming server: it switches protocols, writes the
// path and query it was asked with on a line, then echoes every byte.
func upgradeBackend(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Upgrade") == "" {
			http.Error(w, "upgrade only", http.StatusBadRequest)
			return
		}
		conn, rw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		defer conn.Close()
		rw.WriteString("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: " + r.Header.Get("Upgrade") + "\r\n\r\n")
		rw.WriteString(r.URL.Path + "?" + r.URL.RawQuery + "\n")
		rw.Flush()
		io.Copy(conn, rw)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// upgrade sends an upgrading request over TLS and answers the response and the connection.
func upgrade(t *testing.T, addr, method, path string, header http.Header) (*http.Response, net.Conn, *bufio.Reader) {
	t.Helper()
	conn, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	req, _ := http.NewRequest(method, "https://"+addr+path, nil)
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", "SPDY/3.1")
	for k, v := range header {
		req.Header[k] = v
	}
	if err := req.Write(conn); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, req)
	if err != nil {
		t.Fatal(err)
	}
	return resp, conn, br
}

// The streaming paths proxy the upgraded connection to the URL the runtime answers, with the
// streams the query asks for, both ways.
func TestStreamsProxied(t *testing.T) {
	backend := upgradeBackend(t)
	deps := testDeps(t, newClock())
	deps.Streams = &fakeStreams{backend: backend.URL}
	s := start(t, testConfig(), deps)

	for _, tc := range []struct {
		method, path, want string
	}{
		{"POST", "/exec/default/web/nginx?command=ls&command=-l&input=1&output=1&tty=1",
			"/exec?" + url.Values{"cmd": {"ls", "-l"}, "opts": {"{Stdin:true Stdout:true Stderr:false TTY:true}"}}.Encode()},
		{"GET", "/exec/default/web/uid-web/nginx?command=true&error=1",
			"/exec?" + url.Values{"cmd": {"true"}, "opts": {"{Stdin:false Stdout:false Stderr:true TTY:false}"}}.Encode()},
		{"POST", "/attach/default/web/nginx?output=1&error=1",
			"/attach?" + url.Values{"opts": {"{Stdin:false Stdout:true Stderr:true TTY:false}"}}.Encode()},
		{"POST", "/portForward/default/web", "/portforward?" + url.Values{"ports": {"[]"}}.Encode()},
	} {
		resp, conn, br := upgrade(t, s.Addrs().HTTPS, tc.method, tc.path, nil)
		if resp.StatusCode != http.StatusSwitchingProtocols {
			t.Fatalf("%s %s: %s", tc.method, tc.path, resp.Status)
		}
		line, err := br.ReadString('\n')
		if err != nil || strings.TrimSpace(line) != tc.want {
			t.Errorf("%s %s reached %q, %v; want %q", tc.method, tc.path, line, err, tc.want)
		}
		io.WriteString(conn, "ping\n")
		if echo, err := br.ReadString('\n'); err != nil || echo != "ping\n" {
			t.Errorf("%s %s: echo %q, %v", tc.method, tc.path, echo, err)
		}
	}

	// Over WebSocket the ports are in the query; the runtime's refusal is answered as the kubelet
	// answers it.
	resp, _, _ := upgrade(t, s.Addrs().HTTPS, "GET", "/portForward/default/web?port=9", http.Header{"Upgrade": {"websocket"}})
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
		t.Errorf("refused port-forward: %s, Retry-After %q; want 429 with Retry-After", resp.Status, resp.Header.Get("Retry-After"))
	}
	resp, _, _ = upgrade(t, s.Addrs().HTTPS, "GET", "/portForward/default/web?port=http", http.Header{"Upgrade": {"websocket"}})
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("port-forward to port \"http\": %s, want 400", resp.Status)
	}
}

// A stream with no byte either way for --streaming-connection-idle-timeout is closed; traffic
// keeps it open.
func TestStreamIdleTimeout(t *testing.T) {
	backend := upgradeBackend(t)
	clk := newClock()
	deps := testDeps(t, clk)
	deps.Streams = &fakeStreams{backend: backend.URL}
	cfg := testConfig()
	cfg.StreamingConnectionIdleTimeout.Duration = time.Minute
	s := start(t, cfg, deps)

	resp, conn, br := upgrade(t, s.Addrs().HTTPS, "POST", "/exec/default/web/nginx?command=sh&input=1&output=1", nil)
	if resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatal(resp.Status)
	}
	br.ReadString('\n')
	for range 3 {
		clk.Add(40 * time.Second)
		io.WriteString(conn, "still here\n")
		if echo, err := br.ReadString('\n'); err != nil || echo != "still here\n" {
			t.Fatalf("a stream in use was closed: %q, %v", echo, err)
		}
	}
	clk.Add(61 * time.Second)
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	if b, err := br.ReadByte(); err == nil {
		t.Fatalf("an idle stream stayed open: read %q", b)
	} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatal("an idle stream stayed open past the timeout")
	}
}

// writesConn records the size of each write made on it.
type writesConn struct {
	net.Conn
	sizes []int
	got   []byte
}

func (c *writesConn) Write(p []byte) (int, error) {
	c.sizes = append(c.sizes, len(p))
	c.got = append(c.got, p...)
	return len(p), nil
}

// The runtime's side of a stream reaches the client in writes of at most streamRecord (one TLS
// record each, and one WebSocket frame in one record at the API server), every byte in order.
func TestStreamCopiedInRecords(t *testing.T) {
	data := make([]byte, 100_000)
	for i := range data {
		data[i] = byte(i % 251)
	}
	raw := &writesConn{}
	conn := newIdleConn(raw, newClock(), time.Minute)
	defer conn.age.Stop()
	n, err := io.Copy(conn, struct{ io.Reader }{bytes.NewReader(data)})
	if err != nil || n != int64(len(data)) || !bytes.Equal(raw.got, data) {
		t.Fatalf("copied %d of %d bytes, equal %v: %v", n, len(data), bytes.Equal(raw.got, data), err)
	}
	for _, size := range raw.sizes {
		if size > streamRecord {
			t.Fatalf("a write of %d bytes, more than a record's %d: %v", size, streamRecord, raw.sizes)
		}
	}
	if len(raw.sizes) != (len(data)+streamRecord-1)/streamRecord {
		t.Errorf("%d writes for %d bytes, want full records: %v", len(raw.sizes), len(data), raw.sizes)
	}
}
