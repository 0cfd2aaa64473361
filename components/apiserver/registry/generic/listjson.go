package generic

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
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

// JSONList is what List answers, ready to be written as JSON a piece at a time: a server streams
// it rather than holding the whole body (156 MiB for 100,000 events) in memory. Each object goes
// out as it is stored, with its resourceVersion spliced in, rather than decoded and encoded again:
// that is most of the cost of listing thousands of objects.
//
// Values the watch cache keeps packed stay packed until they are written: each is unpacked once
// to find where its resourceVersion goes and how long the list is, and again as it is written,
// rather than all of them held unpacked from the LIST to its last byte.
type JSONList struct {
	head   []byte // up to and including the items' opening bracket
	prefix []byte // how stored values begin
	kvs    []storage.KeyValue
	stored []storedValue // where each item's value is read from when its kv has none
	at     []int         // where each item's resourceVersion goes (see rvPlace)
	// general holds the items not in encode's layout, encoded beforehand so that writing the list
	// can fail only on its writer.
	general map[int][]byte
	size    int
}

// PrepareListJSON reads the list List would answer; nothing is encoded until it is written.
func (s *Store) PrepareListJSON(ctx context.Context, namespace string, o ListOptions) (*JSONList, error) {
	l := &JSONList{prefix: s.storedPrefix()}
	lm, err := s.scan(ctx, namespace, o, true, func(kv storage.KeyValue, _ runtime.Object, stored storedValue) error {
		at, ok := rvPlace(kv.Value, l.prefix)
		l.at = append(l.at, at)
		if ok {
			l.size += len(itemOpen) - len(l.prefix) + at + len(rvOpen) + digits(kv.ModRevision) + len(rvClose) + len(kv.Value) - at
		} else {
			data, err := s.generalItemJSON(kv)
			if err != nil {
				return err
			}
			if l.general == nil {
				l.general = map[int][]byte{}
			}
			l.general[len(l.kvs)] = data
			l.size += len(data)
		}
		if stored.values != nil {
			kv.Value = nil // scan's buffer, read again from stored when written
		}
		l.kvs = append(l.kvs, kv)
		l.stored = append(l.stored, stored)
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
	l.head = append(bytes.TrimSuffix(head, []byte("null}")), '[')
	l.size += len(l.head) + max(len(l.kvs)-1, 0) + len("]}")
	return l, nil
}

// Len is the length of the list's JSON.
func (l *JSONList) Len() int { return l.size }

// listChunk is how much of a list is encoded before it is handed to the writer.
const listChunk = 32 << 10

// WriteTo writes the list's JSON to w. A packed value that fails to unpack the second time (it did
// once, when the list was prepared) ends the list short of its length.
func (l *JSONList) WriteTo(w io.Writer) (int64, error) {
	var written int64
	var value []byte
	buf := make([]byte, 0, listChunk+4096)
	flush := func() error {
		n, err := w.Write(buf)
		written += int64(n)
		buf = buf[:0]
		return err
	}
	buf = append(buf, l.head...)
	for i, kv := range l.kvs {
		if i > 0 {
			buf = append(buf, ',')
		}
		if data, ok := l.general[i]; ok {
			buf = append(buf, data...)
		} else {
			v := kv.Value
			if st := l.stored[i]; st.values != nil {
				var err error
				if value, err = st.values.Value(st.i, value[:0]); err != nil {
					return written, err
				}
				v = value
			}
			buf = append(buf, itemOpen...)
			buf = spliceRV(buf, v[len(l.prefix):], l.at[i]-len(l.prefix), kv.ModRevision)
		}
		if len(buf) >= listChunk {
			if err := flush(); err != nil {
				return written, err
			}
		}
	}
	buf = append(buf, "]}"...)
	return written, flush()
}

var errUnsplicedList = errors.New("a list's items are not last in its JSON form")

// generalItemJSON is kv as a list item, decoded and encoded: a value not in encode's layout.
func (s *Store) generalItemJSON(kv storage.KeyValue) ([]byte, error) {
	obj, err := s.decode(kv)
	if err != nil {
		return nil, err
	}
	obj.GetObjectKind().SetGroupVersionKind(schemaEmpty)
	data, err := json.Marshal(obj)
	if err != nil {
		return nil, internal(err)
	}
	return data, nil
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
	// generation, when written, comes before creationTimestamp: only the bytes before it are
	// searched, not the whole object (an event has no generation).
	at := bytes.Index(v, creationMarker)
	end := at
	if end < 0 {
		end = len(v)
	}
	if g := bytes.Index(v[:end], generationMarker); g >= 0 {
		at = g
	}
	if !bytes.HasPrefix(v, prefix) || at < len(prefix) || bytes.Contains(v[:at], rvMarker) {
		return 0, false
	}
	return at, true
}

// The pieces a list item is cut and spliced with.
const (
	itemOpen = `{"metadata":{`
	rvOpen   = `"resourceVersion":"`
	rvClose  = `",`
)

// spliceRV appends v with "resourceVersion":"rev", inserted at at.
func spliceRV(dst, v []byte, at int, rev int64) []byte {
	dst = append(dst, v[:at]...)
	dst = append(dst, rvOpen...)
	dst = strconv.AppendInt(dst, rev, 10)
	dst = append(dst, rvClose...)
	return append(dst, v[at:]...)
}

// digits is the length of n in decimal.
func digits(n int64) int {
	var b [20]byte
	return len(strconv.AppendInt(b[:0], n, 10))
}
