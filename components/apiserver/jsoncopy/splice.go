package jsoncopy

import (
	"encoding/json"
	"reflect"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// A heartbeat's write changes a few times of an object whose stored JSON the store has just read
// (a node's conditions' lastHeartbeatTime and its writer's managedFields time, a lease's
// renewTime): encoding all of it again was a fifth of the store's update. Spliced writes the
// encoding of what changed into the bytes of what did not.

// Spliced is json.Marshal(obj), made from enc, json.Marshal of old, an object of obj's type: where
// a part of obj equals old's (Equal; times to what their encodings keep) its bytes are enc's,
// and a part that does not is encoded alone, or walked into when it is a struct, a pointer or a
// list of the same length. It answers false where the walk cannot follow enc (a field present in
// one object and left out in the other, a key or delimiter not where the encoding puts it);
// json.Marshal must answer then. What it gives is the encoding only if enc is old's.
func Spliced(obj, old runtime.Object, enc []byte) ([]byte, bool) {
	n, o := reflect.ValueOf(obj), reflect.ValueOf(old)
	if n.Kind() != reflect.Pointer || n.IsNil() || o.Type() != n.Type() || o.IsNil() {
		return nil, false
	}
	s := splicer{src: enc}
	if !s.walk(planOf(n.Type().Elem()), n.Elem(), o.Elem()) || s.pos != len(enc) {
		return nil, false
	}
	if s.out == nil {
		return enc, true // nothing changed
	}
	return append(s.out, enc[s.copied:]...), true
}

// splicer reads src, the old object's encoding, at pos, and writes the new one's into out: src up
// to copied is in out, edited.
type splicer struct {
	src         []byte
	pos, copied int
	out         []byte
}

// walk reads o's encoding at pos, over which n's goes. n and o are addressable. A struct, a
// pointer or a list is walked into, not compared first: each part is compared once.
func (s *splicer) walk(p *copyPlan, n, o reflect.Value) bool {
	switch p.kind {
	case planStruct:
		return s.fields(p, n, o)
	case planPointer:
		if n.IsNil() && o.IsNil() {
			return s.skip()
		}
		if !n.IsNil() && !o.IsNil() {
			return s.walk(p.elem, n.Elem(), o.Elem())
		}
	case planSlice:
		if n.IsNil() && o.IsNil() {
			return s.skip()
		}
		if !n.IsNil() && !o.IsNil() && n.Len() == o.Len() {
			return s.items(p, n, o)
		}
	case planTime: // what the encoding keeps: the second, or null
		nt, _ := reflect.TypeAssert[metav1.Time](n)
		ot, _ := reflect.TypeAssert[metav1.Time](o)
		if nt.IsZero() == ot.IsZero() && nt.Unix() == ot.Unix() {
			return s.skip()
		}
	case planMicroTime:
		nt, _ := reflect.TypeAssert[metav1.MicroTime](n)
		ot, _ := reflect.TypeAssert[metav1.MicroTime](o)
		if nt.IsZero() == ot.IsZero() && nt.Unix() == ot.Unix() && nt.Nanosecond()/1000 == ot.Nanosecond()/1000 {
			return s.skip()
		}
	default:
		if Equal(n, o) {
			return s.skip()
		}
	}
	// Encoded alone: encoding/json writes an addressable value as it writes the value its
	// pointer points to.
	start := s.pos
	if !n.CanAddr() || !s.skip() {
		return false
	}
	var data []byte
	var err error
	switch p.kind { // RFC 3339 or null: nothing for encoding/json to compact or escape
	case planTime:
		t, _ := reflect.TypeAssert[metav1.Time](n)
		data, err = t.MarshalJSON()
	case planMicroTime:
		t, _ := reflect.TypeAssert[metav1.MicroTime](n)
		data, err = t.MarshalJSON()
	default:
		data, err = json.Marshal(n.Addr().Interface())
	}
	if err != nil {
		return false
	}
	if s.out == nil { // room for a few more times than there were
		s.out = make([]byte, 0, len(s.src)+4*len(data))
	}
	s.out = append(append(s.out, s.src[s.copied:start]...), data...)
	s.copied = s.pos
	return true
}

func (s *splicer) fields(p *copyPlan, n, o reflect.Value) bool {
	if !s.expect("{") {
		return false
	}
	first := true
	for i := range p.fields {
		f := &p.fields[i]
		nf, of := n.FieldByIndex(f.index), o.FieldByIndex(f.index)
		omitted := f.omitted(nf, true)
		if omitted != f.omitted(of, true) {
			return false
		}
		if omitted {
			continue
		}
		if !first && !s.expect(",") || !s.expect(f.key) || !s.walk(f.plan, nf, of) {
			return false
		}
		first = false
	}
	return s.expect("}")
}

func (s *splicer) items(p *copyPlan, n, o reflect.Value) bool {
	if !s.expect("[") {
		return false
	}
	for i := range n.Len() {
		if i > 0 && !s.expect(",") || !s.walk(p.elem, n.Index(i), o.Index(i)) {
			return false
		}
	}
	return s.expect("]")
}

// expect reads text at pos.
func (s *splicer) expect(text string) bool {
	if len(s.src)-s.pos < len(text) || string(s.src[s.pos:s.pos+len(text)]) != text {
		return false
	}
	s.pos += len(text)
	return true
}

// skip reads the value at pos, compact as encoding/json writes it.
func (s *splicer) skip() bool {
	src, i := s.src, s.pos
	if i >= len(src) {
		return false
	}
	switch src[i] {
	case '"':
		i = skipString(src, i)
	case '{', '[':
		depth := 0
		for i >= 0 && i < len(src) {
			switch src[i] {
			case '"':
				i = skipString(src, i)
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
			}
			i++
			if depth == 0 {
				break
			}
		}
		if depth != 0 {
			return false
		}
	default: // a number, true, false or null
		for i < len(src) && src[i] != ',' && src[i] != '}' && src[i] != ']' {
			i++
		}
		if i == s.pos {
			return false
		}
	}
	if i < 0 {
		return false
	}
	s.pos = i
	return true
}

// skipString is the end of the string at src[i], -1 if it has none.
func skipString(src []byte, i int) int {
	for i++; i < len(src); i++ {
		switch src[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return -1
}
