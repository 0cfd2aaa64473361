package cacher

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"orch.io/orch/components/apiserver/storage"
)

// Whatever the cache saw first, every value comes back byte for byte, and an absent value stays
// absent.
func TestPackRoundTrip(t *testing.T) {
	large := bytes.Repeat(testEvent(7), 1500) // 2.4 MB: past the largest dictionary S2 takes
	binary := make([]byte, 4096)
	for i := range binary {
		binary[i] = byte(i * 7919 >> 3)
	}
	values := map[string][]byte{
		"nil": nil, "empty": {}, "one byte": []byte("x"), "event": testEvent(1), "another event": testEvent(12345),
		"large": large, "binary": binary,
	}
	for firstName, first := range map[string][]byte{"no value": nil, "one byte": []byte("{"), "an event": testEvent(0), "a large value": large} {
		p := newPacker(first)
		for name, v := range values {
			packed := p.pack(v)
			got, err := p.unpack(nil, packed)
			if err != nil {
				t.Fatalf("dictionary from %s, %s: %v", firstName, name, err)
			}
			if !bytes.Equal(got, v) || (v == nil) != (got == nil) {
				t.Errorf("dictionary from %s, %s: got %d bytes (nil %t), want %d (nil %t)", firstName, name, len(got), got == nil, len(v), v == nil)
			}
		}
	}
}

// A LIST's values share one buffer, each capped at its own end: appending to one (as a caller
// splicing it might) cannot overwrite the next.
func TestKeyValuesAreIndependent(t *testing.T) {
	p := newPacker(testEvent(0))
	var keys []string
	var entries []entry
	for i := range 3 {
		keys = append(keys, fmt.Sprintf("/registry/events/ns/e%d", i))
		entries = append(entries, p.entry(storage.KeyValue{Key: keys[i], Value: testEvent(i), CreateRevision: int64(i + 1), ModRevision: int64(i + 10), Stale: i == 1}))
	}
	items, err := p.keyValues(keys, entries)
	if err != nil {
		t.Fatal(err)
	}
	_ = append(items[0].Value, "overwritten"...)
	for i, kv := range items {
		want := storage.KeyValue{Key: keys[i], Value: testEvent(i), CreateRevision: int64(i + 1), ModRevision: int64(i + 10), Stale: i == 1}
		if kv.Key != want.Key || !bytes.Equal(kv.Value, want.Value) || kv.CreateRevision != want.CreateRevision || kv.ModRevision != want.ModRevision || kv.Stale != want.Stale {
			t.Errorf("item %d: got %s rev %d/%d stale %t, %d bytes", i, kv.Key, kv.CreateRevision, kv.ModRevision, kv.Stale, len(kv.Value))
		}
	}
}

// A corrupt packed value is an error naming the key, never a wrong value.
func TestCorruptPackedValue(t *testing.T) {
	p := newPacker(testEvent(0))
	e := p.entry(storage.KeyValue{Key: "/k", Value: testEvent(1)})
	e.packed = e.packed[:len(e.packed)/2]
	if _, err := p.keyValues([]string{"/k"}, []entry{e}); err == nil {
		t.Fatal("a truncated value unpacked")
	}
}

// The cache holds objects packed against the first one it saw: orchload-like events, each with
// its own name, uid, times and note, keep less than a quarter of their bytes (S2 without the
// dictionary keeps about half), and a LIST answers them whole.
func TestCachedValuesArePacked(t *testing.T) {
	const n = 2000
	c, _ := newCache(t, Options{})
	ctx := t.Context()
	stored := 0
	for i := range n {
		v := testEvent(i)
		stored += len(v)
		if _, err := c.Create(ctx, fmt.Sprintf("/registry/events/ns/e%05d", i), v, 0); err != nil {
			t.Fatal(err)
		}
	}
	var res storage.ListResult
	deadline := time.Now().Add(5 * time.Second)
	for len(res.Items) < n && time.Now().Before(deadline) {
		var err error
		if res, err = c.List(ctx, "/registry/events/", storage.ListOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for i, kv := range res.Items {
		if !bytes.Equal(kv.Value, testEvent(i)) {
			t.Fatalf("item %d (%s) differs from what was stored", i, kv.Key)
		}
	}
	c.mu.Lock()
	packed := 0
	for _, e := range c.objects {
		packed += len(e.packed)
	}
	c.mu.Unlock()
	if len(res.Items) != n || packed*4 > stored {
		t.Fatalf("%d of %d objects listed; the cache keeps %d bytes of %d stored (want under a quarter)", len(res.Items), n, packed, stored)
	}
	t.Logf("%d bytes stored, %d kept", stored, packed)
}

// A change keeps the key's last packed value as its previous value only when that is the value
// it had; it comes back byte for byte either way.
func TestChangeKeepsTheLastPackOfItsPreviousValue(t *testing.T) {
	p := newPacker(testEvent(0))
	last := p.pack(testEvent(1))
	for name, c := range map[string]struct {
		last, prev []byte
		kept       bool
	}{
		"the last value":                 {last: last, prev: testEvent(1), kept: true},
		"another value":                  {last: last, prev: testEvent(2)},
		"another value of the same size": {last: last, prev: bytes.Replace(testEvent(1), []byte("1"), []byte("9"), 1)},
		"no last value":                  {prev: testEvent(1)},
		"no previous value":              {last: last},
		"an empty value":                 {last: p.pack([]byte{}), prev: []byte{}, kept: true},
	} {
		t.Run(name, func(t *testing.T) {
			ch := p.change(storage.WatchEvent{Type: storage.Put, KV: storage.KeyValue{Key: "/k", Value: testEvent(3)}, PrevValue: c.prev}, c.last)
			if kept := c.last != nil && len(ch.prev) > 0 && &ch.prev[0] == &c.last[0]; kept != c.kept {
				t.Errorf("kept the last pack: %t, want %t", kept, c.kept)
			}
			ev, err := p.watchEvent(ch)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(ev.PrevValue, c.prev) || (ev.PrevValue == nil) != (c.prev == nil) || !bytes.Equal(ev.KV.Value, testEvent(3)) {
				t.Errorf("previous value %q (nil %t), want %q", ev.PrevValue, ev.PrevValue == nil, c.prev)
			}
		})
	}
}

// An update's change: its value and its previous one, the key's last value, packed.
func BenchmarkChange(b *testing.B) {
	p := newPacker(testEvent(0))
	prev, next := testEvent(1), testEvent(2)
	last := p.pack(prev)
	for name, last := range map[string][]byte{"last kept": last, "packed again": nil} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				p.change(storage.WatchEvent{Type: storage.Put, KV: storage.KeyValue{Key: "/k", Value: next}, PrevValue: prev}, last)
			}
		})
	}
}
