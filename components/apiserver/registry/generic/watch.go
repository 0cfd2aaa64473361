package generic

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

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
	sendInitial, from, err := WatchStart(o)
	if err != nil {
		return nil, err
	}
	var initial []runtime.Object
	if sendInitial {
		list, err := s.List(ctx, namespace, ListOptions{Labels: o.Labels, Fields: o.Fields})
		if err != nil {
			return nil, err
		}
		initial = Items(list)
		lm, _ := metaListRV(list)
		from, _ = strconv.ParseInt(lm, 10, 64)
	} else if from == 0 {
		if from, err = s.storage.Revision(ctx); err != nil {
			return nil, StorageError(err)
		}
	}
	out := make(chan WatchEvent, 16)
	changes, err := s.storage.Watch(ctx, s.listPrefix(namespace), from)
	if errors.Is(err, storage.ErrCompacted) {
		go func() {
			defer close(out)
			send(ctx, out, ErrorEvent(apierrors.NewResourceExpired("The resourceVersion for the provided watch is too old.")))
		}()
		return out, nil
	}
	if err != nil {
		return nil, StorageError(err)
	}
	w := &watcher{store: s, opts: o, out: out, lastRevision: from}
	go w.run(ctx, initial, o.SendInitialEvents != nil && *o.SendInitialEvents, changes)
	return out, nil
}

func metaListRV(list runtime.Object) (string, error) {
	lm, err := meta.ListAccessor(list)
	if err != nil {
		return "", err
	}
	return lm.GetResourceVersion(), nil
}

type watcher struct {
	store        *Store
	opts         WatchOptions
	out          chan<- WatchEvent
	lastRevision int64
}

func (w *watcher) run(ctx context.Context, initial []runtime.Object, endBookmark bool, changes <-chan storage.WatchEvent) {
	defer close(w.out)
	for _, obj := range initial {
		w.store.setTypeMeta(obj)
		if !send(ctx, w.out, WatchEvent{Type: watch.Added, Object: obj}) {
			return
		}
	}
	if endBookmark {
		b := w.bookmark()
		accessor(b.Object).SetAnnotations(map[string]string{InitialEventsEndAnnotation: "true", K8sInitialEventsEndAnnotation: "true"})
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
