package events

import (
	"context"
	"errors"
	"strconv"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	eventsv1 "orch.io/orch/components/apis/events/v1"
	"orch.io/orch/components/apiserver/registry/generic"
	"orch.io/orch/components/apiserver/storage"
)

// WatchOptions are the watch query parameters, parsed.
type WatchOptions = generic.WatchOptions

// WatchEvent is one entry of a watch stream: an Event for ADDED/MODIFIED/DELETED/BOOKMARK, a Status
// for ERROR.
type WatchEvent struct {
	Type   watch.EventType
	Object *eventsv1.Event
	Status *metav1.Status
}

// Watch streams the changes to events in namespace ("" for all) as Kubernetes does: without a
// resourceVersion (or with "0") it first sends the current state as ADDED; with one it sends what
// changed after it, or one ERROR 410 when that version is too old. The channel closes when ctx ends.
func (s *Store) Watch(ctx context.Context, namespace string, o WatchOptions) (<-chan WatchEvent, error) {
	prefix := listPrefix(namespace)
	sendInitial, from, err := generic.WatchStart(o)
	if err != nil {
		return nil, err
	}

	var initial []eventsv1.Event
	if sendInitial {
		list, err := s.List(ctx, namespace, ListOptions{Labels: o.Labels, Fields: o.Fields})
		if err != nil {
			return nil, err
		}
		initial = list.Items
		from, _ = strconv.ParseInt(list.ResourceVersion, 10, 64)
	} else if from == 0 {
		if from, err = s.storage.Revision(ctx); err != nil {
			return nil, generic.StorageError(err)
		}
	}

	out := make(chan WatchEvent, 16)
	changes, err := s.storage.Watch(ctx, prefix, from)
	if errors.Is(err, storage.ErrCompacted) {
		go func() {
			defer close(out)
			send(ctx, out, errorEvent(apierrors.NewResourceExpired("The resourceVersion for the provided watch is too old.")))
		}()
		return out, nil
	}
	if err != nil {
		return nil, generic.StorageError(err)
	}
	w := &watcher{store: s, opts: o, out: out, lastRevision: from}
	go w.run(ctx, initial, o.SendInitialEvents != nil && *o.SendInitialEvents, changes)
	return out, nil
}

type watcher struct {
	store        *Store
	opts         WatchOptions
	out          chan<- WatchEvent
	lastRevision int64
}

func (w *watcher) run(ctx context.Context, initial []eventsv1.Event, endBookmark bool, changes <-chan storage.WatchEvent) {
	defer close(w.out)
	for i := range initial {
		e := initial[i]
		e.TypeMeta = eventTypeMeta
		if !send(ctx, w.out, WatchEvent{Type: watch.Added, Object: &e}) {
			return
		}
	}
	if endBookmark {
		b := w.bookmark()
		b.Object.Annotations = map[string]string{generic.InitialEventsEndAnnotation: "true", generic.K8sInitialEventsEndAnnotation: "true"}
		if !send(ctx, w.out, b) {
			return
		}
	}
	var ticks <-chan time.Time
	if w.opts.AllowBookmarks && w.opts.BookmarkInterval > 0 {
		ticker := w.store.clock.Ticker(w.opts.BookmarkInterval)
		defer ticker.Stop()
		ticks = ticker.C
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticks:
			if !send(ctx, w.out, w.bookmark()) {
				return
			}
		case change, ok := <-changes:
			// A watcher the store dropped for falling behind ends without an ERROR frame: the
			// client re-watches from the last resourceVersion it saw, as after any closed stream.
			if !ok || errors.Is(change.Err, storage.ErrWatcherTooSlow) {
				return
			}
			ev, deliver := w.translate(change)
			if deliver && !send(ctx, w.out, ev) {
				return
			}
			if ev.Type == watch.Error {
				return
			}
		}
	}
}

func (w *watcher) bookmark() WatchEvent {
	return WatchEvent{Type: watch.Bookmark, Object: &eventsv1.Event{
		TypeMeta:   eventTypeMeta,
		ObjectMeta: metav1.ObjectMeta{ResourceVersion: strconv.FormatInt(w.lastRevision, 10)},
	}}
}

// translate turns a storage change into the watch event this watcher's selectors let through. As
// in Kubernetes, an update that moves an object out of the selection is DELETED (with its old
// content at the new resourceVersion) and one that moves it in is ADDED.
func (w *watcher) translate(change storage.WatchEvent) (WatchEvent, bool) {
	if change.Err != nil {
		if errors.Is(change.Err, storage.ErrCompacted) {
			return errorEvent(apierrors.NewResourceExpired("The resourceVersion for the provided watch is too old.")), true
		}
		return errorEvent(apierrors.NewInternalError(change.Err)), true
	}
	w.lastRevision = change.KV.ModRevision
	e, err := decode(change.KV)
	if err != nil {
		return errorEvent(apierrors.NewInternalError(err)), true
	}
	matches := Matches(e, w.opts.Labels, w.opts.Fields)
	switch {
	case change.Type == storage.Delete:
		return WatchEvent{Type: watch.Deleted, Object: e}, matches
	case change.Created:
		return WatchEvent{Type: watch.Added, Object: e}, matches
	}
	matched := matches
	var old *eventsv1.Event
	if change.PrevValue != nil {
		prev := change.KV
		prev.Value = change.PrevValue
		if old, err = decode(prev); err != nil {
			return errorEvent(apierrors.NewInternalError(err)), true
		}
		matched = Matches(old, w.opts.Labels, w.opts.Fields)
	}
	switch {
	case matches && matched:
		return WatchEvent{Type: watch.Modified, Object: e}, true
	case matches:
		return WatchEvent{Type: watch.Added, Object: e}, true
	case matched:
		return WatchEvent{Type: watch.Deleted, Object: old}, true
	}
	return WatchEvent{}, false
}

func errorEvent(err *apierrors.StatusError) WatchEvent {
	status := err.Status()
	status.TypeMeta = metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}
	return WatchEvent{Type: watch.Error, Status: &status}
}

func send(ctx context.Context, out chan<- WatchEvent, ev WatchEvent) bool {
	select {
	case out <- ev:
		return true
	case <-ctx.Done():
		return false
	}
}
