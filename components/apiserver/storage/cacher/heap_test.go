package cacher

import (
	"bytes"
	"context"
	"fmt"
	"runtime"
	"testing"

	"github.com/benbjohnson/clock"

	"orch.io/orch/components/apiserver/storage/memory"
)

// BenchmarkHeapPerCachedEvent reports the heap the cache keeps per object: its stored bytes (1,100
// here, about an orchload event) and the cache's bookkeeping (key, map entry, sorted key list).
func BenchmarkHeapPerCachedEvent(b *testing.B) {
	const n = 20000
	value := bytes.Repeat([]byte("x"), 1100)
	ctx := context.Background()
	for b.Loop() {
		clk := clock.NewMock()
		st := memory.New(clk)
		for i := range n {
			if _, err := st.Create(ctx, fmt.Sprintf("/registry/events.orch.io/events/orchload-list/e-%07d", i), value, 0); err != nil {
				b.Fatal(err)
			}
		}
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		c, err := New(st, "/registry/events.orch.io/events/", Options{Clock: clk})
		if err != nil {
			b.Fatal(err)
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		perEvent := float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / n
		b.ReportMetric(perEvent, "bytes/event")
		b.ReportMetric(perEvent-float64(len(value)), "overhead-bytes/event")
		runtime.KeepAlive(c)
		_ = c.Close()
	}
}
