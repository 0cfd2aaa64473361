package jsoncopy

import (
	"bytes"
	"encoding"
	"encoding/json"
	"reflect"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// An update reads the object the previous update wrote and decodes its stored JSON: in a
// simulated API-mode node's status post and lease renewal, almost every read is of the bytes the
// store's own last write of that key stored (measured: every read after the nodes registered).
// The object that write held is not what those bytes decode to (times cut to the second and put
// in the local zone, quantities parsed again, empty lists left out as nil), so it cannot be kept
// as it is; Decoded makes, from it, the object json.Unmarshal of json.Marshal of it gives,
// walking its fields by encoding/json's rules without writing or scanning the bytes, and the
// store keeps it for the next read of those same bytes (registry/generic's decodedCache). Where a rule is not one it
// follows for sure (an interface holding a value, a string not valid UTF-8, a text marshaler, an
// array, a name two fields share, a ",string" field), it answers false and the bytes are decoded.
// registry/generic's TestDecodedCopyIsTheDecode holds it to the decode over every served kind,
// fuzzed; TestDecodedFollowsTheEncoding here, a case per rule.

// Decoded is what decoding obj's JSON encoding gives, and whether it could tell.
func Decoded(obj runtime.Object) (runtime.Object, bool) {
	out, ok, _ := DecodedSame(obj)
	return out, ok
}

// DecodedSame is Decoded, also telling whether the copy encodes as obj does (same): a value with
// its own MarshalJSON need not (a quantity's form is what it was made with: 1000 may come back
// as 1k).
func DecodedSame(obj runtime.Object) (out runtime.Object, ok, same bool) {
	src := reflect.ValueOf(obj)
	if src.Kind() != reflect.Pointer || src.IsNil() {
		return nil, false, false
	}
	p := planOf(src.Type().Elem())
	dst := reflect.New(src.Type().Elem())
	var c copier
	if !p.copy(&c, dst.Elem(), src.Elem(), true) {
		return nil, false, false
	}
	out, ok = dst.Interface().(runtime.Object)
	return out, ok, !c.moved
}

// copier is what a copy found on its way: whether a value's encoding moved in its round trip.
type copier struct{ moved bool }

// settled notes whether what the encoding data of p's type decoded to, v, encodes as data.
func (c *copier) settled(p *copyPlan, v reflect.Value, addressable bool, data []byte) {
	if c.moved {
		return
	}
	again, ok := p.marshal(v, addressable)
	c.moved = !ok || !bytes.Equal(again, data)
}

type planKind int

const (
	planFail      planKind = iota
	planPlain              // bool, integers, floats: the value itself
	planString             // kept if valid UTF-8
	planTime               // metav1.Time: to the second, in the local zone
	planMicroTime          // metav1.MicroTime: to the microsecond, in the local zone
	planMarshals           // its own MarshalJSON and UnmarshalJSON
	planPointer
	planSlice
	planBytes // []byte: base64 and back
	planMap
	planStruct
	planInterface // nil only
)

// copyPlan is how a Go type's value is copied as its JSON round trip would make it.
type copyPlan struct {
	kind planKind
	t    reflect.Type
	elem *copyPlan
	// ptrMarshals: only *t has MarshalJSON, which encoding/json calls where the value is
	// addressable and not elsewhere.
	ptrMarshals bool
	fields      []fieldPlan
}

type fieldPlan struct {
	index []int
	// key is the field's name as encoding/json writes it before the value: "name":
	key       string
	omitEmpty bool
	omitZero  bool
	// zeroBy is how omitzero tells the field's zero, found once: asking reflect whether a type
	// implements IsZero at every copy was a sixth of a node's copy.
	zeroBy zeroBy
	plan   *copyPlan
}

// zeroBy is which IsZero, if any, encoding/json's omitzero asks of a field's static type.
type zeroBy int

const (
	zeroByReflect   zeroBy = iota // no IsZero: reflect's zero
	zeroByInterface               // an interface type with IsZero
	zeroByPointer                 // a pointer type with IsZero
	zeroByValue                   // IsZero on the value
	zeroByAddr                    // IsZero on its pointer
)

type zeroer interface{ IsZero() bool }

var zeroerType = reflect.TypeFor[zeroer]()

func zeroByOf(t reflect.Type) zeroBy {
	switch {
	case t.Kind() == reflect.Interface && t.Implements(zeroerType):
		return zeroByInterface
	case t.Kind() == reflect.Pointer && t.Implements(zeroerType):
		return zeroByPointer
	case t.Implements(zeroerType):
		return zeroByValue
	case reflect.PointerTo(t).Implements(zeroerType):
		return zeroByAddr
	}
	return zeroByReflect
}

var plans sync.Map // reflect.Type to *copyPlan

func planOf(t reflect.Type) *copyPlan {
	if p, ok := plans.Load(t); ok {
		return p.(*copyPlan)
	}
	building := map[reflect.Type]*copyPlan{}
	p := buildPlan(t, building)
	for bt, bp := range building {
		plans.LoadOrStore(bt, bp)
	}
	return p
}

var (
	marshalerType       = reflect.TypeFor[json.Marshaler]()
	unmarshalerType     = reflect.TypeFor[json.Unmarshaler]()
	textMarshalerType   = reflect.TypeFor[encoding.TextMarshaler]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
	timeType            = reflect.TypeFor[metav1.Time]()
	microTimeType       = reflect.TypeFor[metav1.MicroTime]()
)

func implements(t, iface reflect.Type) bool {
	return t.Implements(iface) || reflect.PointerTo(t).Implements(iface)
}

func buildPlan(t reflect.Type, building map[reflect.Type]*copyPlan) *copyPlan {
	if p, ok := building[t]; ok {
		return p // a recursive type: filled in by the walk under way
	}
	if p, ok := plans.Load(t); ok {
		return p.(*copyPlan)
	}
	p := &copyPlan{t: t}
	building[t] = p
	switch {
	case t == timeType:
		p.kind = planTime
		return p
	case t == microTimeType:
		p.kind = planMicroTime
		return p
	case t.Kind() != reflect.Pointer && (implements(t, marshalerType) || implements(t, unmarshalerType)):
		// Encoded by its MarshalJSON, decoded by its UnmarshalJSON: both, or the rules are others'.
		if reflect.PointerTo(t).Implements(unmarshalerType) && implements(t, marshalerType) {
			p.kind, p.ptrMarshals = planMarshals, !t.Implements(marshalerType)
		}
		return p
	case t.Kind() != reflect.Pointer && (implements(t, textMarshalerType) || implements(t, textUnmarshalerType)):
		return p // planFail
	}
	switch t.Kind() {
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
		p.kind = planPlain
	case reflect.String:
		p.kind = planString
	case reflect.Interface:
		p.kind = planInterface
	case reflect.Pointer:
		if t.Elem().Kind() == reflect.Pointer {
			return p
		}
		p.kind, p.elem = planPointer, buildPlan(t.Elem(), building)
	case reflect.Slice:
		e := t.Elem()
		if e.Kind() == reflect.Uint8 {
			if implements(e, marshalerType) || implements(e, textMarshalerType) || implements(e, unmarshalerType) || implements(e, textUnmarshalerType) {
				return p
			}
			p.kind = planBytes
			return p
		}
		p.kind, p.elem = planSlice, buildPlan(e, building)
	case reflect.Map:
		k := t.Key()
		if k.Kind() != reflect.String || implements(k, textUnmarshalerType) || implements(k, textMarshalerType) {
			return p
		}
		p.kind, p.elem = planMap, buildPlan(t.Elem(), building)
	case reflect.Struct:
		fields, ok := structFields(t, nil, building)
		if !ok {
			return p
		}
		seen := map[string]bool{}
		for _, f := range fields {
			if seen[f.name] {
				return p // encoding/json's rules of dominance decide: not followed here
			}
			seen[f.name] = true
		}
		p.kind = planStruct
		for _, f := range fields {
			p.fields = append(p.fields, f.fieldPlan)
		}
	}
	return p
}

type namedField struct {
	name string
	fieldPlan
}

// structFields lists t's fields as encoding/json encodes them, an untagged embedded struct's
// promoted; false for what it does not follow.
func structFields(t reflect.Type, index []int, building map[reflect.Type]*copyPlan) ([]namedField, bool) {
	var out []namedField
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if !validTag(name) {
			name = ""
		}
		idx := append(append([]int(nil), index...), i)
		if f.Anonymous {
			ft := f.Type
			ptr := ft.Kind() == reflect.Pointer
			if ptr {
				ft = ft.Elem()
			}
			if !f.IsExported() && ft.Kind() != reflect.Struct {
				continue
			}
			if name == "" && ft.Kind() == reflect.Struct {
				if ptr {
					return nil, false // allocated by the decode only when one of its fields is there
				}
				sub, ok := structFields(ft, idx, building)
				if !ok {
					return nil, false
				}
				out = append(out, sub...)
				continue
			}
			if !f.IsExported() {
				return nil, false
			}
		} else if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		key, _ := json.Marshal(name)
		fp := fieldPlan{index: idx, key: string(key) + ":", plan: buildPlan(f.Type, building)}
		for _, o := range strings.Split(opts, ",") {
			switch o {
			case "omitempty":
				fp.omitEmpty = true
			case "omitzero":
				fp.omitZero, fp.zeroBy = true, zeroByOf(f.Type)
			case "string":
				return nil, false
			}
		}
		out = append(out, namedField{name: name, fieldPlan: fp})
	}
	return out, true
}

