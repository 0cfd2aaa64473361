package memory

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/benbjohnson/clock"

	"orch.io/orch/components/apiserver/storage"
	"orch.io/orch/components/apiserver/storage/storagetest"
)

func TestConformance(t *testing.T) {
	storagetest.Run(t, storagetest.Harness{
		New: func(t *testing.T) storagetest.Fixture {
			clk := clock.NewMock()
			s := New(clk)
			t.Cleanup(func() { s.Close() })
			return storagetest.Fixture{Store: s, Advance: clk.Add}
		},
		TTL:         time.Minute,
		ExpiryGrace: 0,
	})
}

func TestExpiryOrderAndExactDeadline(t *testing.T) {
	ctx := t.Context()
	clk := clock.NewMock()
	s := New(clk)
	defer s.Close()
	ch, err := s.Watch(ctx, "/", 0)
	if err != nil {
		t.Fatal(err)
	}
	// Same deadline for c, a, b (expire in key order); d earlier, e later.
	for _, k := range []string{"/c", "/a", "/b"} {
		if _, err := s.Create(ctx, k, []byte(k), 10*time.Second); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Create(ctx, "/d", nil, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Create(ctx, "/e", nil, 20*time.Second); err != nil {
		t.Fatal(err)
	}
	clk.Add(10*time.Second - time.Nanosecond)
	res, err := s.List(ctx, "/", storage.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Items) != 4 {
		t.Fatalf("1ns before the deadline: %d keys, want 4 (only /d gone)", len(res.Items))
	}
	clk.Add(time.Nanosecond)
	res, err = s.List(ctx, "/", storage.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Items) != 1 || res.Items[0].Key != "/e" {
		t.Fatalf("at the deadline: %v, want only /e", res.Items)
	}
	var order []string
	var last int64
	for len(order) < 9 {
		ev := <-ch
		if ev.Type == storage.Delete {
			order = append(order, ev.KV.Key)
			if ev.KV.ModRevision != last+1 {
				t.Fatalf("expiry of %s at %d, want %d", ev.KV.Key, ev.KV.ModRevision, last+1)
			}
		} else {
			order = append(order, "+")
		}
		last = ev.KV.ModRevision
	}
	want := []string{"+", "+", "+", "+", "+", "/d", "/a", "/b", "/c"}
	if !reflect.DeepEqual(order, want) {
		t.Fatalf("events %v, want %v", order, want)
	}
}

// With no call after the clock moves, the clock's timer still expires the key and watchers see it.
func TestExpirySeenWithoutCalls(t *testing.T) {
	ctx := t.Context()
	clk := clock.NewMock()
	s := New(clk)
	defer s.Close()
	ch, err := s.Watch(ctx, "/", 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Create(ctx, "/k", []byte("v"), time.Second); err != nil {
		t.Fatal(err)
	}
	<-ch
	clk.Add(time.Second)
	select {
	case ev := <-ch:
		if ev.Type != storage.Delete || ev.KV.Key != "/k" || string(ev.KV.Value) != "v" {
			t.Fatalf("got %+v", ev)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no expiry event")
	}
}

func TestUpdateWithoutTTLKeepsExpiry(t *testing.T) {
	ctx := t.Context()
	clk := clock.NewMock()
	s := New(clk)
	defer s.Close()
	r, _ := s.Create(ctx, "/k", nil, 10*time.Second)
	clk.Add(5 * time.Second)
	if _, err := s.Update(ctx, "/k", r, []byte("x"), 0); err != nil {
		t.Fatal(err)
	}
	clk.Add(5 * time.Second)
	if _, err := s.Get(ctx, "/k"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("Get after the first deadline: %v", err)
	}
	// A deleted key's old deadline does not touch a new key of the same name.
	r, _ = s.Create(ctx, "/j", nil, 10*time.Second)
	s.Delete(ctx, "/j", r)
	clk.Add(time.Second)
	s.Create(ctx, "/j", nil, 0)
	clk.Add(time.Hour)
	if _, err := s.Get(ctx, "/j"); err != nil {
		t.Fatalf("re-created key without ttl: %v", err)
	}
}

func TestHistoryLimit(t *testing.T) {
	ctx := t.Context()
	s := New(clock.NewMock(), WithHistoryLimit(10))
	defer s.Close()
	for i := 0; i < 30; i++ {
		_, err := s.Create(ctx, fmt.Sprintf("/k/%02d", i), nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		if i%3 == 0 {
			if _, _, err := s.Delete(ctx, fmt.Sprintf("/k/%02d", i), 0); err != nil {
				t.Fatal(err)
			}
		}
	}
	cur, _ := s.Revision(ctx)
	if _, err := s.List(ctx, "/k/", storage.ListOptions{Revision: cur - 11}); !errors.Is(err, storage.ErrCompacted) {
		t.Fatalf("List 11 changes back: %v, want ErrCompacted", err)
	}
	if _, err := s.Watch(ctx, "/k/", cur-11); !errors.Is(err, storage.ErrCompacted) {
		t.Fatalf("Watch 11 changes back: %v, want ErrCompacted", err)
	}
	res, err := s.List(ctx, "/k/", storage.ListOptions{Revision: cur - 10})
	if err != nil {
		t.Fatal(err)
	}
	latest, err := s.List(ctx, "/k/", storage.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(latest.Items) != 20 || len(res.Items) > len(latest.Items) {
		t.Fatalf("latest %d items, at cur-10 %d", len(latest.Items), len(res.Items))
	}
	ch, err := s.Watch(ctx, "/k/", cur-10)
	if err != nil {
		t.Fatal(err)
	}
	for i := int64(1); i <= 10; i++ {
		if ev := <-ch; ev.KV.ModRevision != cur-10+i {
			t.Fatalf("replay event %d at %d", i, ev.KV.ModRevision)
		}
	}
	// Compacted histories of deleted keys are dropped.
	s.mu.Lock()
	defer s.mu.Unlock()
	if logLen := len(s.log) - s.logStart; logLen != 10 {
		t.Fatalf("%d log entries kept, want 10", logLen)
	}
	for k, h := range s.keys {
		if len(h.versions) > 1 && h.versions[1].modRev <= s.compactRev {
			t.Fatalf("%s keeps versions %+v older than needed at %d", k, h.versions, s.compactRev)
		}
		if last := h.versions[len(h.versions)-1]; last.deleted && last.modRev <= s.compactRev {
			t.Fatalf("%s: history of a key deleted at %d kept after compaction at %d", k, last.modRev, s.compactRev)
		}
	}
	if len(s.keys) >= 30 {
		t.Fatalf("%d key histories kept", len(s.keys))
	}
}

func TestSlowWatcherIsDroppedWithoutBlocking(t *testing.T) {
	ctx := t.Context()
	s := New(clock.NewMock(), WithWatchBuffer(3))
	defer s.Close()
	slow, err := s.Watch(ctx, "/", 0)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; i < 100; i++ {
			if _, err := s.Create(ctx, fmt.Sprintf("/k/%03d", i), nil, 0); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("writers blocked on a watcher that reads nothing")
	}
	var got []storage.WatchEvent
	for ev := range slow {
		got = append(got, ev)
	}
	if len(got) != 4 || got[3].Err != storage.ErrWatcherTooSlow {
		t.Fatalf("slow watcher got %d events, last %+v; want 3 events then ErrWatcherTooSlow", len(got), got[len(got)-1])
	}
	for i, ev := range got[:3] {
		if ev.KV.Key != fmt.Sprintf("/k/%03d", i) {
			t.Fatalf("event %d is %q", i, ev.KV.Key)
		}
	}
	// It can resume from the last revision it saw.
	ch, err := s.Watch(ctx, "/", got[2].KV.ModRevision)
	if err != nil {
		t.Fatal(err)
	}
	if ev := <-ch; ev.KV.Key != "/k/003" {
		t.Fatalf("resumed at %q", ev.KV.Key)
	}
}

// A watch's buffer is its own when it asks for one: on one store, watches with the store's
// buffer and with their own, larger and smaller, each hold what its buffer holds and are dropped
// past it, whichever is larger; and a replay gets room on top of the watch's own buffer.
func TestWatchWithItsOwnBuffer(t *testing.T) {
	for _, c := range []struct {
		name   string
		store  []Option
		own    int // 0: Watch with the store's buffer
		from   int64
		events int // events the watch holds before ErrWatcherTooSlow; 100: all, not dropped
	}{
		{name: "the store's default", events: 100},
		{name: "the store's option", store: []Option{WithWatchBuffer(3)}, events: 3},
		{name: "its own, smaller than the store's", own: 5, events: 5},
		{name: "its own, larger than the store's", store: []Option{WithWatchBuffer(3)}, own: 200, events: 100},
		{name: "its own, under one", store: []Option{WithWatchBuffer(3)}, own: -2, events: 1},
		{name: "its own, after a replay of 10", store: []Option{WithWatchBuffer(200)}, own: 4, from: 1, events: 14},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := t.Context()
			s := New(clock.NewMock(), c.store...)
			defer s.Close()
			for i := range 10 { // the replay's, when the watch starts at revision 1
				if _, err := s.Create(ctx, fmt.Sprintf("/old/%03d", i), nil, 0); err != nil {
					t.Fatal(err)
				}
			}
			watch := func(n int) (<-chan storage.WatchEvent, error) {
				if n == 0 {
					return s.Watch(ctx, "/", c.from)
				}
				return s.WatchWithBuffer(ctx, "/", c.from, n)
			}
			w, err := watch(c.own)
			if err != nil {
				t.Fatal(err)
			}
			// Another watch on the store, with the store's buffer, is not changed by this one's.
			other, err := s.Watch(ctx, "/k/", 0)
			if err != nil {
				t.Fatal(err)
			}
			writes := 100
			if c.from != 0 {
				writes = 90 // with the replay's 10, as many events as the others see
			}
			for i := range writes {
				if _, err := s.Create(ctx, fmt.Sprintf("/k/%03d", i), nil, 0); err != nil {
					t.Fatal(err)
				}
			}
			s.Close()
			got, dropped := 0, false
			for ev := range w {
				if ev.Err != nil {
					if ev.Err != storage.ErrWatcherTooSlow {
						t.Fatal(ev.Err)
					}
					dropped = true
					continue
				}
				got++
			}
			if got != c.events || dropped != (c.events < 100) {
				t.Fatalf("the watch held %d events, dropped: %v; want %d", got, dropped, c.events)
			}
			otherGot := 0
			for ev := range other {
				if ev.Err == nil {
					otherGot++
				}
			}
			want := min(writes, s.opts.watchBuffer)
			if otherGot != want {
				t.Fatalf("the store's other watch held %d events, want %d", otherGot, want)
			}
		})
	}
}

// The same calls at the same clock readings give the same history, however goroutines are scheduled.
func TestDeterministic(t *testing.T) {
	run := func() []string {
		ctx := context.Background()
		clk := clock.NewMock()
		s := New(clk)
		defer s.Close()
		ch, _ := s.Watch(ctx, "/", 0)
		for i := 0; i < 50; i++ {
			k := fmt.Sprintf("/k/%d", i%7)
			if kv, err := s.Get(ctx, k); err == nil {
				if i%4 == 0 {
					s.Delete(ctx, k, kv.ModRevision)
				} else {
					s.Update(ctx, k, kv.ModRevision, []byte(fmt.Sprint(i)), time.Duration(i%3)*time.Second)
				}
			} else {
				s.Create(ctx, k, []byte(fmt.Sprint(i)), time.Duration(1+i%5)*time.Second)
			}
			clk.Add(time.Duration(i%4) * 400 * time.Millisecond)
		}
		clk.Add(time.Minute)
		cur, _ := s.Revision(ctx)
		var out []string
		for {
			ev := <-ch
			out = append(out, fmt.Sprintf("%d %v %s=%s", ev.KV.ModRevision, ev.Type, ev.KV.Key, ev.KV.Value))
			if ev.KV.ModRevision == cur {
				return out
			}
		}
	}
	first := run()
	for i := 0; i < 5; i++ {
		if again := run(); !reflect.DeepEqual(first, again) {
			t.Fatalf("run %d differs:\n%s\nvs\n%s", i, strings.Join(first, "\n"), strings.Join(again, "\n"))
		}
	}
}

func BenchmarkCreateParallel(b *testing.B) {
	s := New(clock.New())
	defer s.Close()
	ctx := context.Background()
	value := []byte(strings.Repeat("x", 512))
	var n atomic.Int64
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			k := fmt.Sprintf("/registry/events/default/e-%d", n.Add(1))
			if _, err := s.Create(ctx, k, value, 0); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
