package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"k8s.io/client-go/tools/remotecommand"
)

// This file is orch's, not forked: fuzz targets for the input the stream files read from the
// network.

// maxFrameTime flags an input that makes framing crawl: a few kilobytes of frames take
// microseconds, so seconds mean a hang in the making.
const maxFrameTime = 5 * time.Second

// FuzzTunnelResponse writes arbitrary bytes, cut into writes where the fuzzer says, as the upstream
// SPDY answer that the port-forward tunnel reads before it upgrades its WebSocket: it never panics,
// and once a response head parses, every byte after it reaches the tunnelled connection once, in
// order, and the head reaches the upgrade whole.
func FuzzTunnelResponse(f *testing.F) {
	f.Add([]byte(responseHeadersAndBody), []byte{3, 40, 1})
	f.Add([]byte(responseHeaders), []byte{})
	f.Add([]byte("HTTP/1.1 101 Switching Protocols\n\nbody"), []byte{1, 1, 1, 1})
	f.Add([]byte("HTTP/1.1 400 Bad Request\r\nContent-Length: 3\r\n\r\nabc"), []byte{10})
	f.Add([]byte("HTTP/1.1 101\r\nX: \xff\r\n\n\r\n\n\n"), []byte{2})
	f.Fuzz(func(t *testing.T, data, cuts []byte) {
		watchdog := time.AfterFunc(maxFrameTime, func() { panic(fmt.Sprintf("framing still running after %v on %q", maxFrameTime, data)) })
		defer watchdog.Stop()
		init := &mockConnInitializer{mockConn: &mockConn{}, initializeWriteConn: &mockConn{}}
		hic := &headerInterceptingConn{initializableConn: init}
		rest := data
		for i := 0; len(rest) > 0; i++ {
			n := len(rest)
			if i < len(cuts) && int(cuts[i]) > 0 && int(cuts[i]) < n {
				n = int(cuts[i])
			}
			w, err := hic.Write(rest[:n])
			if err != nil {
				if init.resp != nil && hic.initializeErr == nil {
					t.Fatalf("write failed after the head parsed: %v", err)
				}
				return
			}
			if w != n {
				t.Fatalf("wrote %d of %d bytes without an error", w, n)
			}
			rest = rest[n:]
		}
		if init.resp == nil {
			return // no complete head yet: nothing may have gone through
		}
		head := init.initializeWriteConn.written
		if !bytes.HasPrefix(data, head) || (!bytes.HasSuffix(head, lfCRLF) && !bytes.HasSuffix(head, lfLF)) {
			t.Fatalf("the head handed to the upgrade, %q, is not the input's up to its first blank line", head)
		}
		if body := init.mockConn.written; !bytes.Equal(body, data[len(head):]) {
			t.Fatalf("after the head %q the connection got %q, the input had %q", head, body, data[len(head):])
		}
	})
}

// FuzzResizeEvents reads arbitrary bytes as a WebSocket exec's resize channel: the reader never
// panics or hangs, ends its channel, and hands on exactly the sizes the stream holds before its
// first undecodable one.
func FuzzResizeEvents(f *testing.F) {
	f.Add([]byte(`{"Width":80,"Height":24}{"Width":120,"Height":40}`))
	f.Add([]byte(`{"Width":80,"Height":24} {"Width":-1}`))
	f.Add([]byte(`{"Width":1e99}`))
	f.Add([]byte(`[1,2]{"Width":1}`))
	f.Add([]byte(`{"width":3,"height":4}` + "\n" + `{"Height":65535}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		watchdog := time.AfterFunc(maxFrameTime, func() { panic(fmt.Sprintf("resize events still read after %v on %q", maxFrameTime, data)) })
		defer watchdog.Stop()
		var want []remotecommand.TerminalSize
		dec := json.NewDecoder(bytes.NewReader(data))
		for {
			var s remotecommand.TerminalSize
			if err := dec.Decode(&s); err != nil {
				break
			}
			want = append(want, s)
		}
		ch := make(chan remotecommand.TerminalSize)
		go handleResizeEvents(context.Background(), bytes.NewReader(data), ch)
		var got []remotecommand.TerminalSize
		for s := range ch {
			got = append(got, s)
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("sizes %v, the stream holds %v", got, want)
		}
	})
}
