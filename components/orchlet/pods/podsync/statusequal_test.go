package podsync

import (
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var metaTime = reflect.TypeFor[metav1.Time]()

// fill sets every exported field under v: strings, numbers and bools to a value of their own,
// times to an instant, pointers to a filled value, slices and maps to one filled element.
func fill(v reflect.Value, n *int) {
	*n++
	switch {
	case v.Type() == metaTime:
		v.Set(reflect.ValueOf(metav1.NewTime(time.Date(2026, 1, 1, 0, 0, *n, 0, time.UTC))))
		return
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString("s" + string(rune('a'+*n%26)))
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(int64(*n))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(uint64(*n))
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fill(v.Elem(), n)
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 1, 1))
		fill(v.Index(0), n)
	case reflect.Map:
		k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
		fill(k, n)
		fill(e, n)
		v.Set(reflect.MakeMap(v.Type()))
		v.SetMapIndex(k, e)
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fill(v.Field(i), n)
			}
		}
	}
}

// change alters the target'th place under v, counting in fill's order: a leaf takes another
// value, a pointer, slice or map becomes nil (a slice or map also empty, when empty is asked). It
// reports whether it found the target.
func change(v reflect.Value, target int, n *int, empty bool) bool {
	*n++
	here := *n == target
	switch {
	case v.Type() == metaTime:
		if here {
			v.Set(reflect.ValueOf(metav1.NewTime(v.Interface().(metav1.Time).Add(time.Second))))
		}
		return here
	}
	switch v.Kind() {
	case reflect.String:
		if here {
			v.SetString(v.String() + "x")
		}
	case reflect.Bool:
		if here {
			v.SetBool(!v.Bool())
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if here {
			v.SetInt(v.Int() + 1)
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if here {
			v.SetUint(v.Uint() + 1)
		}
	case reflect.Pointer:
		if here {
			v.SetZero()
			return true
		}
		return change(v.Elem(), target, n, empty)
	case reflect.Slice:
		if here {
			if empty {
				v.Set(reflect.MakeSlice(v.Type(), 0, 0))
			} else {
				v.SetZero()
			}
			return true
		}
		return change(v.Index(0), target, n, empty)
	case reflect.Map:
		if here {
			if empty {
				v.Set(reflect.MakeMap(v.Type()))
			} else {
				v.SetZero()
			}
			return true
		}
		// A map's entry is changed by writing it back changed.
		it := v.MapRange()
		it.Next()
		k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
		k.Set(it.Key())
		e.Set(it.Value())
		found := change(e, target, n, empty)
		v.SetMapIndex(k, e)
		return found
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() && change(v.Field(i), target, n, empty) {
				return true
			}
		}
	}
	return here
}

// statusEqual answers as reflect.DeepEqual does for two copies of a status with every field set,
// and for each copy with one place changed: every leaf, every pointer, slice and map made nil,
// every slice and map made empty (and against the same place nil). A field the API adds and statusEqual does not compare fails
// here.
func TestStatusEqualIsDeepEqual(t *testing.T) {
	var base corev1.PodStatus
	n := 0
	fill(reflect.ValueOf(&base).Elem(), &n)
	if c := base.DeepCopy(); !statusEqual(&base, c) || !reflect.DeepEqual(&base, c) {
		t.Fatalf("a copy of the status is not equal to it")
	}
	if !statusEqual(&corev1.PodStatus{}, &corev1.PodStatus{}) {
		t.Fatal("two empty statuses are not equal")
	}
	changes := 0
	for _, empty := range []bool{false, true} {
		for target := 1; ; target++ {
			c := base.DeepCopy()
			if !change(reflect.ValueOf(c).Elem(), target, new(int), empty) {
				break
			}
			deep := reflect.DeepEqual(&base, c)
			if deep {
				continue // a leaf of an unexported type's (a quantity's): nothing changed
			}
			changes++
			if statusEqual(&base, c) || statusEqual(c, &base) {
				t.Errorf("change %d (empty %v): statusEqual finds the statuses equal, reflect.DeepEqual does not:\n%+v\n%+v", target, empty, base, *c)
			}
			if !empty {
				continue
			}
			// The same place nil in one and empty in the other.
			nilled := base.DeepCopy()
			change(reflect.ValueOf(nilled).Elem(), target, new(int), false)
			if !reflect.DeepEqual(nilled, c) && (statusEqual(nilled, c) || statusEqual(c, nilled)) {
				t.Errorf("change %d: statusEqual finds nil and empty equal, reflect.DeepEqual does not:\n%+v\n%+v", target, *nilled, *c)
			}
		}
	}
	if changes < 100 {
		t.Fatalf("only %d changes tried", changes)
	}
}
