package events

import (
	"bytes"
	"context"
	"encoding/json"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"

	eventsv1 "orch.io/orch/components/apis/events/v1"
	"orch.io/orch/components/apiserver/registry/generic"
	"orch.io/orch/components/apiserver/storage"
)

// ListOptions are the list query parameters, parsed.
type ListOptions = generic.ListOptions

// Matches reports whether e is selected by the label and field selectors; nil selectors match all.
func Matches(e *eventsv1.Event, l labels.Selector, f fields.Selector) bool {
	if l != nil && !l.Empty() && !l.Matches(labels.Set(e.Labels)) {
		return false
	}
	if f != nil && !f.Empty() && !f.Matches(eventsv1.SelectableFields(e)) {
		return false
	}
	return true
}

// List answers one page of the events in namespace ("" for all) that the selectors match, from one
// consistent snapshot: later pages read the revision of the first through the continue token.
func (s *Store) List(ctx context.Context, namespace string, o ListOptions) (*eventsv1.EventList, error) {
	list := &eventsv1.EventList{
		TypeMeta: metav1.TypeMeta{Kind: "EventList", APIVersion: eventsv1.SchemeGroupVersion.String()},
		Items:    []eventsv1.Event{},
	}
	meta, err := s.scan(ctx, namespace, o, func(kv storage.KeyValue, e *eventsv1.Event) error {
		if e == nil {
			var err error
			if e, err = decode(kv); err != nil {
				return internal(err)
			}
		}
		e.TypeMeta = metav1.TypeMeta{}
		list.Items = append(list.Items, *e)
		return nil
	})
	if err != nil {
		return nil, err
	}
	list.ListMeta = meta
	return list, nil
}

// ListJSON answers what List answers, encoded as JSON. Each object goes out as it is stored, with
// its resourceVersion spliced in, rather than decoded and encoded again: that is most of the cost
// of listing thousands of events.
func (s *Store) ListJSON(ctx context.Context, namespace string, o ListOptions) ([]byte, error) {
	var kvs []storage.KeyValue
	size := 0
	meta, err := s.scan(ctx, namespace, o, func(kv storage.KeyValue, _ *eventsv1.Event) error {
		kvs = append(kvs, kv)
		size += len(kv.Value) + 40
		return nil
	})
	if err != nil {
		return nil, err
	}
	head, err := json.Marshal(&eventsv1.EventList{
		TypeMeta: metav1.TypeMeta{Kind: "EventList", APIVersion: eventsv1.SchemeGroupVersion.String()},
		ListMeta: meta,
	})
	if err != nil {
		return nil, internal(err)
	}
	// head ends in "items":null}; the items take the place of null.
	head = bytes.TrimSuffix(head, []byte("null}"))
	out := make([]byte, 0, len(head)+size+3)
	out = append(append(out, head...), '[')
	for i, kv := range kvs {
		if i > 0 {
			out = append(out, ',')
		}
		if out, err = appendItemJSON(out, kv); err != nil {
			return nil, internal(err)
		}
	}
	return append(out, "]}"...), nil
}

// scan reads the page List answers, calling keep for each stored object the selectors match (with
// the object decoded when matching needed it), and answers the list's metadata.
func (s *Store) scan(ctx context.Context, namespace string, o ListOptions, keep func(storage.KeyValue, *eventsv1.Event) error) (metav1.ListMeta, error) {
	var meta metav1.ListMeta
	prefix := listPrefix(namespace)
	revision, start, err := generic.Snapshot(ctx, s.storage.Revision, prefix, o)
	if err != nil {
		return meta, err
	}
	filter := o.Selecting()
	var kept int64
	for {
		page, err := s.storage.List(ctx, prefix, storage.ListOptions{Revision: revision, StartKey: start, Limit: pageSize(o.Limit, kept)})
		if err != nil {
			return meta, generic.ListError(ctx, s.storage.Revision, err, o, prefix, start)
		}
		revision = page.Revision
		for i, kv := range page.Items {
			var e *eventsv1.Event
			if filter {
				if e, err = decode(kv); err != nil {
					return meta, internal(err)
				}
				if !Matches(e, o.Labels, o.Fields) {
					continue
				}
			}
			if err := keep(kv, e); err != nil {
				return meta, err
			}
			kept++
			if o.Limit > 0 && kept == o.Limit {
				remaining := page.Remaining + int64(len(page.Items)-i-1)
				if remaining > 0 {
					token, err := generic.EncodeContinue(kv.Key+"\x00", prefix, revision)
					if err != nil {
						return meta, internal(err)
					}
					meta.Continue = token
					if !filter {
						meta.RemainingItemCount = &remaining
					}
				}
				meta.ResourceVersion = strconv.FormatInt(revision, 10)
				return meta, nil
			}
		}
		if page.Remaining == 0 || len(page.Items) == 0 {
			break
		}
		start = page.Items[len(page.Items)-1].Key + "\x00"
	}
	meta.ResourceVersion = strconv.FormatInt(revision, 10)
	return meta, nil
}

// pageSize reads exactly what is still wanted; when selectors filter, that may take several reads.
func pageSize(limit, have int64) int64 {
	if limit <= 0 {
		return 0
	}
	return limit - have
}

// DeleteCollection deletes the events of namespace that the options select and answers them.
func (s *Store) DeleteCollection(ctx context.Context, namespace string, o ListOptions, dryRun bool) (*eventsv1.EventList, error) {
	list, err := s.List(ctx, namespace, o)
	if err != nil {
		return nil, err
	}
	deleted := list.Items[:0]
	for i := range list.Items {
		item := &list.Items[i]
		uid := item.UID
		gone, err := s.Delete(ctx, item.Namespace, item.Name, Preconditions{UID: &uid}, dryRun)
		if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			continue // deleted or replaced since the list: not ours to report
		}
		if err != nil {
			return nil, err
		}
		gone.TypeMeta = metav1.TypeMeta{}
		deleted = append(deleted, *gone)
	}
	list.Items = deleted
	return list, nil
}