// validTag is encoding/json's isValidTag.
func validTag(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		switch {
		case strings.ContainsRune("!#$%&()*+-./:;<=>?@[]^_{|}~ ", c):
		case !unicode.IsLetter(c) && !unicode.IsDigit(c):
			return false
		}
	}
	return true
}

// copy sets dst, a zero value of p's type, to what decoding src's encoding gives; addressable is
// whether encoding/json sees src as addressable (not inside a map's value).
func (p *copyPlan) copy(c *copier, dst, src reflect.Value, addressable bool) bool {
	switch p.kind {
	case planPlain:
		dst.Set(src)
	case planString:
		if !utf8.ValidString(src.String()) {
			return false
		}
		dst.Set(src)
	case planTime:
		t, _ := reflect.TypeAssert[metav1.Time](src) // not boxed: src may be a map's value
		if t.Time.IsZero() {
			return true
		}
		if y := t.UTC().Year(); y < 1 || y > 9999 {
			return false // RFC 3339 has four digits: the decode fails, as it should
		}
		d := dst.Addr().Interface().(*metav1.Time)
		*d = metav1.NewTime(time.Unix(t.Unix(), 0).Local())
		c.moved = c.moved || d.IsZero() // within year 1's first second: null now
	case planMicroTime:
		// Its MarshalJSON and UnmarshalJSON, through RFC3339Micro, without the text.
		t, _ := reflect.TypeAssert[metav1.MicroTime](src)
		if t.Time.IsZero() {
			return true
		}
		if y := t.UTC().Year(); y < 1 || y > 9999 {
			return false
		}
		d := dst.Addr().Interface().(*metav1.MicroTime)
		*d = metav1.NewMicroTime(time.Unix(t.Unix(), int64(t.Nanosecond()/1000*1000)).Local())
		c.moved = c.moved || d.IsZero()
	case planMarshals:
		data, ok := p.marshal(src, addressable)
		if !ok {
			return false
		}
		if err := dst.Addr().Interface().(json.Unmarshaler).UnmarshalJSON(data); err != nil {
			return false
		}
		c.settled(p, dst, addressable, data)
	case planPointer:
		if src.IsNil() {
			return true
		}
		e := src.Elem()
		switch p.elem.kind {
		// A pointer to what encodes as null decodes as nil, which a field with omitempty then
		// leaves out: the copy's encoding may not be obj's.
		case planSlice, planBytes, planMap, planInterface:
			if e.IsNil() {
				c.moved = true
				return true
			}
		case planMarshals:
			data, ok := p.elem.marshal(e, true)
			if !ok {
				return false
			}
			if string(data) == "null" {
				c.moved = true
				return true
			}
			v := reflect.New(p.elem.t)
			if err := v.Interface().(json.Unmarshaler).UnmarshalJSON(data); err != nil {
				return false
			}
			c.settled(p.elem, v.Elem(), true, data)
			dst.Set(v)
			return true
		case planTime:
			if t, _ := reflect.TypeAssert[metav1.Time](e); t.Time.IsZero() {
				c.moved = true
				return true
			}
		case planMicroTime:
			if t, _ := reflect.TypeAssert[metav1.MicroTime](e); t.Time.IsZero() {
				c.moved = true
				return true
			}
		}
		v := reflect.New(p.elem.t)
		if !p.elem.copy(c, v.Elem(), e, true) {
			return false
		}
		dst.Set(v)
	case planSlice:
		if src.IsNil() {
			return true
		}
		n := src.Len()
		out := reflect.MakeSlice(p.t, n, n)
		for i := range n {
			if !p.elem.copy(c, out.Index(i), src.Index(i), true) {
				return false
			}
		}
		dst.Set(out)
	case planBytes:
		if src.IsNil() {
			return true
		}
		out := reflect.MakeSlice(p.t, src.Len(), src.Len())
		reflect.Copy(out, src)
		dst.Set(out)
	case planMap:
		if src.IsNil() {
			return true
		}
		out := reflect.MakeMapWithSize(p.t, src.Len())
		// One key and one value set from the iterator and copied into the map: its Key, Value
		// and a value made for each entry allocated three times an entry.
		k, v, from := reflect.New(p.t.Key()).Elem(), reflect.New(p.t.Elem()).Elem(), reflect.Value{}
		if p.elem.kind != planPlain && p.elem.kind != planString {
			from = reflect.New(p.t.Elem()).Elem()
		}
		it := src.MapRange()
		for it.Next() {
			k.SetIterKey(it)
			if !utf8.ValidString(k.String()) {
				return false
			}
			switch p.elem.kind {
			case planPlain: // the value itself
				v.SetIterValue(it)
			case planString:
				if v.SetIterValue(it); !utf8.ValidString(v.String()) {
					return false
				}
			default:
				from.SetIterValue(it)
				v.SetZero()
				if !p.elem.copy(c, v, from, false) {
					return false
				}
			}
			out.SetMapIndex(k, v)
		}
		dst.Set(out)
	case planStruct:
		for i := range p.fields {
			f := &p.fields[i] // not copied: the loop's copies were half the struct case's own time
			sv := src.FieldByIndex(f.index)
			if f.omitted(sv, addressable) {
				continue
			}
			if !f.plan.copy(c, dst.FieldByIndex(f.index), sv, addressable) {
				return false
			}
		}
	case planInterface:
		return src.IsNil()
	default:
		return false
	}
	return true
}

