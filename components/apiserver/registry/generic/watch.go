package generic

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/benbjohnson/clock"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"

	"orch.io/orch/components/apiserver/storage"
)

// schemaEmpty clears an object's kind: list items go out without one, as in Kubernetes.
var schemaEmpty = schema.GroupVersionKind{}

// WatchEvent is one entry of a watch stream: an object for ADDED/MODIFIED/DELETED/BOOKMARK, a
// Status for ERROR.
type WatchEvent struct {
	Type   watch.EventType
	Object runtime.Object
	Status *metav1.Status
	// JSON, with WatchOptions.JSON, is the object encoded (kind, apiVersion and resourceVersion
	// set) in place of Object.
	JSON []byte
}

// Watch streams the changes to objects in namespace ("" for all) as Kubernetes does: without a
// resourceVersion (or with "0") it first sends the current state as ADDED; with one it sends what
// changed after it, or one ERROR 410 when that version is too old. The channel closes when ctx ends.
func (s *Store) Watch(ctx context.Context, namespace string, o WatchOptions) (<-chan WatchEvent, error) {
	stream, err := s.WatchStream(ctx, namespace, o)
	if err != nil {
		return nil, err
	}
	out := make(chan WatchEvent, 16)
	go func() {
		defer close(out)
		defer stream.Stop()
		for {
			ev, ok := stream.Next(nil)
			if !ok || !send(ctx, out, ev) {
				return
			}
		}
	}()
	return out, nil
}

// WatchStream is Watch read in the reader's own goroutine: a server's watch then costs no
// goroutine between the store's changes and the client's connection, and no hop per change.
func (s *Store) WatchStream(ctx context.Context, namespace string, o WatchOptions) (*WatchStream, error) {
	sendInitial, from, err := WatchStart(o)
	if err != nil {
		return nil, err
	}
	st := &WatchStream{ctx: ctx, w: watcher{store: s, opts: o}}
	if sendInitial {
		list, err := s.List(ctx, namespace, ListOptions{Labels: o.Labels, Fields: o.Fields})
		if err != nil {
			return nil, err
		}
		lm, _ := metaListRV(list)
		from, _ = strconv.ParseInt(lm, 10, 64)
		for _, obj := range Items(list) {
			s.setTypeMeta(obj)
			st.queued = append(st.queued, WatchEvent{Type: watch.Added, Object: obj})
		}
	} else if from == 0 {
		if from, err = s.storage.Revision(ctx); err != nil {
			return nil, StorageError(err)
		}
	}
	st.w.lastRevision = from
	changes, err := s.storage.Watch(ctx, s.listPrefix(namespace), from)
	if errors.Is(err, storage.ErrCompacted) {
		st.queued = []WatchEvent{ErrorEvent(apierrors.NewResourceExpired("The resourceVersion for the provided watch is too old."))}
		return st, nil
	}
	if err != nil {
		return nil, StorageError(err)
	}
	st.changes = changes
	if o.SendInitialEvents != nil && *o.SendInitialEvents {
		b := st.w.bookmark()
		accessor(b.Object).SetAnnotations(map[string]string{InitialEventsEndAnnotation: "true", K8sInitialEventsEndAnnotation: "true"})
		st.queued = append(st.queued, b)
	}
	if o.AllowBookmarks && o.BookmarkInterval > 0 {
		st.ticker = s.clock.Ticker(o.BookmarkInterval)
		st.ticks = st.ticker.C
	}
	return st, nil
}

func metaListRV(list runtime.Object) (string, error) {
	lm, err := meta.ListAccessor(list)
	if err != nil {
		return "", err
	}
	return lm.GetResourceVersion(), nil
}

// WatchStream is one watch's events, read with Next by one goroutine.
type WatchStream struct {
	ctx     context.Context
	w       watcher
	queued  []WatchEvent // sent before any change: the initial state, its bookmark, or an ERROR
	changes <-chan storage.WatchEvent
	ticker  *clock.Ticker
	ticks   <-chan time.Time
	ended   bool
}

// Next returns the stream's next event; false once the stream has ended (its context ended, the
// store dropped it, or an ERROR was returned). idle, when set, is called each time Next is about to
// wait for a change (none is buffered), so a writer can flush what it holds when nothing else is
// ready.
func (st *WatchStream) Next(idle func()) (WatchEvent, bool) {
	for !st.ended {
		if st.ctx.Err() != nil {
			st.ended = true
			break
		}
		if len(st.queued) > 0 {
			ev := st.queued[0]
			st.queued = st.queued[1:]
			st.ended = ev.Type == watch.Error // a stream without changes queues only an ERROR
			return ev, true
		}
		if idle != nil && len(st.changes) == 0 {
			idle()
		}
		var change storage.WatchEvent
		var ok bool
		select {
		case <-st.ctx.Done():
			continue // ended above
		case <-st.ticks:
			return st.w.bookmark(), true
		case change, ok = <-st.changes:
		}
		// A watcher the store dropped for falling behind ends without an ERROR frame: the client
		// re-watches from the last resourceVersion it saw, as after any closed stream.
		if !ok || errors.Is(change.Err, storage.ErrWatcherTooSlow) {
			st.ended = true
			continue
		}
		if ev, deliver := st.w.translate(change); deliver {
			st.ended = ev.Type == watch.Error
			return ev, true
		}
	}
	return WatchEvent{}, false
}

