package generic

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strconv"

	"k8s.io/apimachinery/pkg/runtime"

	"orch.io/orch/components/apiserver/storage"
)

// Markers of the layout encode writes: kind and apiVersion first, then metadata, in which
// resourceVersion's place (after name, generateName, namespace, selfLink and uid) is taken by the
// first of generation and creationTimestamp, one of which is always written. Neither marker can
// occur earlier: the keys before are fixed, and a quote inside a JSON string is always escaped.
var (
	generationMarker = []byte(`"generation":`)
	creationMarker   = []byte(`"creationTimestamp":`)
	rvMarker         = []byte(`"resourceVersion":`)
)

// storedPrefix is how every object encode writes for this store begins.
func (s *Store) storedPrefix() []byte {
	return []byte(`{"kind":"` + s.gvk.Kind + `","apiVersion":"` + s.gvk.GroupVersion().String() + `","metadata":{`)
}

// ListJSON answers what List answers, encoded as JSON. Each object goes out as it is stored, with
// its resourceVersion spliced in, rather than decoded and encoded again: that is most of the cost
// of listing thousands of objects.
func (s *Store) ListJSON(ctx context.Context, namespace string, o ListOptions) ([]byte, error) {
	var kvs []storage.KeyValue
	size := 0
	lm, err := s.scan(ctx, namespace, o, func(kv storage.KeyValue, _ runtime.Object) error {
		kvs = append(kvs, kv)
		size += len(kv.Value) + 40
		return nil
	})
	if err != nil {
		return nil, err
	}
	list, err := s.newList(lm)
	if err != nil {
		return nil, err
	}
	head, err := json.Marshal(list)
	if err != nil {
		return nil, internal(err)
	}
	// head ends in "items":null}; the items take the place of null.
	if !bytes.HasSuffix(head, []byte(`"items":null}`)) {
		return nil, internal(errUnsplicedList)
	}
	head = bytes.TrimSuffix(head, []byte("null}"))
	prefix := s.storedPrefix()
	out := make([]byte, 0, len(head)+size+3)
	out = append(append(out, head...), '[')
	for i, kv := range kvs {
		if i > 0 {
			out = append(out, ',')
		}
		if out, err = s.appendItemJSON(out, prefix, kv); err != nil {
			return nil, err
		}
	}
	return append(out, "]}"...), nil
}

var errUnsplicedList = errors.New("a list's items are not last in its JSON form")

// appendItemJSON appends kv as a list item: the stored JSON without kind and apiVersion, with its
// resourceVersion spliced in. A value not in encode's layout takes the general way.
func (s *Store) appendItemJSON(dst, prefix []byte, kv storage.KeyValue) ([]byte, error) {
	if at, ok := rvPlace(kv.Value, prefix); ok {
		dst = append(dst, `{"metadata":{`...)
		return spliceRV(dst, kv.Value[len(prefix):], at-len(prefix), kv.ModRevision), nil
	}
	obj, err := s.decode(kv)
	if err != nil {
		return nil, err
	}
	obj.GetObjectKind().SetGroupVersionKind(schemaEmpty)
	data, err := json.Marshal(obj)
	if err != nil {
		return nil, internal(err)
	}
	return append(dst, data...), nil
}

// objectJSON is kv as a whole object (kind and apiVersion kept) with its resourceVersion spliced
// in; false when the value is not in encode's layout.
func (s *Store) objectJSON(kv storage.KeyValue) ([]byte, bool) {
	at, ok := rvPlace(kv.Value, s.storedPrefix())
	if !ok {
		return nil, false
	}
	return spliceRV(make([]byte, 0, len(kv.Value)+40), kv.Value, at, kv.ModRevision), true
}

// rvPlace finds where encode's layout of v, which begins with prefix, takes a resourceVersion.
func rvPlace(v, prefix []byte) (int, bool) {
	at := bytes.Index(v, creationMarker)
	if g := bytes.Index(v, generationMarker); g >= 0 && (at < 0 || g < at) {
		at = g
	}
	if !bytes.HasPrefix(v, prefix) || at <= len(prefix) || bytes.Contains(v[:at], rvMarker) {
		return 0, false
	}
	return at, true
}

// spliceRV appends v with "resourceVersion":"rev", inserted at at.
func spliceRV(dst, v []byte, at int, rev int64) []byte {
	dst = append(dst, v[:at]...)
	dst = append(dst, `"resourceVersion":"`...)
	dst = strconv.AppendInt(dst, rev, 10)
	dst = append(dst, `",`...)
	return append(dst, v[at:]...)
}
