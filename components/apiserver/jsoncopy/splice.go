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
	data, _, _, ok := splice(obj, old, enc, nil)
	return data, ok
}

// SplicedDecoded is Spliced, also making what its bytes decode to, and whether that encodes as
// they are (same), as DecodedSame would of obj: into, a deep copy of old given by the caller,
// with the parts that changed replaced by their decoded copies. Where old is what enc decodes
// to, its unchanged parts are what their bytes decode to; a generated deep copy of them is a
// fraction of walking them by reflection again. decoded is nil where a changed part has no copy.
func SplicedDecoded(obj, old runtime.Object, enc []byte, into runtime.Object) (data []byte, decoded runtime.Object, same, ok bool) {
	return splice(obj, old, enc, into)
}

func splice(obj, old runtime.Object, enc []byte, into runtime.Object) (data []byte, decoded runtime.Object, same, ok bool) {
	n, o := reflect.ValueOf(obj), reflect.ValueOf(old)
	if n.Kind() != reflect.Pointer || n.IsNil() || o.Type() != n.Type() || o.IsNil() {
		return nil, nil, false, false
	}
	s := splicer{src: enc}
	var c reflect.Value
	if into != nil {
		if c = reflect.ValueOf(into); c.Type() != n.Type() || c.IsNil() {
			return nil, nil, false, false
		}
		c, s.copying = c.Elem(), true
	}
	if !s.walk(planOf(n.Type().Elem()), n.Elem(), o.Elem(), c) || s.pos != len(enc) {
		return nil, nil, false, false
	}
	if s.copying && !s.uncopied {
		decoded, same = into, !s.cp.moved
	}
	if s.out == nil {
		return enc, decoded, same, true // nothing changed
	}
	return append(s.out, enc[s.copied:]...), decoded, same, true
}

// splicer reads src, the old object's encoding, at pos, and writes the new one's into out: src up
// to copied is in out, edited.
type splicer struct {
	src         []byte
	pos, copied int
	out         []byte
	// copying: the walk also replaces, in the decoded copy, the parts it encodes alone; uncopied
	// when one could not be copied; cp what the copies found.
	copying, uncopied bool
	cp                copier
}

// walk reads o's encoding at pos, over which n's goes. n and o are addressable; c is o's place
// in the decoded copy, when copying. A struct, a pointer or a list is walked into, not compared
// first: each part is compared once.
func (s *splicer) walk(p *copyPlan, n, o, c reflect.Value) bool {
	switch p.kind {
	case planStruct:
		return s.fields(p, n, o, c)
	case planPointer:
		if n.IsNil() && o.IsNil() {
			return s.skip()
		}
		if !n.IsNil() && !o.IsNil() {
			return s.pointee(p, n, o, c)
		}
	case planSlice:
		if n.IsNil() && o.IsNil() {
			return s.skip()
		}
		if !n.IsNil() && !o.IsNil() && n.Len() == o.Len() {
			return s.items(p, n, o, c)
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
	if s.copying && !s.uncopied {
		c.SetZero()
		s.uncopied = !p.copy(&s.cp, c, n, true)
	}
	if s.out == nil { // room for a few more times than there were
		s.out = make([]byte, 0, len(s.src)+4*len(data))
	}
	s.out = append(append(s.out, s.src[s.copied:start]...), data...)
	s.copied = s.pos
	return true
}

// pointee walks what the pointers n and o point to. A pointer to what may encode as null (a
// time, a list, a value with its own MarshalJSON) decodes as nil then, not as a pointer to it:
// where such a pointee changed, the decoded copy's pointer is copied whole.
func (s *splicer) pointee(p *copyPlan, n, o, c reflect.Value) bool {
	if !s.copying {
		return s.walk(p.elem, n.Elem(), o.Elem(), c)
	}
	switch p.elem.kind {
	case planStruct, planPlain, planString:
		return s.walk(p.elem, n.Elem(), o.Elem(), c.Elem())
	}
	s.copying = false
	copied := s.copied
	ok := s.walk(p.elem, n.Elem(), o.Elem(), c)
	s.copying = true
	if ok && s.copied != copied && !s.uncopied {
		c.SetZero()
		s.uncopied = !p.copy(&s.cp, c, n, true)
	}
	return ok
}

func (s *splicer) fields(p *copyPlan, n, o, c reflect.Value) bool {
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
		var cf reflect.Value
		if s.copying {
			cf = c.FieldByIndex(f.index)
		}
		if !first && !s.expect(",") || !s.expect(f.key) || !s.walk(f.plan, nf, of, cf) {
			return false
		}
		first = false
	}
	return s.expect("}")
}

func (s *splicer) items(p *copyPlan, n, o, c reflect.Value) bool {
	if !s.expect("[") {
		return false
	}
	for i := range n.Len() {
		var ci reflect.Value
		if s.copying {
			ci = c.Index(i)
		}
		if i > 0 && !s.expect(",") || !s.walk(p.elem, n.Index(i), o.Index(i), ci) {
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
