package options

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"orch.io/orch/components/apis/orchlet/v1beta1"
)

// listValue is a list option: the first use replaces the default or the file's list, later uses
// append; each use holds items separated by sep, blank ones skipped, each read by parse.
type listValue[T any] struct {
	list   *[]T
	sep    string
	parse  func(item string) (T, error)
	format func(T) string
	typ    string
	set    bool
}

func (v *listValue[T]) Set(s string) error {
	var out []T
	for _, item := range strings.Split(s, v.sep) {
		if item = strings.TrimSpace(item); item == "" {
			continue
		}
		x, err := v.parse(item)
		if err != nil {
			return err
		}
		out = append(out, x)
	}
	if !v.set {
		*v.list = nil
		v.set = true
	}
	*v.list = append(*v.list, out...)
	return nil
}

func (v *listValue[T]) String() string {
	parts := make([]string, 0, len(*v.list))
	for _, x := range *v.list {
		parts = append(parts, v.format(x))
	}
	return strings.Join(parts, v.sep)
}

func (v *listValue[T]) Type() string { return v.typ }

// stringsValue reads a comma-separated list, as pflag's string slices do but without CSV quoting
// rules.
func stringsValue(list *[]string) *listValue[string] {
	same := func(s string) string { return s }
	return &listValue[string]{list: list, sep: ",", typ: "strings", format: same,
		parse: func(s string) (string, error) { return s, nil }}
}

// taintsValue reads `--register-with-taints`: comma-separated <key>=<value>:<effect> or <key>:<effect>.
func taintsValue(list *[]corev1.Taint) *listValue[corev1.Taint] {
	return &listValue[corev1.Taint]{list: list, sep: ",", typ: "[]Taint", parse: parseTaint, format: func(t corev1.Taint) string {
		if t.Value == "" {
			return fmt.Sprintf("%s:%s", t.Key, t.Effect)
		}
		return fmt.Sprintf("%s=%s:%s", t.Key, t.Value, t.Effect)
	}}
}

func parseTaint(spec string) (corev1.Taint, error) {
	keyValue, effect, ok := strings.Cut(spec, ":")
	if !ok {
		return corev1.Taint{}, fmt.Errorf("taint %q: want <key>=<value>:<effect> or <key>:<effect>", spec)
	}
	key, value, _ := strings.Cut(keyValue, "=")
	return corev1.Taint{Key: key, Value: value, Effect: corev1.TaintEffect(effect)}, nil
}

// reservedMemoryValue reads `--reserved-memory`: <numa>:<type>=<quantity>[,<type>=<quantity>...], with
// NUMA nodes separated by ';'.
func reservedMemoryValue(list *[]v1beta1.MemoryReservation) *listValue[v1beta1.MemoryReservation] {
	return &listValue[v1beta1.MemoryReservation]{list: list, sep: ";", typ: "reserved-memory", parse: parseReservedMemory, format: func(r v1beta1.MemoryReservation) string {
		var limits []string
		for _, name := range sortedResourceNames(r.Limits) {
			q := r.Limits[name]
			limits = append(limits, fmt.Sprintf("%s=%s", name, q.String()))
		}
		return fmt.Sprintf("%d:%s", r.NumaNode, strings.Join(limits, ","))
	}}
}

func parseReservedMemory(node string) (v1beta1.MemoryReservation, error) {
	id, limits, ok := strings.Cut(node, ":")
	if !ok {
		return v1beta1.MemoryReservation{}, fmt.Errorf("%q: want <numa>:<type>=<quantity>[,<type>=<quantity>...]", node)
	}
	n, err := strconv.ParseInt(strings.TrimSpace(id), 10, 32)
	if err != nil || n < 0 {
		return v1beta1.MemoryReservation{}, fmt.Errorf("%q: NUMA node %q is not a non-negative integer", node, id)
	}
	r := v1beta1.MemoryReservation{NumaNode: int32(n), Limits: corev1.ResourceList{}}
	for _, limit := range strings.Split(limits, ",") {
		typ, qty, ok := strings.Cut(strings.TrimSpace(limit), "=")
		if !ok {
			return v1beta1.MemoryReservation{}, fmt.Errorf("%q: limit %q: want <type>=<quantity>", node, limit)
		}
		q, err := resource.ParseQuantity(qty)
		if err != nil {
			return v1beta1.MemoryReservation{}, fmt.Errorf("%q: quantity %q of %s: %v", node, qty, typ, err)
		}
		r.Limits[corev1.ResourceName(typ)] = q
	}
	return r, nil
}

func sortedResourceNames(l corev1.ResourceList) []corev1.ResourceName {
	return slices.Sorted(maps.Keys(l))
}
