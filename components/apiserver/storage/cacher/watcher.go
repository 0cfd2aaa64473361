package cacher

import (
	"context"
	"strings"
	"sync"

	"orch.io/orch/components/apiserver/storage"
)

// handOver is how many changes a watcher's channel holds: the cache hands changes over into it
// directly, and a watcher gets a goroutine of its own only while its reader lags behind that.
const handOver = 16

// watcher is one client's channel of changes. The cache sends into it without blocking; what does
// not fit waits in a queue that a goroutine of the watcher's own delivers, so a slow reader delays
// nobody else and an idle watch costs no goroutine.
type watcher struct {
	ctx    context.Context // the watch's; the watcher ends with it
	prefix string
	from   int64 // changes at or before this revision are not the watcher's
	ch     chan storage.WatchEvent

	mu      sync.Mutex
	replay  []change             // the window's changes not yet delivered, packed and shared: before queue
	packer  *packer              // unpacks replay
	queue   []storage.WatchEvent // changes after those in ch and replay, in order
	pumping bool                 // a goroutine delivers the queue; only it sends or closes then
	ended   bool
	closed  bool
	last    error // the final event's Err once ended; nil for a clean close
}

func newWatcher(ctx context.Context, prefix string, from int64) *watcher {
	return &watcher{ctx: ctx, prefix: prefix, from: from, ch: make(chan storage.WatchEvent, handOver)}
}

// start delivers replay, the window's changes from the watcher's revision on (those outside its
// prefix skipped), and ends the watcher when its context ends, calling gone then. What the channel
// does not take now stays packed in the window's own array until the watcher's goroutine unpacks
// it, one change at a time. The cache's lock is held.
func (w *watcher) start(replay []change, p *packer, gone func()) {
	w.mu.Lock()
	w.packer = p
	for i, ch := range replay {
		if !w.wants(ch) {
			continue
		}
		if len(w.ch) == cap(w.ch) {
			w.replay = replay[i:]
			w.pump()
			break
		}
		ev, err := p.watchEvent(ch)
		if err != nil {
			w.ended, w.last = true, err
			w.pump()
			break
		}
		w.ch <- ev // there is room, and nothing else sends before start returns
	}
	w.mu.Unlock()
	context.AfterFunc(w.ctx, func() {
		gone()
		w.mu.Lock()
		defer w.mu.Unlock()
		w.ended, w.last, w.queue, w.replay = true, nil, nil, nil
		w.closeIdle()
	})
}

// wants is whether a change of the window is the watcher's.
func (w *watcher) wants(ch change) bool {
	return ch.entry.modRevision > w.from && strings.HasPrefix(ch.key, w.prefix)
}

// trySend hands ev to the channel if nothing waits before it and there is room; w.mu is held.
func (w *watcher) trySend(ev storage.WatchEvent) bool {
	if w.pumping || len(w.queue) > 0 || len(w.replay) > 0 {
		return false
	}
	select {
	case w.ch <- ev:
		return true
	default:
		return false
	}
}

// push delivers or queues ev; false when limit changes were already waiting, which ends the watcher
// with ErrWatcherTooSlow.
func (w *watcher) push(ev storage.WatchEvent, limit int) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ended {
		return false
	}
	if len(w.ch)+len(w.queue) >= limit {
		w.ended, w.last, w.queue = true, storage.ErrWatcherTooSlow, nil
		w.pump()
		return false
	}
	if !w.trySend(ev) {
		w.queue = append(w.queue, ev)
		w.pump()
	}
	return true
}

// end stops the watcher after what it has queued; err, when set, is its last event.
func (w *watcher) end(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ended {
		return
	}
	w.ended, w.last = true, err
	if len(w.queue) == 0 && err == nil {
		w.closeIdle()
		return
	}
	w.pump()
}

// closeIdle closes the channel unless the delivering goroutine owns it; w.mu is held.
func (w *watcher) closeIdle() {
	if !w.pumping && !w.closed {
		w.closed = true
		close(w.ch)
	}
}

// pump starts the delivering goroutine unless it runs; w.mu is held.
func (w *watcher) pump() {
	if w.pumping || w.closed {
		return
	}
	w.pumping = true
	go w.deliver()
}

// deliver sends the queue, then the final error of an ended watcher and closes its channel; it
// returns as soon as the queue is empty on a watcher still open.
func (w *watcher) deliver() {
	for {
		w.mu.Lock()
		replay, batch := w.replay, w.queue
		w.replay, w.queue = nil, nil
		ended, last := w.ended, w.last
		if len(replay) == 0 && len(batch) == 0 && !ended {
			w.pumping = false
			w.mu.Unlock()
			return
		}
		w.mu.Unlock()
		for _, ch := range replay {
			if !w.wants(ch) {
				continue
			}
			ev, err := w.packer.watchEvent(ch)
			if err != nil {
				ev = storage.WatchEvent{Err: err}
			}
			select {
			case w.ch <- ev:
			case <-w.ctx.Done():
				w.finish()
				return
			}
			if err != nil {
				w.finish()
				return
			}
		}
		for _, ev := range batch {
			select {
			case w.ch <- ev:
			case <-w.ctx.Done():
				w.finish()
				return
			}
		}
		if len(replay) > 0 || len(batch) > 0 {
			continue // more may have been queued meanwhile, and ended may have changed
		}
		if last != nil {
			select {
			case w.ch <- storage.WatchEvent{Err: last}:
			case <-w.ctx.Done():
			}
		}
		w.finish()
		return
	}
}

// finish closes the channel of an ended watcher from the delivering goroutine.
func (w *watcher) finish() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.ended, w.pumping, w.queue, w.replay = true, false, nil, nil
	if !w.closed {
		w.closed = true
		close(w.ch)
	}
}
