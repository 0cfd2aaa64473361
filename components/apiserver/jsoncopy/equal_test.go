package jsoncopy_test

import (
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