// Stop releases what the stream holds besides its context.
func (st *WatchStream) Stop() {
	if st.ticker != nil {
		st.ticker.Stop()
	}
}

// watcher translates one watch's changes.
type watcher struct {
	store        *Store
	opts         WatchOptions
	lastRevision int64
}

func (w *watcher) bookmark() WatchEvent {
	obj := w.store.strategy.New()
	w.store.setTypeMeta(obj)
	accessor(obj).SetResourceVersion(strconv.FormatInt(w.lastRevision, 10))
	return WatchEvent{Type: watch.Bookmark, Object: obj}
}

// translate turns a storage change into the watch event this watcher's selectors let through. As
// in Kubernetes, an update that moves an object out of the selection is DELETED (with its old
// content at the new resourceVersion) and one that moves it in is ADDED.
func (w *watcher) translate(change storage.WatchEvent) (WatchEvent, bool) {
	if change.Err != nil {
		if errors.Is(change.Err, storage.ErrCompacted) {
			return ErrorEvent(apierrors.NewResourceExpired("The resourceVersion for the provided watch is too old.")), true
		}
		return ErrorEvent(apierrors.NewInternalError(change.Err)), true
	}
	w.lastRevision = change.KV.ModRevision
	if w.opts.JSON && !w.opts.Selecting() {
		// Without selectors every change is delivered as it is: the stored JSON with its
		// resourceVersion spliced in is the frame's object, with no decode and encode per watcher.
		if data, ok := w.store.changeJSON(change.KV); ok {
			t := watch.Modified
			switch {
			case change.Type == storage.Delete:
				t = watch.Deleted
			case change.Created:
				t = watch.Added
			}
			return WatchEvent{Type: t, JSON: data}, true
		}
	}
	obj, err := w.store.decode(change.KV)
	if err != nil {
		return ErrorEvent(apierrors.NewInternalError(err)), true
	}
	matches := w.store.Matches(obj, w.opts.ListOptions)
	switch {
	case change.Type == storage.Delete:
		return WatchEvent{Type: watch.Deleted, Object: obj}, matches
	case change.Created:
		return WatchEvent{Type: watch.Added, Object: obj}, matches
	}
	matched := matches
	var old runtime.Object
	if change.PrevValue != nil {
		prev := change.KV
		prev.Value = change.PrevValue
		if old, err = w.store.decode(prev); err != nil {
			return ErrorEvent(apierrors.NewInternalError(err)), true
		}
		matched = w.store.Matches(old, w.opts.ListOptions)
	}
	switch {
	case matches && matched:
		return WatchEvent{Type: watch.Modified, Object: obj}, true
	case matches:
		return WatchEvent{Type: watch.Added, Object: obj}, true
	case matched:
		return WatchEvent{Type: watch.Deleted, Object: old}, true
	}
	return WatchEvent{}, false
}

// changeJSON is a change's object as JSON, as objectJSON cuts it, for the change at a revision.
type changeJSON struct {
	revision int64
	key      string
	data     []byte
}

// lastChangeJSON holds the latest change's JSON; mu makes watchers that miss it together wait for
// the one cutting it rather than each cut a copy.
type lastChangeJSON struct {
	last atomic.Pointer[changeJSON]
	mu   sync.Mutex
}

// changeJSON is objectJSON of a change, shared by the watchers that send it: they must not change
// it.
func (s *Store) changeJSON(kv storage.KeyValue) ([]byte, bool) {
	hit := func() *changeJSON {
		if c := s.lastChange.last.Load(); c != nil && c.revision == kv.ModRevision && c.key == kv.Key {
			return c
		}
		return nil
	}
	if c := hit(); c != nil {
		return c.data, true
	}
	s.lastChange.mu.Lock()
	defer s.lastChange.mu.Unlock()
	if c := hit(); c != nil {
		return c.data, true
	}
	data, ok := s.objectJSON(kv)
	if ok {
		s.lastChange.last.Store(&changeJSON{revision: kv.ModRevision, key: kv.Key, data: data})
	}
	return data, ok
}

// ErrorEvent is the ERROR frame that ends a watch with err.
func ErrorEvent(err *apierrors.StatusError) WatchEvent {
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
