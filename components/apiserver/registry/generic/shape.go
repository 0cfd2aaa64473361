package generic

import (
	"bytes"
	"encoding/json"
	"errors"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// maxShapes bounds the fields remembered per store; objects of further shapes are typed each time.
const maxShapes = 1024

// createShapes remembers, per shape of a created object, the fields its creator manages: on a
// create those are every field the object sets, which depends on which fields are set (and on
// the contents of lists, which may be keyed by them), not on scalar values. Typing an object
// with structured-merge-diff costs several times the rest of a create; events, created by the
// thousand in a few shapes, pay it once per shape.
type createShapes struct {
	mu     sync.Mutex
	fields map[string]metav1.FieldsV1
}

// shapeBuffer holds a create's JSON and shape while its fields are looked up: kept for the next
// create rather than allocated each time, about 2 KB an event.
type shapeBuffer struct {
	json  bytes.Buffer
	shape []byte
}

var shapeBuffers = sync.Pool{New: func() any { return new(shapeBuffer) }}

// maxPooledShape bounds the buffers kept: a rare large object's are let go.
const maxPooledShape = 64 << 10

// appendShape appends to out the shape of data, a JSON object: data with every scalar outside
// arrays replaced by one character; keys, nesting, nulls and arrays (whole) remain. It fails on
// what is not JSON.
func appendShape(out []byte, data []byte) ([]byte, error) {
	// inObject[i] tells whether the i-th open container is an object; expectKey whether the next
	// string in it is a key.
	var inObject []bool
	expectKey := false
	for i := 0; i < len(data); i++ {
		c := data[i]
		switch c {
		case ' ', '\t', '\n', '\r':
		case '{':
			inObject = append(inObject, true)
			expectKey = true
			out = append(out, c)
		case '}':
			if len(inObject) == 0 || !inObject[len(inObject)-1] {
				return nil, errNotJSON
			}
			inObject = inObject[:len(inObject)-1]
			expectKey = false
			out = append(out, c)
		case ':':
			expectKey = false
			out = append(out, c)
		case ',':
			expectKey = len(inObject) > 0 && inObject[len(inObject)-1]
			out = append(out, c)
		case '[':
			end, err := skipValue(data, i)
			if err != nil {
				return nil, err
			}
			out = append(out, data[i:end]...)
			i = end - 1
		case '"':
			end, err := skipString(data, i)
			if err != nil {
				return nil, err
			}
			if expectKey {
				out = append(out, data[i:end]...)
			} else {
				out = append(out, '_')
			}
			i = end - 1
		case 'n':
			if len(data) < i+4 || string(data[i:i+4]) != "null" {
				return nil, errNotJSON
			}
			out = append(out, "null"...)
			i += 3
		default:
			end := i
			for end < len(data) && !isDelimiter(data[end]) {
				end++
			}
			out = append(out, '_')
			i = end - 1
		}
	}
	if len(inObject) != 0 {
		return nil, errNotJSON
	}
	return out, nil
}

var errNotJSON = errors.New("not a JSON object")

func isDelimiter(c byte) bool {
	switch c {
	case ',', '}', ']', ' ', '\t', '\n', '\r':
		return true
	}
	return false
}

// skipString returns the index after the string starting at data[i].
func skipString(data []byte, i int) (int, error) {
	for j := i + 1; j < len(data); j++ {
		switch data[j] {
		case '\\':
			j++
		case '"':
			return j + 1, nil
		}
	}
	return 0, errNotJSON
}

// skipValue returns the index after the array or object starting at data[i].
func skipValue(data []byte, i int) (int, error) {
	depth := 0
	for j := i; j < len(data); j++ {
		switch data[j] {
		case '"':
			end, err := skipString(data, j)
			if err != nil {
				return 0, err
			}
			j = end - 1
		case '[', '{':
			depth++
		case ']', '}':
			depth--
			if depth == 0 {
				return j + 1, nil
			}
		}
	}
	return 0, errNotJSON
}

// recordCreate sets the managedFields of next, a new object sent without any, as manager's
// Update: from the fields remembered for its shape, or typed and remembered.
func (s *Store) recordCreate(f *fieldManager, next runtime.Object, manager string) (runtime.Object, error) {
	s.setTypeMeta(next)
	buf := shapeBuffers.Get().(*shapeBuffer)
	defer func() {
		if buf.json.Cap() <= maxPooledShape {
			shapeBuffers.Put(buf)
		}
	}()
	buf.json.Reset()
	// Encode is Marshal with a newline after, which appendShape skips, into a buffer kept for the next.
	if err := json.NewEncoder(&buf.json).Encode(next); err != nil {
		return nil, internal(err)
	}
	var err error
	if buf.shape, err = appendShape(buf.shape[:0], buf.json.Bytes()); err != nil {
		return nil, internal(err)
	}
	now := metav1.NewTime(s.clock.Now().Truncate(time.Second))
	s.shapes.mu.Lock()
	fields, ok := s.shapes.fields[string(buf.shape)]
	s.shapes.mu.Unlock()
	if ok {
		if manager == "" {
			manager = "unknown" // as the library names it
		}
		accessor(next).SetManagedFields([]metav1.ManagedFieldsEntry{{
			Manager: manager, Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: s.gvk.GroupVersion().String(),
			Time: &now, FieldsType: "FieldsV1", FieldsV1: fields.DeepCopy(),
		}})
		return next, nil
	}
	live := s.strategy.New()
	s.setTypeMeta(live)
	out := f.fm.UpdateNoErrors(live, next, manager)
	s.dateWrites(out, nil)
	entries := accessor(out).GetManagedFields()
	if len(entries) == 1 && entries[0].FieldsV1 != nil {
		s.shapes.mu.Lock()
		if s.shapes.fields == nil {
			s.shapes.fields = map[string]metav1.FieldsV1{}
		}
		if len(s.shapes.fields) < maxShapes {
			s.shapes.fields[string(buf.shape)] = *entries[0].FieldsV1.DeepCopy()
		}
		s.shapes.mu.Unlock()
	}
	return out, nil
}
