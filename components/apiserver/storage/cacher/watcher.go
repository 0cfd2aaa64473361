package cacher

import (
	"context"
	"sync"

	"orch.io/orch/components/apiserver/storage"
)

// watcher is one client's queue of changes, fed by the cache and drained by its own goroutine, so
// a slow reader delays nobody else.
type watcher struct {
	prefix string
	from   int64 // changes at or before this revision are not the watcher's

	mu    sync.Mutex
	queue []storage.WatchEvent
	ended bool
	last  error // the final event's Err once ended; nil for a clean close
	wake  chan struct{}
}

func newWatcher(prefix string, from int64) *watcher {
	return &watcher{prefix: prefix, from: from, wake: make(chan struct{}, 1)}
}

// push queues ev; false when the queue was full, which ends the watcher with ErrWatcherTooSlow.
func (w *watcher) push(ev storage.WatchEvent, limit int) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ended {
		return false
	}
	if len(w.queue) >= limit {
		w.ended, w.last = true, storage.ErrWatcherTooSlow
		w.signal()
		return false
	}
	w.queue = append(w.queue, ev)
	w.signal()
	return true
}

// end stops the watcher after what it has queued; err, when set, is its last event.
func (w *watcher) end(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.ended {
		w.ended, w.last = true, err
		w.signal()
	}
}

func (w *watcher) signal() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// pump delivers the queue to out until the watcher ends or ctx does, then closes out. A watcher
// dropped for being slow gets ErrWatcherTooSlow as its last event, without the changes it missed.
func (w *watcher) pump(ctx context.Context, out chan<- storage.WatchEvent) {
	defer close(out)
	for {
		w.mu.Lock()
		batch := w.queue
		w.queue = nil
		ended, last := w.ended, w.last
		if ended && last != nil {
			batch = nil
		}
		w.mu.Unlock()
		for _, ev := range batch {
			select {
			case out <- ev:
			case <-ctx.Done():
				w.end(nil)
				return
			}
		}
		if ended {
			if last != nil {
				select {
				case out <- storage.WatchEvent{Err: last}:
				case <-ctx.Done():
				}
			}
			return
		}
		select {
		case <-w.wake:
		case <-ctx.Done():
			w.end(nil)
			return
		}
	}
}