// omitted tells whether encoding/json leaves the field's value v out.
func (f *fieldPlan) omitted(v reflect.Value, addressable bool) bool {
	if f.omitEmpty {
		switch v.Kind() {
		case reflect.Array, reflect.Map, reflect.Slice, reflect.String:
			if v.Len() == 0 {
				return true
			}
		case reflect.Float32, reflect.Float64:
			if v.Float() == 0 { // -0 too, which is not reflect's zero
				return true
			}
		case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
			reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
			reflect.Interface, reflect.Pointer:
			if v.IsZero() {
				return true
			}
		}
	}
	if !f.omitZero {
		return false
	}
	switch f.zeroBy {
	case zeroByInterface:
		return v.IsNil() || (v.Elem().Kind() == reflect.Pointer && v.Elem().IsNil()) || v.Interface().(zeroer).IsZero()
	case zeroByPointer:
		return v.IsNil() || v.Interface().(zeroer).IsZero()
	case zeroByValue:
		return v.Interface().(zeroer).IsZero()
	case zeroByAddr:
		if !v.CanAddr() {
			c := reflect.New(v.Type()).Elem()
			c.Set(v)
			v = c
		}
		return v.Addr().Interface().(zeroer).IsZero()
	}
	return v.IsZero()
}

// marshal is what encoding/json writes of v, a value with its own MarshalJSON: its output,
// compacted and with HTML's characters escaped as encoding/json does.
func (p *copyPlan) marshal(v reflect.Value, addressable bool) ([]byte, bool) {
	var m json.Marshaler
	switch {
	case v.CanAddr() && (addressable || !p.ptrMarshals):
		// Through its pointer, whose method set holds the value's methods: boxing the value
		// allocated a copy of it (a node's quantities, at every write and again in its check).
		m = v.Addr().Interface().(json.Marshaler)
	case !p.ptrMarshals:
		m = v.Interface().(json.Marshaler)
	default:
		return nil, false // encoded field by field: not followed here
	}
	data, err := m.MarshalJSON()
	if err != nil {
		return nil, false
	}
	for _, c := range data {
		if c <= ' ' || c == '<' || c == '>' || c == '&' || c >= utf8.RuneSelf {
			var b bytes.Buffer
			if json.Compact(&b, data) != nil {
				return nil, false
			}
			var e bytes.Buffer
			json.HTMLEscape(&e, b.Bytes())
			return e.Bytes(), true
		}
	}
	return data, true
}
