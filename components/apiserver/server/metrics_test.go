package server

import "testing"

// Go's runtime metrics are served, the scheduler's and the collector's among them, as
// kube-apiserver serves them.
func TestRegistryServesSchedulerAndCollectorMetrics(t *testing.T) {
	families, err := NewRegistry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{"go_sched_latencies_seconds": false, "go_gc_pauses_seconds": false, "go_cpu_classes_gc_total_cpu_seconds_total": false, "go_gc_cycles_total_gc_cycles_total": false, "go_goroutines": false, "process_resident_memory_bytes": false}
	for _, f := range families {
		if _, ok := want[f.GetName()]; ok {
			want[f.GetName()] = true
		}
	}
	for name, found := range want {
		if !found {
			t.Errorf("%s not served", name)
		}
	}
}
