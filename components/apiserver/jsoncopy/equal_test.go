package jsoncopy_test

import (
	"math"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"orch.io/orch/components/apiserver/jsoncopy"
)

// Equal of labels and resource lists, compared by their types, is reflect.DeepEqual's: a
// quantity's form and its cached string count, as they do for its encoding.
func TestEqualMapsAsDeepEqual(t *testing.T) {
	cached := resource.MustParse("4")
	_ = cached.String() // caches its string
	type labels map[string]string
	for _, tc := range []struct {
		name string
		l, n any
	}{
		{"labels equal", map[string]string{"a": "1", "b": "2"}, map[string]string{"b": "2", "a": "1"}},
		{"a label's value", map[string]string{"a": "1"}, map[string]string{"a": "2"}},
		{"a label's key", map[string]string{"a": "1"}, map[string]string{"b": "1"}},
		{"an empty value and none", map[string]string{"a": ""}, map[string]string{"b": ""}},
		{"nil and empty labels", map[string]string(nil), map[string]string{}},
		{"labels of a named type", labels{"a": "1"}, labels{"a": "1"}},
		{"labels of a named type unequal", labels{"a": "1"}, labels{"a": "2"}},
		{"resources equal", corev1.ResourceList{"cpu": resource.MustParse("4"), "memory": resource.MustParse("8Gi")},
			corev1.ResourceList{"memory": resource.MustParse("8Gi"), "cpu": resource.MustParse("4")}},
		{"a quantity's value", corev1.ResourceList{"cpu": resource.MustParse("4")}, corev1.ResourceList{"cpu": resource.MustParse("5")}},
		{"a quantity's form", corev1.ResourceList{"cpu": resource.MustParse("4")}, corev1.ResourceList{"cpu": resource.MustParse("4000m")}},
		{"a quantity's cached string", corev1.ResourceList{"cpu": resource.MustParse("4")}, corev1.ResourceList{"cpu": cached}},
		{"a resource's name", corev1.ResourceList{"cpu": resource.MustParse("4")}, corev1.ResourceList{"pods": resource.MustParse("4")}},
		{"a zero quantity and none", corev1.ResourceList{"cpu": {}}, corev1.ResourceList{"pods": {}}},
		{"nil and empty resources", corev1.ResourceList(nil), corev1.ResourceList{}},
		{"resources of another length", corev1.ResourceList{"cpu": resource.MustParse("4")}, corev1.ResourceList{}},
	} {
		want := reflect.DeepEqual(tc.l, tc.n)
		if got := jsoncopy.Equal(reflect.ValueOf(tc.l), reflect.ValueOf(tc.n)); got != want {
			t.Errorf("%s: Equal %v, DeepEqual %v", tc.name, got, want)
		}
		if got := jsoncopy.Equal(reflect.ValueOf(tc.n), reflect.ValueOf(tc.l)); got != want {
			t.Errorf("%s, the other way: Equal %v, DeepEqual %v", tc.name, got, want)
		}
	}
}

