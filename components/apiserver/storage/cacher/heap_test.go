package cacher

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/benbjohnson/clock"

	"orch.io/orch/components/apiserver/storage"
	"orch.io/orch/components/apiserver/storage/memory"
)

// BenchmarkHeapPerCachedEvent reports the heap the cache keeps per object: its packed bytes and
// the cache's bookkeeping (key, map entry, sorted key list), for events like orchload's (about
// 1,650 bytes each, managedFields and all, each with its own name, pod, note and times).
func BenchmarkHeapPerCachedEvent(b *testing.B) {
	const n = 20000
	ctx := context.Background()
	stored := 0
	for b.Loop() {
		clk := clock.NewMock()
		st := memory.New(clk)
		stored = 0
		for i := range n {
			v := testEvent(i)
			stored += len(v)
			if _, err := st.Create(ctx, fmt.Sprintf("/registry/events.orch.io/events/orchload-list/e-%07d", i), v, 0); err != nil {
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
		b.ReportMetric(float64(int64(after.HeapAlloc)-int64(before.HeapAlloc))/n, "bytes/event")
		runtime.KeepAlive(c)
		_ = c.Close()
	}
	b.ReportMetric(float64(stored)/n, "stored-bytes/event")
}

// testEvent is the JSON of the i-th event a busy node's recorder might write, as orch-apiserver
// stores it: like orchload's, its name, pod, reason, note, times, uid and resourceVersion vary.
func testEvent(i int) []byte {
	reason, typ := "Pulled", "Normal"
	if i%10 == 0 {
		reason, typ = "BackOff", "Warning"
	}
	ts := time.Date(2026, 11, 28, 14, 0, 0, 0, time.UTC).Add(time.Duration(i) * 997 * time.Microsecond)
	return fmt.Appendf(nil, `{"kind":"Event","apiVersion":"events.orch.io/v1","metadata":{"name":"load-c%d-%d","namespace":"orchload-list",`+
		`"uid":"%08x-5a55-4c1e-9d2f-%012x","resourceVersion":"%d","creationTimestamp":"%s","labels":{"app":"web","generator":"orchload"},`+
		`"managedFields":[{"manager":"orchload","operation":"Update","apiVersion":"events.orch.io/v1","time":"%s","fieldsType":"FieldsV1",`+
		`"fieldsV1":{"f:action":{},"f:eventTime":{},"f:metadata":{"f:labels":{".":{},"f:app":{},"f:generator":{}}},"f:note":{},"f:reason":{},`+
		`"f:regarding":{},"f:reportingController":{},"f:reportingInstance":{},"f:type":{}}}]},"eventTime":"%s","reportingController":"orch.io/orchlet",`+
		`"reportingInstance":"orchlet-node-1","action":"Pulling","reason":"%s","regarding":{"kind":"Pod","namespace":"orchload-list","name":"web-%d",`+
		`"uid":"7c1e5f0a-3b2d-4e6f-8a9b-0c1d2e3f4a5b","apiVersion":"v1","resourceVersion":"4711","fieldPath":"spec.containers{web}"},`+
		`"note":"Pod orchload-list/web-%d event %d: %s","type":"%s"}`,
		i%8, i, i*7919, i*104729, 1000+i, ts.Format(time.RFC3339), ts.Format(time.RFC3339), ts.Format("2006-01-02T15:04:05.000000Z"),
		reason, i%50, i%50, i, strings.Repeat("Back-off pulling image; the registry answered slowly, retrying with backoff. ", 7), typ)
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

// BenchmarkListCached10k is a LIST of 10,000 orchload-like events from the cache: what unpacking
// them costs a LIST.
func BenchmarkListCached10k(b *testing.B) {
	const n = 10000
	ctx := context.Background()
	clk := clock.NewMock()
	st := memory.New(clk)
	for i := range n {
		if _, err := st.Create(ctx, fmt.Sprintf("/registry/events.orch.io/events/orchload-list/e-%07d", i), testEvent(i), 0); err != nil {
			b.Fatal(err)
		}
	}
	c, err := New(st, "/registry/events.orch.io/events/", Options{Clock: clk})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	b.ReportAllocs()
	for b.Loop() {
		res, err := c.List(ctx, "/registry/events.orch.io/events/orchload-list/", storage.ListOptions{})
		if err != nil || len(res.Items) != n {
			b.Fatalf("%d items, %v", len(res.Items), err)
		}
	}
}
