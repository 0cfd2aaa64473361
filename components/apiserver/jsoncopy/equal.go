package jsoncopy

import (
	"bytes"
	"maps"
	"reflect"
	"sync"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Equal is reflect.DeepEqual of l and n, values of one type, without the record DeepEqual keeps
// of the pointers, slices and maps it went into, a guard against cycles that it allocates and
// grows at every call (half a node post's comparisons in registry/generic's fast path): an
// object decoded from a request has no cycle. Over values without one the answers are
// DeepEqual's, case for case. Addressable structs, and a slice's items, are compared by their
// leaves (leavesOf).
func Equal(l, n reflect.Value) bool {
	if !l.IsValid() || !n.IsValid() {
		return l.IsValid() == n.IsValid()
	}
	if l.Type() != n.Type() {
		return false
	}
	switch l.Kind() {
	case reflect.Bool:
		return l.Bool() == n.Bool()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return l.Int() == n.Int()
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return l.Uint() == n.Uint()
	case reflect.Float32, reflect.Float64:
		return l.Float() == n.Float()
	case reflect.Complex64, reflect.Complex128:
		return l.Complex() == n.Complex()
	case reflect.String:
		return l.String() == n.String()
	case reflect.Array:
		for i := range l.Len() {
			if !Equal(l.Index(i), n.Index(i)) {
				return false
			}
		}
		return true
	case reflect.Slice:
		if l.IsNil() != n.IsNil() || l.Len() != n.Len() {
			return false
		}
		if l.UnsafePointer() == n.UnsafePointer() {
			return true
		}
		switch et := l.Type().Elem(); et.Kind() {
		case reflect.Uint8:
			return bytes.Equal(l.Bytes(), n.Bytes())
		case reflect.Struct: // one plan for every item
			p, a, b := leavesOf(et), l.UnsafePointer(), n.UnsafePointer()
			for i := range uintptr(l.Len()) {
				if !p.equal(unsafe.Add(a, i*et.Size()), unsafe.Add(b, i*et.Size())) {
					return false
				}
			}
			return true
		}
		for i := range l.Len() {
			if !Equal(l.Index(i), n.Index(i)) {
				return false
			}
		}
		return true
	case reflect.Interface:
		if l.IsNil() || n.IsNil() {
			return l.IsNil() == n.IsNil()
		}
		return Equal(l.Elem(), n.Elem())
	case reflect.Pointer:
		if l.UnsafePointer() == n.UnsafePointer() {
			return true
		}
		return Equal(l.Elem(), n.Elem())
	case reflect.Struct:
		if l.CanAddr() && n.CanAddr() {
			return leavesOf(l.Type()).equal(l.Addr().UnsafePointer(), n.Addr().UnsafePointer())
		}
		for i := range l.NumField() {
			if !Equal(l.Field(i), n.Field(i)) {
				return false
			}
		}
		return true
	case reflect.Map:
		if l.IsNil() != n.IsNil() || l.Len() != n.Len() {
			return false
		}
		if l.UnsafePointer() == n.UnsafePointer() {
			return true
		}
		// Labels, annotations and resource lists by their types: MapIndex allocated a copy of
		// every value it looked up (a quarter of a node status post's allocations in the store).
		if lm, ok := reflect.TypeAssert[map[string]string](l); ok {
			nm, _ := reflect.TypeAssert[map[string]string](n)
			return maps.Equal(lm, nm)
		}
		if lm, ok := reflect.TypeAssert[corev1.ResourceList](l); ok {
			nm, _ := reflect.TypeAssert[corev1.ResourceList](n)
			return equalQuantities(lm, nm)
		}
		// One key and one value set from the iterator: its Key and Value allocated at every
		// entry (a node's capacity and allocatable, at every post).
		k, lv := reflect.New(l.Type().Key()).Elem(), reflect.New(l.Type().Elem()).Elem()
		it := l.MapRange()
		for it.Next() {
			k.SetIterKey(it)
			lv.SetIterValue(it)
			nv := n.MapIndex(k)
			if !nv.IsValid() || !Equal(lv, nv) {
				return false
			}
		}
		return true
	case reflect.Func:
		return l.IsNil() && n.IsNil()
	case reflect.Chan, reflect.UnsafePointer:
		return l.UnsafePointer() == n.UnsafePointer()
	}
	return false
}

// equalQuantities is Equal of two resource lists of one length, each pair of quantities compared
// by their leaves in place, without a copy on the heap.
func equalQuantities(l, n corev1.ResourceList) bool {
	p := quantityLeaves
	for k, q := range l {
		o, ok := n[k]
		if !ok {
			return false
		}
		eq, scalars := p.scalarsEqual(unsafe.Pointer(&q), unsafe.Pointer(&o))
		if !scalars {
			eq = equalQuantity(q, o)
		}
		if !eq {
			return false
		}
	}
	return true
}

var quantityLeaves = leavesOf(reflect.TypeFor[resource.Quantity]())

// equalQuantity is Equal of q and o by reflection, for a quantity whose leaves are not scalars.
func equalQuantity(q, o resource.Quantity) bool {
	return Equal(reflect.ValueOf(&q).Elem(), reflect.ValueOf(&o).Elem())
}

// A struct is compared by its leaves: the fields of it and of the structs it holds, flattened,
// each read at its offset. Walking the fields by reflection (a Field a field, a call a level) was
// most of the comparisons of a heartbeat's update (the field manager's walk and the splice).

// leaf is a field read at off: a string, a number or a bool compared in place; a pointer or a
// slice compared in place when it is nil or the same as the other's, by Equal otherwise; any other
// kind (a map, an interface, an array) by Equal.
type leaf struct {
	off  uintptr
	kind leafKind
	typ  reflect.Type // the field's type; for a pointer, what it points to
}

type leafKind uint8

const (
	leafString leafKind = iota
	leafBytes1          // a bool or an integer, compared as its bytes
	leafBytes2
	leafBytes4
	leafBytes8
	leafFloat32 // NaN unequal to itself, -0 equal to 0, as ==
	leafFloat64
	leafPointer
	leafSlice
	leafValue
)

// bytesLeaf is the leaf of a bool or an integer by its size.
var bytesLeaf = map[uintptr]leafKind{1: leafBytes1, 2: leafBytes2, 4: leafBytes4, 8: leafBytes8}

type leaves []leaf

var leavesOfType sync.Map // reflect.Type: leaves

// leavesOf is the struct type t's leaves, in the order of its fields.
func leavesOf(t reflect.Type) leaves {
	if ls, ok := leavesOfType.Load(t); ok {
		return ls.(leaves)
	}
	var ls leaves
	appendLeaves(&ls, t, 0, -1)
	leavesOfType.Store(t, ls)
	return ls
}

type leavesKey struct {
	t    reflect.Type
	skip int
}

var leavesButOf sync.Map // leavesKey: leaves

// leavesBut is leavesOf but for the leaves of t's field at index skip.
func leavesBut(t reflect.Type, skip int) leaves {
	k := leavesKey{t, skip}
	if ls, ok := leavesButOf.Load(k); ok {
		return ls.(leaves)
	}
	var ls leaves
	appendLeaves(&ls, t, 0, skip)
	leavesButOf.Store(k, ls)
	return ls
}

// EqualBut is Equal of the addressable structs l and n, of one type, but for their fields at
// index skip: the field manager's walk compares two objects' metadata but for managedFields.
func EqualBut(l, n reflect.Value, skip int) bool {
	return leavesBut(l.Type(), skip).equal(l.Addr().UnsafePointer(), n.Addr().UnsafePointer())
}

func appendLeaves(ls *leaves, t reflect.Type, off uintptr, skip int) {
	for i := range t.NumField() {
		if i == skip {
			continue
		}
		f := t.Field(i)
		l := leaf{off: off + f.Offset, typ: f.Type}
		switch f.Type.Kind() {
		case reflect.Struct:
			appendLeaves(ls, f.Type, l.off, -1)
			continue
		case reflect.String:
			l.kind = leafString
		case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
			reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
			l.kind = bytesLeaf[f.Type.Size()]
		case reflect.Float32:
			l.kind = leafFloat32
		case reflect.Float64:
			l.kind = leafFloat64
		case reflect.Pointer:
			l.kind, l.typ = leafPointer, f.Type.Elem()
		case reflect.Slice:
			l.kind = leafSlice
		default:
			l.kind = leafValue
		}
		*ls = append(*ls, l)
	}
}

// equal is Equal of the structs at a and b, of the type ls are the leaves of.
func (ls leaves) equal(a, b unsafe.Pointer) bool {
	for i := range ls {
		l := &ls[i]
		x, y := unsafe.Add(a, l.off), unsafe.Add(b, l.off)
		if eq, ok := l.scalarEqual(x, y); ok {
			if !eq {
				return false
			}
			continue
		}
		if l.kind == leafSlice {
			sx, sy := (*sliceHeader)(x), (*sliceHeader)(y)
			if (sx.data == nil) != (sy.data == nil) || sx.len != sy.len {
				return false
			}
			if sx.data == sy.data {
				continue
			}
		}
		if !Equal(reflect.NewAt(l.typ, x).Elem(), reflect.NewAt(l.typ, y).Elem()) {
			return false
		}
	}
	return true
}

// scalarsEqual is equal where every leaf is a scalar or a pointer; ok is false where one is not.
// Unlike equal's, its arguments do not escape: a quantity compared in place is not allocated.
func (ls leaves) scalarsEqual(a, b unsafe.Pointer) (eq, ok bool) {
	for i := range ls {
		l := &ls[i]
		if eq, ok := l.scalarEqual(unsafe.Add(a, l.off), unsafe.Add(b, l.off)); !ok || !eq {
			return eq, ok
		}
	}
	return true, true
}

// scalarEqual compares the leaf l at x and y when it is a string, a number, a bool or a pointer
// (ok); what a pointer points to, not x or y, may escape.
func (l *leaf) scalarEqual(x, y unsafe.Pointer) (eq, ok bool) {
	switch l.kind {
	case leafString:
		return *(*string)(x) == *(*string)(y), true
	case leafBytes1:
		return *(*uint8)(x) == *(*uint8)(y), true
	case leafBytes2:
		return *(*uint16)(x) == *(*uint16)(y), true
	case leafBytes4:
		return *(*uint32)(x) == *(*uint32)(y), true
	case leafBytes8:
		return *(*uint64)(x) == *(*uint64)(y), true
	case leafFloat32:
		return *(*float32)(x) == *(*float32)(y), true
	case leafFloat64:
		return *(*float64)(x) == *(*float64)(y), true
	case leafPointer:
		px, py := *(*unsafe.Pointer)(x), *(*unsafe.Pointer)(y)
		return px == py || px != nil && py != nil && Equal(reflect.NewAt(l.typ, px).Elem(), reflect.NewAt(l.typ, py).Elem()), true
	}
	return false, false
}

// sliceHeader is how a slice is held: nil when data is.
type sliceHeader struct {
	data     unsafe.Pointer
	len, cap int
}
