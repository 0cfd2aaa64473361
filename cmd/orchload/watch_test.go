package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// A watch the server drops while opening (the connection closed before an answer, as
// kube-apiserver did to a few of 10,000 opened at once) is opened again, and counted; one that
// fails every attempt fails with its error after openAttempts.
func TestWatchOpenIsRetried(t *testing.T) {
	reopenPause = time.Millisecond
	t.Cleanup(func() { reopenPause = time.Second })
	for _, tc := range []struct {
		name         string
		drops        int
		wantReopened int
		wantErr      bool
	}{
		{"opens at once", 0, 0, false},
		{"dropped once", 1, 1, false},
		{"dropped twice", 2, 2, false},
		{"dropped every time", openAttempts, openAttempts - 1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var attempts atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
				if int(attempts.Add(1)) <= tc.drops {
					conn, _, err := rw.(http.Hijacker).Hijack()
					if err == nil {
						conn.Close()
					}
					return
				}
				rw.Header().Set("Content-Type", "application/json")
				fmt.Fprintln(rw, `{"type":"ADDED","object":{"metadata":{"name":"e1"}}}`)
			}))
			defer srv.Close()
			w := &watcher{got: map[string]time.Time{}, full: make(chan struct{})}
			opened := false
			c := srv.Client()
			c.Transport.(*http.Transport).DisableKeepAlives = true // each attempt on a connection of its own
			w.run(t.Context(), c, srv.URL, 1, func() { opened = true })
			if !opened {
				t.Fatal("opened was never called")
			}
			if w.reopened != tc.wantReopened || int(attempts.Load()) != min(tc.drops+1, openAttempts) {
				t.Errorf("reopened %d after %d attempts, want %d after %d", w.reopened, attempts.Load(), tc.wantReopened, min(tc.drops+1, openAttempts))
			}
			if tc.wantErr {
				if w.err == nil || !strings.Contains(w.err.Error(), "EOF") {
					t.Errorf("a watch dropped every time: err %v, want the last attempt's EOF", w.err)
				}
				return
			}
			if w.err != nil || len(w.got) != 1 {
				t.Errorf("err %v, %d events read, want the one event", w.err, len(w.got))
			}
		})
	}
}
