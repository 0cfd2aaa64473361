package cacher

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// readsInTurn is a read whose calls each wait for a release of their own, answering how many
// reads had started by then.
type readsInTurn struct {
	mu       sync.Mutex
	started  int
	release  chan struct{}
	canceled chan int // the read's number when its context ends before its release
}

func newReadsInTurn() *readsInTurn {
	return &readsInTurn{release: make(chan struct{}), canceled: make(chan int, 8)}
}

func (r *readsInTurn) read(ctx context.Context, _ struct{}) (int, error) {
	r.mu.Lock()
	r.started++
	n := r.started
	r.mu.Unlock()
	select {
	case <-r.release:
		return n, nil
	case <-ctx.Done():
		r.canceled <- n
		return 0, ctx.Err()
	}
}

func (r *readsInTurn) flights() *flights[struct{}, int] {
	return &flights[struct{}, int]{read: r.read, join: func(struct{}, struct{}) struct{} { return struct{}{} }}
}

// waitWaiting waits until n callers wait for the read after the running one.
func waitWaiting[K, V any](t *testing.T, f *flights[K, V], n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		f.mu.Lock()
		got := 0
		if f.next != nil {
			got = f.next.waiters
		}
		f.mu.Unlock()
		if got == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d callers wait for the next read, want %d", got, n)
		}
		time.Sleep(time.Millisecond)
	}
}

type answer struct {
	n   int
	err error
}

func call(ctx context.Context, f *flights[struct{}, int]) <-chan answer {
	out := make(chan answer, 1)
	go func() {
		n, err := f.do(ctx, struct{}{})
		out <- answer{n, err}
	}()
	return out
}

func get(t *testing.T, ch <-chan answer) answer {
	t.Helper()
	select {
	case a := <-ch:
		return a
	case <-time.After(5 * time.Second):
		t.Fatal("no answer")
	}
	return answer{}
}

// A caller arriving while a read runs is answered by the next read, which every such caller shares:
// no answer was read before its caller asked.
func TestFlightsAnswerFromAReadStartedAfterTheCall(t *testing.T) {
	r := newReadsInTurn()
	f := r.flights()
	first := call(t.Context(), f)
	r.waitStarted(t, 1)
	later := []<-chan answer{call(t.Context(), f), call(t.Context(), f), call(t.Context(), f)}
	waitWaiting(t, f, len(later))
	r.release <- struct{}{}
	if a := get(t, first); a.n != 1 || a.err != nil {
		t.Fatalf("the first caller got %+v, want read 1", a)
	}
	r.release <- struct{}{}
	for i, ch := range later {
		if a := get(t, ch); a.n != 2 || a.err != nil {
			t.Fatalf("later caller %d got %+v, want read 2", i, a)
		}
	}
	if n := r.startedReads(); n != 2 {
		t.Fatalf("%d reads for 4 callers, want 2", n)
	}
}

// A caller that gives up leaves the others their read; a read nobody waits for any more ends, and
// one whose callers all left before it started never starts.
func TestFlightsCallersLeaving(t *testing.T) {
	r := newReadsInTurn()
	f := r.flights()
	stays := call(t.Context(), f)
	r.waitStarted(t, 1)
	ctx, leave := context.WithCancel(t.Context())
	leaves := call(ctx, f)
	waitWaiting(t, f, 1)
	leave()
	if a := get(t, leaves); !errors.Is(a.err, context.Canceled) {
		t.Fatalf("the caller that left got %+v", a)
	}
	waitWaiting(t, f, 0)
	r.release <- struct{}{}
	if a := get(t, stays); a.n != 1 || a.err != nil {
		t.Fatalf("the caller that stayed got %+v", a)
	}

	// Read 2 starts for a caller who then leaves: the read is canceled.
	ctx, leave = context.WithCancel(t.Context())
	gone := call(ctx, f)
	r.waitStarted(t, 2)
	leave()
	get(t, gone)
	select {
	case n := <-r.canceled:
		if n != 2 {
			t.Fatalf("read %d canceled, want 2", n)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a read nobody waits for went on")
	}
	// The next caller gets a read of its own, not the canceled one.
	again := call(t.Context(), f)
	r.release <- struct{}{}
	if a := get(t, again); a.n != 3 || a.err != nil {
		t.Fatalf("after a canceled read: %+v, want read 3", a)
	}
}

func (r *readsInTurn) startedReads() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.started
}

func (r *readsInTurn) waitStarted(t *testing.T, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for r.startedReads() < n {
		if time.Now().After(deadline) {
			t.Fatalf("read %d never started", n)
		}
		time.Sleep(time.Millisecond)
	}
}