// Equal of structs, compared by their leaves in place, is reflect.DeepEqual's: a case per kind
// of leaf, in a nested struct, an unexported field and a slice's items; EqualBut is Equal but for
// one field.
func TestEqualStructsAsDeepEqual(t *testing.T) {
	type inner struct {
		B   bool
		I8  int8
		U16 uint16
		I32 int32
		F32 float32
		s   string
	}
	type all struct {
		S      string
		I      int
		U64    uint64
		F      float64
		In     inner
		P      *inner
		PP     **int
		Items  []inner
		None   []string
		Bytes  []byte
		M      map[string]int
		Any    any
		Arr    [2]string
		Fn     func()
		Q      resource.Quantity
		hidden int64
	}
	one, two := 1, 1
	pOne, pTwo := &one, &two
	nan := math.NaN()
	base := func() all {
		return all{S: "s", I: -1, U64: 1 << 60, F: 1.5, In: inner{B: true, I8: -2, U16: 7, I32: 9, F32: 0.5, s: "x"},
			P: &inner{s: "p"}, PP: &pOne, Items: []inner{{s: "a"}, {I32: 2}}, Bytes: []byte("ab"), M: map[string]int{"a": 1},
			Any: "v", Arr: [2]string{"a", "b"}, Q: resource.MustParse("4"), hidden: 3}
	}
	for _, tc := range []struct {
		name   string
		change func(*all)
	}{
		{"equal", func(*all) {}},
		{"a string", func(a *all) { a.S = "t" }},
		{"an int", func(a *all) { a.I = 1 }},
		{"a uint64's high bit", func(a *all) { a.U64 |= 1 << 63 }},
		{"a float", func(a *all) { a.F = 2 }},
		{"NaN", func(a *all) { a.F = nan }},
		{"zero and minus zero", func(a *all) { a.F = math.Copysign(0, -1) }},
		{"a nested bool", func(a *all) { a.In.B = false }},
		{"a nested int8", func(a *all) { a.In.I8 = 2 }},
		{"a nested uint16's high byte", func(a *all) { a.In.U16 |= 1 << 8 }},
		{"a nested int32's high bytes", func(a *all) { a.In.I32 |= 1 << 20 }},
		{"a nested float32", func(a *all) { a.In.F32 = 0.25 }},
		{"a nested unexported string", func(a *all) { a.In.s = "y" }},
		{"an unexported int", func(a *all) { a.hidden = 4 }},
		{"a pointer to an equal value", func(a *all) { a.P = &inner{s: "p"} }},
		{"a pointer to another value", func(a *all) { a.P = &inner{s: "q"} }},
		{"a nil pointer", func(a *all) { a.P = nil }},
		{"a pointer to an equal pointer", func(a *all) { a.PP = &pTwo }},
		{"an item", func(a *all) { a.Items = []inner{{s: "a"}, {I32: 3}} }},
		{"an equal copy of the items", func(a *all) { a.Items = append([]inner(nil), a.Items...) }},
		{"nil and empty items", func(a *all) { a.Items = nil }},
		{"empty items", func(a *all) { a.Items = []inner{} }},
		{"an empty slice for nil", func(a *all) { a.None = []string{} }},
		{"fewer items", func(a *all) { a.Items = a.Items[:1] }},
		{"a byte", func(a *all) { a.Bytes = []byte("ac") }},
		{"a map's value", func(a *all) { a.M = map[string]int{"a": 2} }},
		{"an interface's value", func(a *all) { a.Any = "w" }},
		{"an interface's type", func(a *all) { a.Any = 1 }},
		{"an array's item", func(a *all) { a.Arr[1] = "c" }},
		{"a func", func(a *all) { a.Fn = func() {} }},
		{"a quantity's form", func(a *all) { a.Q = resource.MustParse("4000m") }},
		{"a quantity's cached string", func(a *all) { _ = a.Q.String() }},
	} {
		l, n := base(), base()
		tc.change(&n)
		if tc.name == "NaN" {
			l.F = nan
		}
		want := reflect.DeepEqual(l, n)
		if got := jsoncopy.Equal(reflect.ValueOf(&l).Elem(), reflect.ValueOf(&n).Elem()); got != want {
			t.Errorf("%s: Equal %v, DeepEqual %v", tc.name, got, want)
		}
		if got := jsoncopy.Equal(reflect.ValueOf(&n).Elem(), reflect.ValueOf(&l).Elem()); got != want {
			t.Errorf("%s, the other way: Equal %v, DeepEqual %v", tc.name, got, want)
		}
		// EqualBut, but for hidden, is Equal with the two hidden alike.
		hidden, _ := reflect.TypeFor[all]().FieldByName("hidden")
		lb, nb := l, n
		lb.hidden, nb.hidden = 1, 2
		if got, want := jsoncopy.EqualBut(reflect.ValueOf(&lb).Elem(), reflect.ValueOf(&nb).Elem(), hidden.Index[0]), tc.name == "an unexported int" || want; got != want {
			t.Errorf("%s, but for hidden: EqualBut %v, want %v", tc.name, got, want)
		}
		ls, ns := []all{l, l}, []all{l, n}
		if got := jsoncopy.Equal(reflect.ValueOf(ls), reflect.ValueOf(ns)); got != want {
			t.Errorf("%s, as a slice's item: Equal %v, DeepEqual %v", tc.name, got, want)
		}
	}
}
