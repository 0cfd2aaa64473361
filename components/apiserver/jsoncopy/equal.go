package jsoncopy

import (
	"bytes"
	"maps"
	"reflect"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Equal is reflect.DeepEqual of l and n, values of one type, without the record DeepEqual keeps
// of the pointers, slices and maps it went into, a guard against cycles that it allocates and
// grows at every call (half a node post's comparisons in registry/generic's fast path): an
// object decoded from a request has no cycle. Over values without one the answers are
// DeepEqual's, case for case.
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
		if l.Type().Elem().Kind() == reflect.Uint8 {
			return bytes.Equal(l.Bytes(), n.Bytes())
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
// in one pair of variables.
func equalQuantities(l, n corev1.ResourceList) bool {
	var lq, nq resource.Quantity
	lv, nv := reflect.ValueOf(&lq).Elem(), reflect.ValueOf(&nq).Elem()
	for k, q := range l {
		o, ok := n[k]
		if !ok {
			return false
		}
		lq, nq = q, o
		if !Equal(lv, nv) {
			return false
		}
	}
	return true
}
