package generic

import (
	"bytes"
	"encoding/json"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// encoding/json compacts what a MarshalJSON returns, scanning it byte by byte: a node's two
// field sets (1-2 KB) at every status post, a third of the store's encoding of it. marshalObject
// writes each set's encoding from a cache of them instead: a set's encoding is a function of its
// bytes alone (metav1.FieldsV1.MarshalJSON, compacted), and an agent's heartbeats write the same
// sets again and again.

// setJSON caches the encodings of field sets by their bytes, up to maxSetJSON (a node's lease's
// set names its node's uid: one a node), cleared when full.
var setJSON struct {
	mu sync.Mutex
	m  map[string][]byte
}

const maxSetJSON = 1 << 16

// setPlaceholder stands in for each set while the rest of the object is encoded: a JSON number
// that MarshalJSON and the compaction leave as it is, after a key no other field of an object's
// metadata before its managedFields (strings, maps of strings, owner references) can write.
var (
	setPlaceholder    = metav1.FieldsV1{Raw: []byte("-0.0E-000")}
	setPlaceholderKey = []byte(`"fieldsV1":-0.0E-000`)
)

// encodedSet is json.Marshal of f, from the cache when it holds it.
func encodedSet(f *metav1.FieldsV1) ([]byte, error) {
	setJSON.mu.Lock()
	enc, ok := setJSON.m[string(f.Raw)]
	setJSON.mu.Unlock()
	if ok {
		return enc, nil
	}
	enc, err := json.Marshal(f)
	if err != nil {
		return nil, err
	}
	setJSON.mu.Lock()
	if setJSON.m == nil || len(setJSON.m) >= maxSetJSON {
		setJSON.m = map[string][]byte{}
	}
	setJSON.m[string(f.Raw)] = enc
	setJSON.mu.Unlock()
	return enc, nil
}

// marshalObject is json.Marshal(obj); obj's managedFields are another list while it runs (their
// array may be another object's too), then put back. The sets are encoded first, so an error is
// the one json.Marshal meets, which then answers it.
func marshalObject(obj runtime.Object) ([]byte, error) {
	var meta *metav1.ObjectMeta // not an unstructured object's: its managedFields are converted
	if a, ok := obj.(metav1.ObjectMetaAccessor); ok {
		meta, _ = a.GetObjectMeta().(*metav1.ObjectMeta)
	}
	if meta == nil {
		return json.Marshal(obj)
	}
	entries := meta.ManagedFields
	var encoded [][]byte
	size := 0
	for _, e := range entries {
		if e.FieldsV1 == nil {
			continue
		}
		enc, err := encodedSet(e.FieldsV1)
		if err != nil {
			return json.Marshal(obj)
		}
		encoded = append(encoded, enc)
		size += len(enc) - len(setPlaceholder.Raw)
	}
	if len(encoded) == 0 {
		return json.Marshal(obj)
	}
	placed := make([]metav1.ManagedFieldsEntry, len(entries))
	for i, e := range entries {
		if e.FieldsV1 != nil {
			e.FieldsV1 = &setPlaceholder
		}
		placed[i] = e
	}
	meta.ManagedFields = placed
	data, err := json.Marshal(obj)
	meta.ManagedFields = entries
	if err != nil {
		return json.Marshal(obj) // the error the sets' own encoding meets first
	}
	out := make([]byte, 0, len(data)+size)
	rest := data
	for _, enc := range encoded {
		at := bytes.Index(rest, setPlaceholderKey)
		if at < 0 {
			return json.Marshal(obj) // not reached: every set's placeholder is written
		}
		at += len(setPlaceholderKey) - len(setPlaceholder.Raw)
		out = append(append(out, rest[:at]...), enc...)
		rest = rest[at+len(setPlaceholder.Raw):]
	}
	return append(out, rest...), nil
}
