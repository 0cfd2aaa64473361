package generic

import (
	"encoding/json"
	"reflect"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/structured-merge-diff/v6/schema"
	"sigs.k8s.io/structured-merge-diff/v6/typed"
)

// An update's managedFields come from the library's comparison of the live object with the new
// one: the paths it finds added, modified and removed. A field equal in the two adds no path,
// whatever it holds (the walk of equal values records nothing, in an atomic value as in a
// granular one), yet the library types it twice and walks it twice: for a node status post,
// the images, the node's info, capacity and addresses, which a heartbeat leaves as they were,
// against the few condition timestamps it changes. So an update types both objects without the
// fields equal in them that the schema's typing cannot fail on (pruneTree): the same comparison,
// the same managedFields (TestPrunedTypingChangesNothing), for 11% less CPU a node status post
// (BenchmarkNodeStatusPost, reports/speed.md): what is left is the walk of every struct's
// fields, empty or not, and the conditions a heartbeat changes.

// pruneTree is, for a Go struct type, the fields an update may leave out of both objects it
// types when they are equal in the two.
type pruneTree struct {
	fields []pruneField
}

type pruneField struct {
	index []int
	// drop: the field is omitempty and of a kind whose zero value the typing leaves out, so
	// zeroing it in both objects leaves it out of both, and its typing cannot fail (safe).
	drop bool
	// sub is a struct-valued field's own tree: it is always typed, so its fields are looked at.
	sub *pruneTree
}

// newPruneTree builds the tree of t (a struct type) typed as tr of s; nil when nothing may go.
func newPruneTree(t reflect.Type, s *schema.Schema, tr schema.TypeRef) *pruneTree {
	return buildPrune(t, s, tr, map[typeAs]bool{})
}

func buildPrune(t reflect.Type, s *schema.Schema, tr schema.TypeRef, seen map[typeAs]bool) *pruneTree {
	atom, ok := s.Resolve(tr)
	if !ok || atom.Map == nil || atom.Map.ElementRelationship == schema.Atomic {
		return nil
	}
	p := &pruneTree{}
	for i := range t.NumField() {
		f := t.Field(i)
		name, omitempty, omitzero, inline, ok := jsonField(f)
		if !ok || inline { // TypeMeta names the type the typing looks up: never left out
			continue
		}
		sf, ok := atom.Map.FindField(name)
		if !ok {
			continue
		}
		switch k := f.Type.Kind(); {
		case k == reflect.Struct && !omitzero && !marshals(f.Type):
			if sub := buildPrune(f.Type, s, sf.Type, seen); sub != nil {
				p.fields = append(p.fields, pruneField{index: f.Index, sub: sub})
			}
		case omitempty && leftOutWhenZero(k) && safe(f.Type, s, sf.Type, seen):
			p.fields = append(p.fields, pruneField{index: f.Index, drop: true})
		}
	}
	if len(p.fields) == 0 {
		return nil
	}
	return p
}

// jsonField is the field's JSON name and options as encoding/json (and the library) read them.
// An embedded struct with no name is inlined: its fields are the parent's (inline).
func jsonField(f reflect.StructField) (name string, omitempty, omitzero, inline, ok bool) {
	if f.PkgPath != "" && !f.Anonymous {
		return "", false, false, false, false
	}
	tag := f.Tag.Get("json")
	if tag == "-" {
		return "", false, false, false, false
	}
	name, opts, _ := strings.Cut(tag, ",")
	if name == "" {
		name, inline = f.Name, f.Anonymous
	}
	has := func(o string) bool {
		for _, x := range strings.Split(opts, ",") {
			if x == o {
				return true
			}
		}
		return false
	}
	return name, has("omitempty"), has("omitzero"), inline, true
}

// leftOutWhenZero tells the kinds whose zero value an omitempty field leaves out of the typed
// value (the library's isEmpty): not a struct's.
func leftOutWhenZero(k reflect.Kind) bool {
	switch k {
	case reflect.Slice, reflect.Map, reflect.String, reflect.Pointer, reflect.Interface, reflect.Bool,
		reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
		return true
	}
	return false
}

// marshals tells a type typed through its own JSON (a time, a quantity, an int-or-string).
func marshals(t reflect.Type) bool {
	if m, ok := marshalsOf.Load(t); ok {
		return m.(bool)
	}
	m := reflect.TypeFor[json.Marshaler]()
	ok := t.Implements(m) || reflect.PointerTo(t).Implements(m)
	marshalsOf.Store(t, ok)
	return ok
}

// marshalsOf caches marshals: the fast path's walk asks it of every struct it meets.
var marshalsOf sync.Map // reflect.Type: bool

