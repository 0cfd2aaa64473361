package generic_test

import (
	"fmt"
	"math/rand"
	"reflect"
	"sort"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"

	"orch.io/orch/components/apiserver/registry/generic"
)

// changeOne changes one place of v, addressable, picked at random: a scalar, a pointer or a list
// made nil or empty, an item or a map key added, a map's value changed. It reports whether it
// changed something.
func changeOne(r *rand.Rand, v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Struct:
		var fields []int
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fields = append(fields, i)
			}
		}
		if len(fields) == 0 {
			return false
		}
		return changeOne(r, v.Field(fields[r.Intn(len(fields))]))
	case reflect.Pointer:
		if v.IsNil() || r.Intn(6) == 0 {
			if v.IsNil() {
				v.Set(reflect.New(v.Type().Elem()))
			} else {
				v.SetZero()
			}
			return true
		}
		return changeOne(r, v.Elem())
	case reflect.Slice:
		switch {
		case v.Len() > 0 && r.Intn(4) > 0:
			return changeOne(r, v.Index(r.Intn(v.Len())))
		case v.IsNil():
			v.Set(reflect.MakeSlice(v.Type(), 0, 0))
		case v.Len() == 0:
			v.SetZero()
		default:
			v.Set(reflect.Append(v, reflect.New(v.Type().Elem()).Elem()))
		}
		return true
	case reflect.Map:
		if v.IsNil() {
			v.Set(reflect.MakeMap(v.Type()))
			return true
		}
		keys := v.MapKeys()
		sort.Slice(keys, func(i, j int) bool { return fmt.Sprint(keys[i]) < fmt.Sprint(keys[j]) }) // the same change at every run
		if len(keys) > 0 && r.Intn(2) == 0 {                                                       // a value changed under its key
			k := keys[r.Intn(len(keys))]
			e := reflect.New(v.Type().Elem()).Elem()
			e.Set(v.MapIndex(k))
			if !changeOne(r, e) {
				return false
			}
			v.SetMapIndex(k, e)
			return true
		}
		k := reflect.New(v.Type().Key()).Elem()
		if k.Kind() != reflect.String {
			return false
		}
		k.SetString("mutated")
		v.SetMapIndex(k, reflect.New(v.Type().Elem()).Elem())
		return true
	case reflect.String:
		v.SetString(v.String() + "x")
	case reflect.Bool:
		v.SetBool(!v.Bool())
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(v.Int() + 1)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(v.Uint() + 1)
	case reflect.Float32, reflect.Float64:
		v.SetFloat(v.Float() + 1)
	default:
		return false
	}
	return true
}

// The fast path's comparison must answer as reflect.DeepEqual does: every served kind's objects
// filled at random, against their copies, copies changed in one place, and objects filled apart.
func TestDeepEqualIsReflects(t *testing.T) {
	for _, k := range servedKinds() {
		t.Run(k.strategy.Kind(), func(t *testing.T) {
			r := rand.New(rand.NewSource(1))
			unequal := 0
			for seed := range int64(500) {
				a := k.strategy.New()
				filler(seed).Fill(a)
				pairs := []runtime.Object{a, a.DeepCopyObject(), k.strategy.New()}
				filler(seed + 1000).Fill(pairs[2])
				for range 4 {
					b := a.DeepCopyObject()
					if changeOne(r, reflect.ValueOf(b).Elem()) {
						pairs = append(pairs, b)
					}
				}
				for _, b := range pairs {
					want := reflect.DeepEqual(a, b)
					if got := generic.DeepEqual(reflect.ValueOf(a), reflect.ValueOf(b)); got != want {
						t.Fatalf("seed %d: DeepEqual %v, the fast path's %v:\n%#v\n%#v", seed, want, got, a, b)
					}
					if !want {
						unequal++
					}
				}
			}
			if unequal < 1000 {
				t.Fatalf("only %d unequal pairs: the changes do not reach the objects", unequal)
			}
		})
	}
}
