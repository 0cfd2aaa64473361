package filters

import (
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/benbjohnson/clock"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/klog/v2"

	"orch.io/orch/components/apiserver/endpoints"
)

// WithRequestTimeout ends a request that is not done within timeout (on the injected clock) with
// Kubernetes' 504 Status, and cancels its context so storage calls stop. A handler still running
// then can no longer write. One that had begun its answer (most often its own answer to the
// cancelled context) is let finish it: orch's handlers write an answer whole, so a begun answer
// is never left half-sent; but one still in a write at the timeout (a client not reading its
// answer) has the write ended, as Kubernetes resets such a stream.
func WithRequestTimeout(next http.Handler, clk clock.Clock, timeout time.Duration) http.Handler {
	if timeout <= 0 {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if exempt(r) {
			next.ServeHTTP(w, r)
			return
		}
		ctx, cancel := clk.WithTimeout(r.Context(), timeout)
		defer cancel()
		tw := &timeoutWriter{w: w}
		done := make(chan any, 1)
		go func() {
			defer func() {
				p := recover()
				if p != nil && tw.expired() {
					// The client has its 504; a late failure is only worth a log line.
					klog.ErrorS(fmt.Errorf("%v", p), "Handler failed after its request timed out", "path", r.URL.Path)
					p = nil
				}
				done <- p
			}()
			growStack(int(r.ContentLength & 1))
			next.ServeHTTP(tw, r.WithContext(ctx))
		}()
		finished := false
		select {
		case p := <-done:
			if p != nil {
				panic(p)
			}
			finished = true
		case <-ctx.Done():
		}
		// A handler that returned with its deadline passed and nothing written timed out all the same.
		if ctx.Err() == nil || r.Context().Err() != nil {
			if !finished {
				<-done // the client left; nothing to answer
			}
			return
		}
		if tw.expire(w) {
			if r.ContentLength != 0 {
				// A handler still reading a body the client never finishes holds the body's
				// lock, which writing the answer's header waits for: its read is ended first.
				// The deadline ends the connection's own read too, which cancels every later
				// request on it, and the body is left part read: the connection is not kept.
				// A request without a body has no read to end, and keeps its connection.
				if r.ProtoMajor == 1 {
					w.Header().Set("Connection", "close")
				}
				_ = http.NewResponseController(w).SetReadDeadline(time.Unix(1, 0))
			}
			err := apierrors.NewTimeoutError(fmt.Sprintf("request did not complete within requested timeout - %v", ctx.Err()), 0)
			err.ErrStatus.Code = http.StatusGatewayTimeout
			endpoints.WriteError(w, r, err)
			return
		}
		if !finished {
			if p := <-done; p != nil {
				panic(p)
			}
		}
	})
}

// timeoutWriter passes a handler's answer through until the request expires, and nothing after.
type timeoutWriter struct {
	w       http.ResponseWriter
	mu      sync.Mutex
	started bool // the handler wrote its status line
	timedUp bool
}

// expire marks the request timed out; false when the handler had already begun answering. A
// handler holding the lock is writing, and may be blocked for ever by a client that does not read
// its answer (holding the answer in memory and the request's place in flight): its write is ended
// by a write deadline in the past on the connection beneath, w, and the client gets no more.
func (t *timeoutWriter) expire(w http.ResponseWriter) bool {
	if !t.mu.TryLock() {
		_ = http.NewResponseController(w).SetWriteDeadline(time.Unix(1, 0))
		t.mu.Lock()
	}
	defer t.mu.Unlock()
	t.timedUp = true
	return !t.started
}

func (t *timeoutWriter) expired() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.timedUp
}

func (t *timeoutWriter) Header() http.Header {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.timedUp {
		return http.Header{}
	}
	return t.w.Header()
}

func (t *timeoutWriter) WriteHeader(code int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.timedUp || t.started {
		return
	}
	t.started = true
	t.w.WriteHeader(code)
}

func (t *timeoutWriter) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.timedUp {
		return 0, http.ErrHandlerTimeout
	}
	if !t.started {
		t.started = true
		t.w.WriteHeader(http.StatusOK)
	}
	return t.w.Write(p)
}

// handlerStack is about the stack a create's handler reaches (routing, strict JSON decoding,
// the etcd client) below the timeout's goroutine.
const handlerStack = 16 << 10

// growStack grows a new goroutine's stack to handlerStack in one copy while it is still shallow:
// left to grow on demand it doubles several times deep in the handler, each time copying and
// adjusting every frame: 5% of the server's CPU under orchload's creates, 2% with this. The
// index comes from the caller so that the compiler, which cannot see it, keeps the whole array
// in the frame; nothing is shared between goroutines.
//
//go:noinline
func growStack(i int) byte {
	var pad [handlerStack]byte
	return pad[i%handlerStack]
}
