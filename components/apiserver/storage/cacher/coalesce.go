package cacher

import (
	"context"
	"sync"
)

// flights coalesces one kind of store read. A read in flight answers every caller that arrived
// before it started; a caller arriving while it runs waits for the next read, which starts as soon
// as that one ends and answers everyone who arrived meanwhile. Every answer is thus read after its
// caller arrived, so a linearizable read stays one, and a storm of callers costs the store a read
// per read's duration rather than a read each.
type flights[K, V any] struct {
	read func(ctx context.Context, key K) (V, error)
	// join merges a waiting caller's key into the next read's (the oldest revision of a batch of
	// compaction probes); the read's answer must hold for every key merged into it.
	join func(next, key K) K

	mu      sync.Mutex
	running *flight[K, V]
	next    *flight[K, V]
}

// flight is one read and the callers waiting for it.
type flight[K, V any] struct {
	key     K
	ctx     context.Context // not any one caller's: it ends only when every waiter has gone
	cancel  context.CancelFunc
	waiters int
	done    chan struct{}
	val     V
	err     error
}

// do answers key from a read started after the call. It returns ctx's error if ctx ends first.
func (f *flights[K, V]) do(ctx context.Context, key K) (V, error) {
	f.mu.Lock()
	fl := f.next
	switch {
	case f.running == nil:
		fl = newFlight[K, V](ctx, key)
		f.running = fl
		go f.run(fl)
	case fl == nil || fl.waiters == 0: // none waits, or all who did have gone and ended it
		fl = newFlight[K, V](ctx, key)
		f.next = fl
	default:
		fl.key = f.join(fl.key, key)
	}
	fl.waiters++
	f.mu.Unlock()
	select {
	case <-fl.done:
		return fl.val, fl.err
	case <-ctx.Done():
		f.mu.Lock()
		if fl.waiters--; fl.waiters == 0 {
			fl.cancel() // nobody wants its answer any more
		}
		f.mu.Unlock()
		var zero V
		return zero, ctx.Err()
	}
}

// newFlight makes a read for key whose context carries the first caller's values (its trace)
// but not its end.
func newFlight[K, V any](ctx context.Context, key K) *flight[K, V] {
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	return &flight[K, V]{key: key, ctx: rctx, cancel: cancel, done: make(chan struct{})}
}

// run reads for fl, then starts the read of those who arrived meanwhile.
func (f *flights[K, V]) run(fl *flight[K, V]) {
	for fl != nil {
		f.mu.Lock()
		key := fl.key // no caller joins a running read
		f.mu.Unlock()
		fl.val, fl.err = f.read(fl.ctx, key)
		fl.cancel()
		close(fl.done)
		f.mu.Lock()
		fl, f.next = f.next, nil
		if fl != nil && fl.waiters == 0 {
			fl = nil // everyone who waited for it has gone
		}
		f.running = fl
		f.mu.Unlock()
	}
}
