package generic

import (
	"context"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"

	"orch.io/orch/components/apiserver/storage"
)

// Matches reports whether obj is selected by the options' label and field selectors.
func (s *Store) Matches(obj runtime.Object, o ListOptions) bool {
	if o.Labels != nil && !o.Labels.Empty() && !o.Labels.Matches(labels.Set(accessor(obj).GetLabels())) {
		return false
	}
	if o.Fields != nil && !o.Fields.Empty() && !o.Fields.Matches(s.strategy.SelectableFields(obj)) {
		return false
	}
	return true
}

// List answers one page of the objects in namespace ("" for all) that the selectors match, from
// one consistent snapshot: later pages read the revision of the first through the continue token.
func (s *Store) List(ctx context.Context, namespace string, o ListOptions) (runtime.Object, error) {
	var items []runtime.Object
	listMeta, err := s.scan(ctx, namespace, o, false, func(kv storage.KeyValue, obj runtime.Object, _ storedValue) error {
		if obj == nil {
			var err error
			if obj, err = s.decode(kv); err != nil {
				return err
			}
		}
		obj.GetObjectKind().SetGroupVersionKind(schemaEmpty)
		items = append(items, obj)
		return nil
	})
	if err != nil {
		return nil, err
	}
	list, err := s.newList(listMeta)
	if err != nil {
		return nil, err
	}
	if err := meta.SetList(list, items); err != nil {
		return nil, internal(err)
	}
	return list, nil
}

// newList is an empty list of the store's kind with the given metadata.
func (s *Store) newList(lm metav1.ListMeta) (runtime.Object, error) {
	list := s.strategy.NewList()
	list.GetObjectKind().SetGroupVersionKind(s.gvk.GroupVersion().WithKind(s.gvk.Kind + "List"))
	la, err := meta.ListAccessor(list)
	if err != nil {
		return nil, internal(err)
	}
	la.SetResourceVersion(lm.ResourceVersion)
	la.SetContinue(lm.Continue)
	la.SetRemainingItemCount(lm.RemainingItemCount)
	return list, nil
}

// Items returns the objects of a list List answered.
func Items(list runtime.Object) []runtime.Object {
	items, _ := meta.ExtractList(list)
	return items
}

// storedValue finds an item's value again once scan's keep has returned, for a packed scan: the
// KeyValue keep is given holds the value only until then. A zero storedValue: the KeyValue's
// value is its own and stays.
type storedValue struct {
	values storage.Values
	i      int
}

// scan reads the page List answers, calling keep for each stored object the selectors match (with
// the object decoded when matching needed it, nil otherwise), and answers the list's metadata.
// packed asks the store for values unpacked one at a time (storage.ListOptions.Packed), for a
// keep that does not hold on to the values it is given.
func (s *Store) scan(ctx context.Context, namespace string, o ListOptions, packed bool, keep func(storage.KeyValue, runtime.Object, storedValue) error) (metav1.ListMeta, error) {
	var lm metav1.ListMeta
	prefix := s.listPrefix(namespace)
	revision, start, err := Snapshot(ctx, s.storage.Revision, prefix, o)
	if err != nil {
		return lm, err
	}
	filter := o.Selecting()
	var kept int64
	var value []byte // a packed page's values, one at a time
	for {
		want := int64(0)
		if o.Limit > 0 {
			want = o.Limit - kept
		}
		page, err := s.storage.List(ctx, prefix, storage.ListOptions{Revision: revision, StartKey: start, Limit: want, Packed: packed})
		if err != nil {
			return lm, ListError(ctx, s.storage.Revision, err, o, prefix, start)
		}
		revision = page.Revision
		for i, kv := range page.Items {
			var stored storedValue
			if page.Values != nil {
				if value, err = page.Values.Value(i, value[:0]); err != nil {
					return lm, StorageError(err)
				}
				kv.Value, stored = value, storedValue{page.Values, i}
			}
			var obj runtime.Object
			if filter {
				if obj, err = s.decode(kv); err != nil {
					return lm, err
				}
				if !s.Matches(obj, o) {
					continue
				}
			}
			if err := keep(kv, obj, stored); err != nil {
				return lm, err
			}
			kept++
			if o.Limit > 0 && kept == o.Limit {
				remaining := page.Remaining + int64(len(page.Items)-i-1)
				if remaining > 0 {
					token, err := EncodeContinue(kv.Key+"\x00", prefix, revision)
					if err != nil {
						return lm, internal(err)
					}
					lm.Continue = token
					if !filter {
						lm.RemainingItemCount = &remaining
					}
				}
				lm.ResourceVersion = strconv.FormatInt(revision, 10)
				return lm, nil
			}
		}
		if page.Remaining == 0 || len(page.Items) == 0 {
			break
		}
		start = page.Items[len(page.Items)-1].Key + "\x00"
	}
	lm.ResourceVersion = strconv.FormatInt(revision, 10)
	return lm, nil
}

// DeleteCollection deletes the objects of namespace that the options select (gracefully where the
// resource has a grace period) and answers them.
func (s *Store) DeleteCollection(ctx context.Context, namespace string, o ListOptions, d DeleteOptions) (runtime.Object, error) {
	list, err := s.List(ctx, namespace, o)
	if err != nil {
		return nil, err
	}
	var deleted []runtime.Object
	for _, item := range Items(list) {
		m := accessor(item)
		uid := m.GetUID()
		opts := d
		opts.UID = &uid
		gone, _, err := s.Delete(ctx, m.GetNamespace(), m.GetName(), opts)
		if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			continue // deleted or replaced since the list: not ours to report
		}
		if err != nil {
			return nil, err
		}
		gone.GetObjectKind().SetGroupVersionKind(schemaEmpty)
		deleted = append(deleted, gone)
	}
	if err := meta.SetList(list, deleted); err != nil {
		return nil, internal(err)
	}
	return list, nil
}
