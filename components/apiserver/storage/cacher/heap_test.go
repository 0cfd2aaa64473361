package cacher

import (
	"bytes"
	"context"
	"fmt"
	"runtime"
	"testing"

	"github.com/benbjohnson/clock"

	"orch.io/orch/components/apiserver/storage"
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

// An open watch that keeps up costs no goroutine: the cache hands changes into its channel, and a
// goroutine delivers only the backlog of a reader that lags.
func TestIdleWatchesHaveNoGoroutine(t *testing.T) {
	c, _ := newCache(t, Options{})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	before := runtime.NumGoroutine()
	var watches []<-chan storage.WatchEvent
	for range 200 {
		ch, err := c.Watch(ctx, "/registry/events/", 0)
		if err != nil {
			t.Fatal(err)
		}
		watches = append(watches, ch)
	}
	for i := range 3 {
		key := fmt.Sprintf("/registry/events/ns/e%d", i)
		if _, err := c.Create(ctx, key, []byte("v"), 0); err != nil {
			t.Fatal(err)
		}
		for _, ch := range watches {
			if ev := next(t, ch); ev.KV.Key != key {
				t.Fatalf("got %+v, want %s", ev, key)
			}
		}
	}
	if n := runtime.NumGoroutine() - before; n > 10 {
		t.Fatalf("200 open watches run %d more goroutines", n)
	}
}
