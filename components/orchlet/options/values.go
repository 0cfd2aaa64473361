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

// taintsValue reads `--register-with-taints`: comma-separated <key>=<value>:<effect> or <key>:<effect>.
// The first use replaces the file's list; later uses append.
type taintsValue struct {
	taints *[]corev1.Taint
	set    bool
}

func (v *taintsValue) Set(s string) error {
	var out []corev1.Taint
	for _, spec := range strings.Split(s, ",") {
		spec = strings.TrimSpace(spec)
		if spec == "" {
			continue
		}
		t, err := parseTaint(spec)
		if err != nil {
			return err
		}
		out = append(out, t)
	}
	if !v.set {
		*v.taints = nil
		v.set = true
	}
	*v.taints = append(*v.taints, out...)
	return nil
}

func parseTaint(spec string) (corev1.Taint, error) {
	keyValue, effect, ok := strings.Cut(spec, ":")
	if !ok {
		return corev1.Taint{}, fmt.Errorf("taint %q: want <key>=<value>:<effect> or <key>:<effect>", spec)
	}
	key, value, _ := strings.Cut(keyValue, "=")
	return corev1.Taint{Key: key, Value: value, Effect: corev1.TaintEffect(effect)}, nil
}

func (v *taintsValue) String() string {
	parts := make([]string, 0, len(*v.taints))
	for _, t := range *v.taints {
		if t.Value == "" {
			parts = append(parts, fmt.Sprintf("%s:%s", t.Key, t.Effect))
		} else {
			parts = append(parts, fmt.Sprintf("%s=%s:%s", t.Key, t.Value, t.Effect))
		}
	}
	return strings.Join(parts, ",")
}

func (v *taintsValue) Type() string { return "[]Taint" }

// reservedMemoryValue reads `--reserved-memory`: <numa>:<type>=<quantity>[,<type>=<quantity>...], with
// NUMA nodes separated by ';'. The first use replaces the file's list; later uses append.
type reservedMemoryValue struct {
	list *[]v1beta1.MemoryReservation
	set  bool
}

func (v *reservedMemoryValue) Set(s string) error {
	var out []v1beta1.MemoryReservation
	for _, node := range strings.Split(s, ";") {
		node = strings.TrimSpace(node)
		if node == "" {
			continue
		}
		id, limits, ok := strings.Cut(node, ":")
		if !ok {
			return fmt.Errorf("%q: want <numa>:<type>=<quantity>[,<type>=<quantity>...]", node)
		}
		n, err := strconv.ParseInt(strings.TrimSpace(id), 10, 32)
		if err != nil || n < 0 {
			return fmt.Errorf("%q: NUMA node %q is not a non-negative integer", node, id)
		}
		r := v1beta1.MemoryReservation{NumaNode: int32(n), Limits: corev1.ResourceList{}}
		for _, limit := range strings.Split(limits, ",") {
			typ, qty, ok := strings.Cut(strings.TrimSpace(limit), "=")
			if !ok {
				return fmt.Errorf("%q: limit %q: want <type>=<quantity>", node, limit)
			}
			q, err := resource.ParseQuantity(qty)
			if err != nil {
				return fmt.Errorf("%q: quantity %q of %s: %v", node, qty, typ, err)
			}
			r.Limits[corev1.ResourceName(typ)] = q
		}
		out = append(out, r)
	}
	if !v.set {
		*v.list = nil
		v.set = true
	}
	*v.list = append(*v.list, out...)
	return nil
}

func (v *reservedMemoryValue) String() string {
	nodes := make([]string, 0, len(*v.list))
	for _, r := range *v.list {
		var limits []string
		for _, name := range sortedResourceNames(r.Limits) {
			q := r.Limits[name]
			limits = append(limits, fmt.Sprintf("%s=%s", name, q.String()))
		}
		nodes = append(nodes, fmt.Sprintf("%d:%s", r.NumaNode, strings.Join(limits, ",")))
	}
	return strings.Join(nodes, ";")
}

func (v *reservedMemoryValue) Type() string { return "reserved-memory" }

// stringsValue is a list option: the first use replaces the default or the file's list, later uses
// and comma-separated items append, as pflag's string slices do but without CSV quoting rules.
type stringsValue struct {
	list *[]string
	set  bool
}

func (v *stringsValue) Set(s string) error {
	if !v.set {
		*v.list = nil
		v.set = true
	}
	for _, item := range strings.Split(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			*v.list = append(*v.list, item)
		}
	}
	return nil
}

func (v *stringsValue) String() string { return strings.Join(*v.list, ",") }
func (v *stringsValue) Type() string   { return "strings" }

func sortedResourceNames(l corev1.ResourceList) []corev1.ResourceName {
	return slices.Sorted(maps.Keys(l))
}
