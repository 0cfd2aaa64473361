package filters

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A request still running at --request-timeout is answered 504 with Kubernetes' Status and its
// context cancelled; watches are not timed out this way.
func TestRequestTimeout(t *testing.T) {
	clk := clock.NewMock()
	h := newHeld()
	cancelled := make(chan struct{}, 1)
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r)
		if r.Context().Err() != nil {
			cancelled <- struct{}{}
		}
	})
	srv := httptest.NewServer(WithRequestTimeout(handler, clk, time.Minute))
	defer srv.Close()

	type result struct {
		code int
		body string
		err  error
	}
	done := make(chan result, 1)
	go func() {
		code, _, body, err := fetch(srv.Client(), http.MethodGet, srv.URL+"/apis/events.orch.io/v1/events")
		done <- result{code, body, err}
	}()
	<-h.entered
	clk.Add(59 * time.Second)
	select {
	case r := <-done:
		t.Fatalf("answered %d before the timeout", r.code)
	case <-time.After(50 * time.Millisecond):
	}
	clk.Add(time.Second)
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	var status metav1.Status
	if err := json.Unmarshal([]byte(r.body), &status); err != nil {
		t.Fatalf("504 body %q: %v", r.body, err)
	}
	if r.code != http.StatusGatewayTimeout || status.Code != http.StatusGatewayTimeout || status.Reason != metav1.StatusReasonTimeout ||
		status.Message != "Timeout: request did not complete within requested timeout - context deadline exceeded" {
		t.Fatalf("timed out: %d %+v", r.code, status)
	}
	select {
	case <-cancelled:
	case <-time.After(5 * time.Second):
		t.Fatal("the handler's context was not cancelled")
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/apis/events.orch.io/v1/events?watch=true", nil)
	go func() {
		if resp, err := srv.Client().Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	<-h.entered
	clk.Add(2 * time.Minute)
	select {
	case <-cancelled:
		t.Fatal("a watch was timed out")
	case <-time.After(50 * time.Millisecond):
	}
	close(h.release)
}

// An answer the client never reads does not hold the handler past the timeout: its blocked write
// is ended, so the answer's memory and its place in flight are given back.
func TestRequestTimeoutEndsAWriteTheClientDoesNotRead(t *testing.T) {
	clk := clock.NewMock()
	writing, returned := make(chan struct{}), make(chan error, 1)
	chunk := make([]byte, 1<<20)
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(writing)
		for {
			if _, err := w.Write(chunk); err != nil {
				returned <- err
				return
			}
		}
	})
	srv := httptest.NewServer(WithRequestTimeout(handler, clk, time.Minute))
	t.Cleanup(srv.Close) // after sendRaw's connection is closed
	sendRaw(t, srv, "GET /api/v1/namespaces/default/configmaps HTTP/1.1\r\nHost: x\r\n\r\n")
	<-writing
	// The kernel's buffers fill; the handler is then blocked in a write.
	time.Sleep(200 * time.Millisecond)
	select {
	case err := <-returned:
		t.Fatalf("the handler returned before the timeout: %v", err)
	default:
	}
	clk.Add(time.Minute)
	select {
	case err := <-returned:
		if err == nil {
			t.Fatal("no write error")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the handler is still writing to a client that does not read, past the timeout")
	}
}

// A client that never finishes its body is answered 504 at the timeout all the same: the
// handler's read of the body is ended, and the answer is not held up behind it.
func TestRequestTimeoutAnswersABodyNeverFinished(t *testing.T) {
	clk := clock.NewMock()
	reading := make(chan struct{})
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(reading)
		_, _ = io.ReadAll(r.Body)
	})
	srv := httptest.NewServer(WithRequestTimeout(handler, clk, time.Minute))
	t.Cleanup(srv.Close)
	conn := sendRaw(t, srv, "POST /api/v1/namespaces/default/configmaps HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n{")
	<-reading
	clk.Add(time.Minute)
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no answer to a body never finished: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusGatewayTimeout {
		t.Fatalf("answered %d, want 504", resp.StatusCode)
	}
}

// sendRaw writes request, as given, on a connection of its own to srv, closed at the test's end.
func sendRaw(t *testing.T, srv *httptest.Server, request string) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	if _, err := io.WriteString(conn, request); err != nil {
		t.Fatal(err)
	}
	return conn
}

// A connection kept alive after a 504 serves its next request with a live context: ending a
// handler's body read must not end the connection's own read, which would cancel every later
// request on it. A request with a body is answered with the connection closed, since its body
// was left part read.
func TestRequestTimeoutLeavesTheConnectionUsable(t *testing.T) {
	clk := clock.NewMock()
	h := newHeld()
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/livez" {
			if err := r.Context().Err(); err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
			w.WriteHeader(http.StatusOK)
			return
		}
		h.ServeHTTP(w, r)
	})
	srv := httptest.NewServer(WithRequestTimeout(handler, clk, time.Minute))
	t.Cleanup(srv.Close)
	conn := sendRaw(t, srv, "")
	br := bufio.NewReader(conn)
	read := func() *http.Response {
		t.Helper()
		_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	// The connection's read is woken by the runtime at its own pace: enough rounds that a race
	// lost once in a dozen is lost here.
	for i := 0; i < 40; i++ {
		if _, err := io.WriteString(conn, "GET /api/v1/namespaces/default/configmaps HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		<-h.entered
		clk.Add(time.Minute)
		if resp := read(); resp.StatusCode != http.StatusGatewayTimeout || resp.Close {
			t.Fatalf("round %d: timed out with %d, connection closed %v", i, resp.StatusCode, resp.Close)
		}
		if _, err := io.WriteString(conn, "GET /livez HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		if resp := read(); resp.StatusCode != http.StatusOK {
			t.Fatalf("round %d: the next request on the connection answered %d", i, resp.StatusCode)
		}
	}

	if _, err := io.WriteString(conn, "POST /api/v1/namespaces/default/configmaps HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n{"); err != nil {
		t.Fatal(err)
	}
	<-h.entered
	clk.Add(time.Minute)
	if resp := read(); resp.StatusCode != http.StatusGatewayTimeout || !resp.Close {
		t.Fatalf("a body left part read: %d, connection closed %v", resp.StatusCode, resp.Close)
	}
}
