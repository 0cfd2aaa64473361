package eviction

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// BenchmarkRound110Pods is one round of the core on a full node (110 pods, Kubernetes' default
// --max-pods) under memory pressure: thresholds, conditions, ranking and the eviction message.
func BenchmarkRound110Pods(b *testing.B) {
	ts, err := ParseThresholdConfig([]string{"pods"}, DefaultHard, map[string]string{"memory.available": "500Mi"}, map[string]string{"memory.available": "1m"}, map[string]string{"memory.available": "100Mi"})
	if err != nil {
		b.Fatal(err)
	}
	var pods []*corev1.Pod
	stats := Stats{
		Memory:     &MemoryStats{AvailableBytes: 50 * mi, WorkingSetBytes: 15000 * mi},
		PodsMemory: &MemoryStats{AvailableBytes: 500 * mi, WorkingSetBytes: 14000 * mi},
		NodeFs:     &FsStats{AvailableBytes: 50 << 30, CapacityBytes: 100 << 30, InodesFree: 1 << 20, Inodes: 2 << 20},
		Pids:       &PidStats{MaxPID: 4194304, Running: 2000},
	}
	for i := range 110 {
		p := pod(fmt.Sprintf("pod-%03d", i), requests(corev1.ResourceMemory, fmt.Sprintf("%dMi", 50+i%7*20)), prio(int32(i%3)))
		pods = append(pods, p)
		stats.Pods = append(stats.Pods, usage(p, uint64(60+i*3%200), 10, 5))
	}
	c := NewCore(Config{Thresholds: ts, PressureTransitionPeriod: 5 * time.Minute, LocalStorageCapacityIsolation: true})
	now := t0
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		now = now.Add(MonitoringInterval)
		if r := c.Synchronize(now, stats, pods); len(r.Evictions) != 1 {
			b.Fatalf("round evicted %d pods, want 1", len(r.Evictions))
		}
	}
}
