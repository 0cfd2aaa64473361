package generic_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"orch.io/orch/components/apiserver/registry/core"
	"orch.io/orch/components/apiserver/registry/generic"
	"orch.io/orch/components/apiserver/storage/memory"
)

// dateStep is a write of a ConfigMap, one second after the last one: "create", "update" (a label
// named after the step), "touch" (an update changing nothing) or "apply" (data applied), by
// manager; noManager writes without one.
type dateStep struct {
	op, manager string
	noManager   bool
}

// Every managedFields time the server writes is on its clock, whatever the wall clock says: the
// library dates a write's entry with the wall clock (an update's, "unknown" for one without a
// manager name, an apply's, the "before-first-apply" an apply over unmanaged fields makes), and
// the entry capManagers merges old Update entries into takes the time of the newest merged. Each
// case runs with a clock far behind the wall clock and, but the capped ones, one far ahead of it
// (behind); the entries are
// written as manager@seconds since the clock's start, in the library's order (by operation,
// then time).
func TestManagedFieldsAreDatedOnTheStoreClock(t *testing.T) {
	updates := func(managers ...string) []dateStep {
		var steps []dateStep
		for _, m := range managers {
			steps = append(steps, dateStep{op: "update", manager: m})
		}
		return steps
	}
	many := append([]dateStep{{op: "create", manager: "m00"}}, updates("m01", "m02", "m03", "m04", "m05", "m06", "m07", "m08", "m09", "m10")...)
	cases := []struct {
		name  string
		steps []dateStep
		want  string
		// behind: with a clock behind the wall clock only. capManagers picks the oldest entries
		// to merge with the writer's at the wall clock's time: with a clock ahead of it (never
		// the server's, which runs on the wall clock, nor a simulation's, which runs behind it)
		// the writer's would be the oldest.
		behind bool
	}{
		{"an update without a manager name", []dateStep{{op: "create", manager: "a"}, {op: "update", manager: ""}},
			"a@1 unknown@2", false},
		{"creates without a manager name, the second of a shape already typed",
			[]dateStep{{op: "create", manager: ""}, {op: "update", manager: "a"}},
			"unknown@1 a@2", false},
		{"an apply over an object whose fields no one manages",
			[]dateStep{{op: "create", noManager: true}, {op: "apply", manager: "applier"}},
			"applier@2 before-first-apply@2", false},
		{"an apply over an object only updates manage",
			[]dateStep{{op: "create", manager: "a"}, {op: "update", manager: "b"}, {op: "apply", manager: "applier"}},
			"applier@3 a@1 b@2", false},
		{"the writer's entry, dated, sorts by its new time",
			[]dateStep{{op: "create", manager: "z"}, {op: "update", manager: "a"}, {op: "update", manager: "z"}},
			"a@2 z@3", false},
		{"an update changing nothing keeps its manager's time",
			[]dateStep{{op: "create", manager: "a"}, {op: "update", manager: "b"}, {op: "touch", manager: "a"}},
			"a@1 b@2", false},
		{"eleven Update managers: the oldest two merge, at the newer's time",
			many, "ancient-changes@2 m02@3 m03@4 m04@5 m05@6 m06@7 m07@8 m08@9 m09@10 m10@11", true},
		{"a twelfth merges into the entry of the merged, at its own time",
			append(many, updates("m11")...), "ancient-changes@3 m03@4 m04@5 m05@6 m06@7 m07@8 m08@9 m09@10 m10@11 m11@12", true},
	}
	for _, start := range []time.Time{time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2201, 1, 1, 0, 0, 0, 0, time.UTC)} {
		for _, c := range cases {
			if c.behind && start.Year() > 2200 {
				continue
			}
			t.Run(fmt.Sprintf("%d/%s", start.Year(), c.name), func(t *testing.T) {
				got := datedManagedFields(t, start, c.steps)
				if got != c.want {
					t.Fatalf("managedFields %s, want %s", got, c.want)
				}
			})
		}
	}
}

// datedManagedFields runs steps on a new store whose clock starts at start, and returns the
// stored object's managedFields as manager@seconds since start.
func datedManagedFields(t *testing.T, start time.Time, steps []dateStep) string {
	t.Helper()
	clk := clock.NewUnyieldingMock()
	clk.Set(start)
	s := generic.New(generic.Options{Strategy: core.ConfigMapStrategy{}, Storage: memory.New(clk), Clock: clk,
		NewUID: func() types.UID { return "uid-1" }, NameSuffix: func() string { return "x" }})
	for i, st := range steps {
		clk.Add(time.Second)
		ctx := context.Background()
		if !st.noManager {
			ctx = generic.WithManager(ctx, st.manager)
		}
		var err error
		switch st.op {
		case "create":
			// The first create of a shape is typed by the library, the next remembered.
			_, err = s.Create(ctx, "default", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "other", Namespace: "default"}, Data: map[string]string{"d": "1"}}, false)
			if err == nil {
				_, err = s.Create(ctx, "default", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "default"}, Data: map[string]string{"d": "1"}}, false)
			}
		case "update", "touch":
			obj, gerr := s.Get(ctx, "default", "c")
			if gerr != nil {
				t.Fatal(gerr)
			}
			cm := obj.(*corev1.ConfigMap)
			if st.op == "update" {
				if cm.Labels == nil {
					cm.Labels = map[string]string{}
				}
				cm.Labels[fmt.Sprintf("step%d", i)] = "x"
			}
			_, _, err = s.Update(ctx, "default", "c", cm, false)
		case "apply":
			patch := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": "v1", "kind": "ConfigMap",
				"metadata": map[string]any{"name": "c", "namespace": "default"},
				"data":     map[string]any{"k": "v"},
			}}
			_, _, err = s.Apply(ctx, "default", "c", patch, st.manager, true, false)
		}
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
	}
	obj, err := s.Get(context.Background(), "default", "c")
	if err != nil {
		t.Fatal(err)
	}
	var entries []string
	for _, e := range obj.(*corev1.ConfigMap).ManagedFields {
		if e.Time == nil {
			t.Fatalf("%s's entry has no time", e.Manager)
		}
		entries = append(entries, fmt.Sprintf("%s@%d", e.Manager, e.Time.Unix()-start.Unix()))
	}
	return strings.Join(entries, " ")
}