// safe tells whether the typing (validation and comparison, duplicates allowed) of any value of
// Go type t as tr cannot fail: every Go field has a field of the schema, and no item of an
// associative list with keys can be null or lack all its keys. A value with an error the library
// would meet is then never left out, so an update it fails still fails.
func safe(t reflect.Type, s *schema.Schema, tr schema.TypeRef, seen map[typeAs]bool) bool {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if marshals(t) {
		return true // its schema is a scalar or untyped: any JSON value is typed
	}
	if tr.NamedType == nil {
		return safeAtom(t, s, tr, seen) // an inlined schema type: no cycle passes through it alone
	}
	key := typeAs{t, *tr.NamedType}
	if ok, known := seen[key]; known {
		return ok // true while its own walk is under way: a cycle checks nothing new
	}
	seen[key] = true
	ok := safeAtom(t, s, tr, seen)
	seen[key] = ok
	return ok
}

// typeAs is a Go type typed as a named schema type: one Go type may be typed as several
// (LocalObjectReference items in an atomic list here, a keyed one there).
type typeAs struct {
	t    reflect.Type
	name string
}

func safeAtom(t reflect.Type, s *schema.Schema, tr schema.TypeRef, seen map[typeAs]bool) bool {
	atom, ok := s.Resolve(tr)
	if !ok {
		return false
	}
	switch {
	case atom.Scalar != nil:
		switch t.Kind() {
		case reflect.Struct, reflect.Map, reflect.Slice, reflect.Array, reflect.Interface:
			return t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Uint8 // []byte is a string
		}
		return true
	case atom.List != nil:
		if t.Kind() != reflect.Slice {
			return false
		}
		elem := t.Elem()
		if atom.List.ElementRelationship == schema.Associative {
			if elem.Kind() == reflect.Pointer || elem.Kind() == reflect.Interface {
				return false // a nil item is null
			}
			if len(atom.List.Keys) > 0 && !alwaysKeyed(elem, s, atom.List) {
				return false
			}
			if len(atom.List.Keys) == 0 && (elem.Kind() == reflect.Map || elem.Kind() == reflect.Struct && !marshals(elem)) {
				return false // a set of maps
			}
		}
		return safe(elem, s, atom.List.ElementType, seen)
	case atom.Map != nil:
		switch t.Kind() {
		case reflect.Map:
			return t.Key().Kind() == reflect.String && safe(t.Elem(), s, atom.Map.ElementType, seen)
		case reflect.Struct:
			return safeStruct(t, s, atom.Map, seen)
		}
	}
	return false
}

func safeStruct(t reflect.Type, s *schema.Schema, m *schema.Map, seen map[typeAs]bool) bool {
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _, inline, ok := jsonField(f)
		if !ok {
			continue
		}
		if inline {
			ft := f.Type
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() != reflect.Struct || !safeStruct(ft, s, m, seen) { // inlined fields
				return false
			}
			continue
		}
		sf, ok := m.FindField(name)
		if !ok {
			return false // a field the schema does not declare
		}
		if !safe(f.Type, s, sf.Type, seen) {
			return false
		}
	}
	return true
}

// alwaysKeyed tells whether every item of a keyed list of Go type elem has one of its keys: a
// field always encoded (not omitempty, not a pointer) or one the schema defaults.
func alwaysKeyed(elem reflect.Type, s *schema.Schema, l *schema.List) bool {
	if elem.Kind() != reflect.Struct {
		return false
	}
	atom, ok := s.Resolve(l.ElementType)
	if !ok || atom.Map == nil {
		return false
	}
	for _, key := range l.Keys {
		if sf, ok := atom.Map.FindField(key); ok && sf.Default != nil {
			return true
		}
		for i := range elem.NumField() {
			f := elem.Field(i)
			name, omitempty, omitzero, inline, ok := jsonField(f)
			if ok && !inline && name == key && !omitempty && !omitzero && f.Type.Kind() != reflect.Pointer && f.Type.Kind() != reflect.Interface {
				return true
			}
		}
	}
	return false
}

// prune zeroes, in the struct values l and n (shallow copies, never the objects themselves), the
// fields of p equal in the two; it reports whether it left any out.
func (p *pruneTree) prune(l, n reflect.Value) bool {
	pruned := false
	for _, f := range p.fields {
		lf, nf := l.FieldByIndex(f.index), n.FieldByIndex(f.index)
		switch {
		case f.drop:
			if lf.IsZero() && nf.IsZero() {
				continue
			}
			if reflect.DeepEqual(lf.Interface(), nf.Interface()) {
				lf.SetZero()
				nf.SetZero()
				pruned = true
			}
		case f.sub != nil:
			pruned = f.sub.prune(lf, nf) || pruned
		}
	}
	return pruned
}

// pruneTreeOf is the tree of obj's Go type, typed as tv's type; nil if nothing may go.
func pruneTreeOf(obj runtime.Object, tv *typed.TypedValue) *pruneTree {
	t := reflect.TypeOf(obj)
	if t.Kind() != reflect.Pointer || t.Elem().Kind() != reflect.Struct {
		return nil
	}
	return newPruneTree(t.Elem(), tv.Schema(), tv.TypeRef())
}
