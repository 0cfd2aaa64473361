// Package storagetest is the conformance suite every storage.Interface implementation runs: each
// promise of the interface is one subtest of Run.
//
// An implementation's test calls
//
//	storagetest.Run(t, storagetest.Harness{New: ..., TTL: ..., ExpiryGrace: ...})
//
// Cases run one after another, except the two TTL cases, which wait on the clock and so run in
// parallel with each other (and nothing else). Each case gets a Fixture from Harness.New and keeps
// every key it writes under the fixture's Prefix, so one server can be shared by all cases as long as
// each fixture has its own prefix. Cases never assume that a fresh store starts at a given revision.
package storagetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"orch.io/orch/components/apiserver/storage"
)

// Harness tells the suite how to make stores and move their time.
type Harness struct {
	// New returns a store for one case; it may be called from two goroutines at once (the TTL cases).
	// The store must hold no key under the fixture's Prefix. New
	// registers whatever cleanup it needs with t.Cleanup; the store's Close must accept being called
	// again, since some cases close the store themselves.
	New func(t *testing.T) Fixture
	// TTL is the expiry the TTL cases give their keys (memory: anything, e.g. a minute of mock time;
	// etcd: a few seconds of real time, whole seconds).
	TTL time.Duration
	// ExpiryGrace is how long after its deadline a key may still be there (memory: 0; etcd: lease
	// revocation runs every 500 ms, so about a second). It must be less than TTL.
	ExpiryGrace time.Duration
}

// Fixture is one store under test.
type Fixture struct {
	Store storage.Interface
	// Prefix is put before every key the case uses ("" when the store is the case's own; a unique
	// "/case-17" or so on a shared server). It must not end in '/': the suite adds "/a/", "/b/"...
	Prefix string
	// Advance moves the store's clock forward by d: clock.Mock.Add for a store on a mock clock,
	// time.Sleep for one on real time.
	Advance func(d time.Duration)
}

// eventTimeout bounds every wait for a watch event or a closing channel, in real time.
const eventTimeout = 10 * time.Second

// Run runs every case of the suite against h.
func Run(t *testing.T, h Harness) {
	if h.New == nil {
		t.Fatal("storagetest: Harness.New is nil")
	}
	if h.TTL <= 0 || h.ExpiryGrace < 0 || h.ExpiryGrace >= h.TTL {
		t.Fatalf("storagetest: need 0 <= ExpiryGrace (%v) < TTL (%v)", h.ExpiryGrace, h.TTL)
	}
	cases := []struct {
		name string
		fn   func(t *testing.T, h Harness)
	}{
		{"CreateGet", testCreateGet},
		{"Update", testUpdate},
		{"Delete", testDelete},
		{"RevisionsIncrease", testRevisionsIncrease},
		{"ListPrefix", testListPrefix},
		{"ListPagingOneSnapshot", testListPaging},
		{"ListRefusesBadOptions", testListRefusesBadOptions},
		{"ListOldRevision", testListOldRevision},
		{"CompactAndFutureRevision", testCompact},
		{"WatchFromNow", testWatchFromNow},
		{"WatchReplay", testWatchReplay},
		{"WatchCompacted", testWatchCompacted},
		{"WatchCancel", testWatchCancel},
		{"CloseEndsWatchesAndCalls", testClose},
		{"TTL", testTTL},
		{"ConcurrentWriters", testConcurrentWriters},
		{"ConditionalUpdateRace", testConditionalRace},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { c.fn(t, h) })
	}
}

// ---- helpers ----

func fixture(t *testing.T, h Harness) (Fixture, context.Context) {
	t.Helper()
	f := h.New(t)
	if f.Store == nil {
		t.Fatal("storagetest: Harness.New returned no store")
	}
	if f.Advance == nil {
		f.Advance = time.Sleep
	}
	return f, t.Context()
}

func ok(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("unexpected error: %v", err)
	}
}

func isErr(t *testing.T, what string, err, want error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("%s: got error %v, want %v", what, err, want)
	}
}

func mustCreate(t *testing.T, ctx context.Context, s storage.Interface, key, value string) int64 {
	t.Helper()
	rev, err := s.Create(ctx, key, []byte(value), 0)
	if err != nil {
		t.Fatalf("Create(%q): %v", key, err)
	}
	return rev
}

func mustUpdate(t *testing.T, ctx context.Context, s storage.Interface, key string, expected int64, value string) int64 {
	t.Helper()
	rev, err := s.Update(ctx, key, expected, []byte(value), 0)
	if err != nil {
		t.Fatalf("Update(%q, %d): %v", key, expected, err)
	}
	return rev
}

func mustDelete(t *testing.T, ctx context.Context, s storage.Interface, key string) int64 {
	t.Helper()
	_, rev, err := s.Delete(ctx, key, 0)
	if err != nil {
		t.Fatalf("Delete(%q): %v", key, err)
	}
	return rev
}

func checkKV(t *testing.T, what string, got storage.KeyValue, key, value string, createRev, modRev int64) {
	t.Helper()
	if got.Key != key || !bytes.Equal(got.Value, []byte(value)) || got.CreateRevision != createRev || got.ModRevision != modRev {
		t.Fatalf("%s: got {%q %q create=%d mod=%d}, want {%q %q create=%d mod=%d}", what,
			got.Key, got.Value, got.CreateRevision, got.ModRevision, key, value, createRev, modRev)
	}
}

type item struct {
	key, value string
}

func checkItems(t *testing.T, what string, got []storage.KeyValue, want ...item) {
	t.Helper()
	ok := len(got) == len(want)
	for i := 0; ok && i < len(got); i++ {
		ok = got[i].Key == want[i].key && string(got[i].Value) == want[i].value
	}
	if !ok {
		var g []item
		for _, kv := range got {
			g = append(g, item{kv.Key, string(kv.Value)})
		}
		t.Fatalf("%s: got %v, want %v", what, g, want)
	}
}

func recv(t *testing.T, ch <-chan storage.WatchEvent) storage.WatchEvent {
	t.Helper()
	select {
	case ev, open := <-ch:
		if !open {
			t.Fatal("watch channel closed, want an event")
		}
		if ev.Err != nil {
			t.Fatalf("watch ended with error: %v", ev.Err)
		}
		return ev
	case <-time.After(eventTimeout):
		t.Fatalf("no watch event within %v", eventTimeout)
	}
	panic("unreachable")
}

func expectEvent(t *testing.T, ch <-chan storage.WatchEvent, typ storage.EventType, created bool, key, value string, createRev, modRev int64) storage.WatchEvent {
	t.Helper()
	ev := recv(t, ch)
	if ev.Type != typ || ev.Created != created {
		t.Fatalf("event for %q: got type %v created %v, want type %v created %v", ev.KV.Key, ev.Type, ev.Created, typ, created)
	}
	checkKV(t, "event", ev.KV, key, value, createRev, modRev)
	if (typ != storage.Put || created) && ev.PrevValue != nil {
		t.Fatalf("event for %q: PrevValue %q, want none on a create or delete", key, ev.PrevValue)
	}
	return ev
}

// expectPrev asserts the value an update replaced, which selecting watchers rely on.
func expectPrev(t *testing.T, ev storage.WatchEvent, want string) {
	t.Helper()
	if string(ev.PrevValue) != want {
		t.Fatalf("update of %q: PrevValue %q, want %q", ev.KV.Key, ev.PrevValue, want)
	}
}

// expectClosed drains ch until it closes.
func expectClosed(t *testing.T, ch <-chan storage.WatchEvent) {
	t.Helper()
	deadline := time.After(eventTimeout)
	for {
		select {
		case _, open := <-ch:
			if !open {
				return
			}
		case <-deadline:
			t.Fatalf("watch channel not closed within %v", eventTimeout)
		}
	}
}

// ---- cases ----

func testCreateGet(t *testing.T, h Harness) {
	f, ctx := fixture(t, h)
	s, k := f.Store, f.Prefix+"/a/x"
	_, err := s.Get(ctx, k)
	isErr(t, "Get of a missing key", err, storage.ErrNotFound)

	rev, err := s.Create(ctx, k, append(make([]byte, 0, 8), "v1"...), 0) // room past its end
	ok(t, err)
	if rev <= 0 {
		t.Fatalf("Create returned revision %d", rev)
	}
	kv, err := s.Get(ctx, k)
	ok(t, err)
	checkKV(t, "Get after Create", kv, k, "v1", rev, rev)

	_, err = s.Create(ctx, k, []byte("v2"), 0)
	isErr(t, "second Create", err, storage.ErrKeyExists)
	kv, err = s.Get(ctx, k)
	ok(t, err)
	checkKV(t, "Get after refused Create", kv, k, "v1", rev, rev)

	// A value handed out may be shared, read-only: two readers' appends write arrays of their own.
	other, err := s.Get(ctx, k)
	ok(t, err)
	a, b := append(kv.Value, 'A'), append(other.Value, 'B')
	if string(a) != "v1A" || string(b) != "v1B" {
		t.Fatalf("two readers appended to one value: %q and %q", a, b)
	}
	kv, err = s.Get(ctx, k)
	ok(t, err)
	checkKV(t, "Get after readers appended to its value", kv, k, "v1", rev, rev)

	cur, err := s.Revision(ctx)
	ok(t, err)
	if cur < rev {
		t.Fatalf("Revision() = %d, before the last write %d", cur, rev)
	}
}

func testUpdate(t *testing.T, h Harness) {
	f, ctx := fixture(t, h)
	s, k := f.Store, f.Prefix+"/a/x"
	_, err := s.Update(ctx, k, 1, []byte("v"), 0)
	isErr(t, "Update of a missing key", err, storage.ErrNotFound)

	r1 := mustCreate(t, ctx, s, k, "v1")
	r2 := mustUpdate(t, ctx, s, k, r1, "v2")
	if r2 <= r1 {
		t.Fatalf("Update revision %d not after Create revision %d", r2, r1)
	}
	kv, err := s.Get(ctx, k)
	ok(t, err)
	checkKV(t, "Get after Update", kv, k, "v2", r1, r2)

	_, err = s.Update(ctx, k, r1, []byte("stale"), 0)
	isErr(t, "Update with a stale revision", err, storage.ErrConflict)
	_, err = s.Update(ctx, k, 0, []byte("zero"), 0)
	isErr(t, "Update with revision 0 of an existing key", err, storage.ErrConflict)
	kv, err = s.Get(ctx, k)
	ok(t, err)
	checkKV(t, "Get after refused Updates", kv, k, "v2", r1, r2)

	r3 := mustUpdate(t, ctx, s, k, r2, "v3")
	if r3 <= r2 {
		t.Fatalf("revisions do not increase: %d then %d", r2, r3)
	}
	mustDelete(t, ctx, s, k)
	_, err = s.Update(ctx, k, r3, []byte("v4"), 0)
	isErr(t, "Update of a deleted key", err, storage.ErrNotFound)
}

func testDelete(t *testing.T, h Harness) {
	f, ctx := fixture(t, h)
	s, k := f.Store, f.Prefix+"/a/x"
	_, _, err := s.Delete(ctx, k, 0)
	isErr(t, "unconditional Delete of a missing key", err, storage.ErrNotFound)
	_, _, err = s.Delete(ctx, k, 5)
	isErr(t, "conditional Delete of a missing key", err, storage.ErrNotFound)

	// Unconditional.
	r1 := mustCreate(t, ctx, s, k, "v1")
	r2 := mustUpdate(t, ctx, s, k, r1, "v2")
	old, dr, err := s.Delete(ctx, k, 0)
	ok(t, err)
	checkKV(t, "deleted value", old, k, "v2", r1, r2)
	if dr <= r2 {
		t.Fatalf("deletion revision %d not after the last write %d", dr, r2)
	}
	_, err = s.Get(ctx, k)
	isErr(t, "Get after Delete", err, storage.ErrNotFound)

	// Created again: a new object with a new CreateRevision.
	r3 := mustCreate(t, ctx, s, k, "v3")
	if r3 <= dr {
		t.Fatalf("Create revision %d not after deletion %d", r3, dr)
	}
	kv, err := s.Get(ctx, k)
	ok(t, err)
	checkKV(t, "Get after re-Create", kv, k, "v3", r3, r3)

	// Conditional.
	r4 := mustUpdate(t, ctx, s, k, r3, "v4")
	_, _, err = s.Delete(ctx, k, r3)
	isErr(t, "Delete with a stale revision", err, storage.ErrConflict)
	kv, err = s.Get(ctx, k)
	ok(t, err)
	checkKV(t, "Get after refused Delete", kv, k, "v4", r3, r4)
	old, dr2, err := s.Delete(ctx, k, r4)
	ok(t, err)
	checkKV(t, "conditionally deleted value", old, k, "v4", r3, r4)
	if dr2 <= r4 {
		t.Fatalf("deletion revision %d not after the last write %d", dr2, r4)
	}
	_, err = s.Get(ctx, k)
	isErr(t, "Get after conditional Delete", err, storage.ErrNotFound)
	_, _, err = s.Delete(ctx, k, r4)
	isErr(t, "second Delete", err, storage.ErrNotFound)
}

func testRevisionsIncrease(t *testing.T, h Harness) {
	f, ctx := fixture(t, h)
	s, p := f.Store, f.Prefix
	start, err := s.Revision(ctx)
	ok(t, err)
	last := start
	next := func(what string, rev int64) {
		t.Helper()
		if rev <= last {
			t.Fatalf("%s: revision %d not after %d", what, rev, last)
		}
		last = rev
	}
	for i := 0; i < 5; i++ {
		k := fmt.Sprintf("%s/a/%d", p, i)
		r := mustCreate(t, ctx, s, k, "v")
		next("Create", r)
		r = mustUpdate(t, ctx, s, k, r, "w")
		next("Update", r)
	}
	for i := 0; i < 5; i++ {
		next("Delete", mustDelete(t, ctx, s, fmt.Sprintf("%s/a/%d", p, i)))
	}
	cur, err := s.Revision(ctx)
	ok(t, err)
	if cur < last {
		t.Fatalf("Revision() = %d, before the last write %d", cur, last)
	}
	// Keys elsewhere share the same counter.
	next("Create elsewhere", mustCreate(t, ctx, s, p+"/b/x", "v"))
}

func testListPrefix(t *testing.T, h Harness) {
	f, ctx := fixture(t, h)
	s, p := f.Store, f.Prefix
	for _, k := range []string{"/a/2", "/ab/x", "/a/1", "/b/1", "/a", "/a/3", "/a/1/sub", "/a0"} {
		mustCreate(t, ctx, s, p+k, "v"+k)
	}
	last := mustCreate(t, ctx, s, p+"/a/0", "v/a/0")
	mustDelete(t, ctx, s, p+"/a/0")

	res, err := s.List(ctx, p+"/a/", storage.ListOptions{})
	ok(t, err)
	checkItems(t, "List /a/", res.Items,
		item{p + "/a/1", "v/a/1"}, item{p + "/a/1/sub", "v/a/1/sub"}, item{p + "/a/2", "v/a/2"}, item{p + "/a/3", "v/a/3"})
	if res.Remaining != 0 {
		t.Fatalf("Remaining = %d on an unlimited list", res.Remaining)
	}
	if res.Revision <= last {
		t.Fatalf("list Revision %d is before the last write %d", res.Revision, last)
	}
	for _, kv := range res.Items {
		if kv.CreateRevision == 0 || kv.ModRevision != kv.CreateRevision {
			t.Fatalf("item %q: create=%d mod=%d", kv.Key, kv.CreateRevision, kv.ModRevision)
		}
	}

	res, err = s.List(ctx, p+"/c/", storage.ListOptions{})
	ok(t, err)
	checkItems(t, "List of an empty prefix", res.Items)

	res, err = s.List(ctx, p+"/", storage.ListOptions{})
	ok(t, err)
	if len(res.Items) != 8 {
		t.Fatalf("List of the whole fixture: %d items, want 8", len(res.Items))
	}
	for i := 1; i < len(res.Items); i++ {
		if res.Items[i-1].Key >= res.Items[i].Key {
			t.Fatalf("List not in key order: %q before %q", res.Items[i-1].Key, res.Items[i].Key)
		}
	}

	// StartKey inside the prefix.
	res, err = s.List(ctx, p+"/a/", storage.ListOptions{StartKey: p + "/a/2"})
	ok(t, err)
	checkItems(t, "List from /a/2", res.Items, item{p + "/a/2", "v/a/2"}, item{p + "/a/3", "v/a/3"})
}

func testListPaging(t *testing.T, h Harness) {
	f, ctx := fixture(t, h)
	s, p := f.Store, f.Prefix
	var want []item
	revs := map[string]int64{}
	for i := 0; i < 10; i++ {
		k := fmt.Sprintf("%s/a/%02d", p, i)
		revs[k] = mustCreate(t, ctx, s, k, fmt.Sprint("v", i))
		want = append(want, item{k, fmt.Sprint("v", i)})
	}
	mustCreate(t, ctx, s, p+"/b/0", "outside")

	page, err := s.List(ctx, p+"/a/", storage.ListOptions{Limit: 3})
	ok(t, err)
	checkItems(t, "page 1", page.Items, want[:3]...)
	if page.Remaining != 7 {
		t.Fatalf("page 1: Remaining = %d, want 7", page.Remaining)
	}
	snapshot := page.Revision

	// Writes between pages: later pages of the same snapshot must not show them.
	mustUpdate(t, ctx, s, want[5].key, revs[want[5].key], "changed")
	mustDelete(t, ctx, s, want[7].key)
	mustCreate(t, ctx, s, p+"/a/05x", "new")
	mustCreate(t, ctx, s, p+"/a/99", "new")
	mustDelete(t, ctx, s, want[1].key)

	got := page.Items
	for pages := 1; page.Remaining > 0; pages++ {
		if pages > 10 {
			t.Fatal("paging does not end")
		}
		start := page.Items[len(page.Items)-1].Key + "\x00"
		remaining := page.Remaining
		page, err = s.List(ctx, p+"/a/", storage.ListOptions{Revision: snapshot, StartKey: start, Limit: 3})
		ok(t, err)
		if page.Revision != snapshot {
			t.Fatalf("page read at %d reports Revision %d", snapshot, page.Revision)
		}
		if page.Remaining != remaining-int64(len(page.Items)) {
			t.Fatalf("Remaining %d after a page of %d, want %d", page.Remaining, len(page.Items), remaining-int64(len(page.Items)))
		}
		got = append(got, page.Items...)
	}
	checkItems(t, "all pages of one snapshot", got, want...)

	// The latest state shows the writes.
	res, err := s.List(ctx, p+"/a/", storage.ListOptions{})
	ok(t, err)
	if len(res.Items) != 10 { // 10 - 2 deleted + 2 created
		t.Fatalf("latest list: %d items, want 10", len(res.Items))
	}
	// A limit that takes everything leaves nothing remaining.
	res, err = s.List(ctx, p+"/a/", storage.ListOptions{Limit: 10})
	ok(t, err)
	if len(res.Items) != 10 || res.Remaining != 0 {
		t.Fatalf("list with limit 10: %d items, Remaining %d, want 10 and 0", len(res.Items), res.Remaining)
	}
}

// Options no store can answer are refused with ListOptions.Validate's error, also by a store that
// could answer from memory: the watch that sees the write first lets a cache catch up with it.
func testListRefusesBadOptions(t *testing.T, h Harness) {
	f, ctx := fixture(t, h)
	s, p := f.Store, f.Prefix
	before, err := s.Revision(ctx)
	ok(t, err)
	w, err := s.Watch(ctx, p+"/", before)
	ok(t, err)
	rev := mustCreate(t, ctx, s, p+"/b/1", "v")
	expectEvent(t, w, storage.Put, true, p+"/b/1", "v", rev, rev)
	for _, opts := range []storage.ListOptions{
		{StartKey: p + "/b/1"},
		{Limit: -1},
		{Revision: -1},
	} {
		want := opts.Validate(p + "/a/")
		if _, err := s.List(ctx, p+"/a/", opts); err == nil || err.Error() != want.Error() {
			t.Errorf("List with %+v: error %v, want %v", opts, err, want)
		}
	}
}

func testListOldRevision(t *testing.T, h Harness) {
	f, ctx := fixture(t, h)
	s, p := f.Store, f.Prefix
	k1, k2 := p+"/a/1", p+"/a/2"
	r1 := mustCreate(t, ctx, s, k1, "one")
	r2 := mustUpdate(t, ctx, s, k1, r1, "two")
	r3 := mustCreate(t, ctx, s, k2, "x")
	r4 := mustDelete(t, ctx, s, k1)
	list := func(rev int64) []storage.KeyValue {
		t.Helper()
		res, err := s.List(ctx, p+"/a/", storage.ListOptions{Revision: rev})
		ok(t, err)
		if rev != 0 && res.Revision != rev {
			t.Fatalf("List at %d reports Revision %d", rev, res.Revision)
		}
		return res.Items
	}
	checkItems(t, "at r1-1", list(r1-1))
	checkItems(t, "at r1", list(r1), item{k1, "one"})
	checkItems(t, "at r2", list(r2), item{k1, "two"})
	checkItems(t, "at r3", list(r3), item{k1, "two"}, item{k2, "x"})
	checkItems(t, "at r4", list(r4), item{k2, "x"})
	checkItems(t, "latest", list(0), item{k2, "x"})
	items := list(r2)
	checkKV(t, "k1 at r2", items[0], k1, "two", r1, r2)
}

func testCompact(t *testing.T, h Harness) {
	f, ctx := fixture(t, h)
	s, p := f.Store, f.Prefix
	k := p + "/a/1"
	r1 := mustCreate(t, ctx, s, k, "one")
	r2 := mustUpdate(t, ctx, s, k, r1, "two")
	r3 := mustUpdate(t, ctx, s, k, r2, "three")
	mustCreate(t, ctx, s, p+"/a/2", "x")

	ok(t, s.Compact(ctx, r3))
	_, err := s.List(ctx, p+"/a/", storage.ListOptions{Revision: r2})
	isErr(t, "List before the compacted revision", err, storage.ErrCompacted)
	res, err := s.List(ctx, p+"/a/", storage.ListOptions{Revision: r3})
	ok(t, err)
	checkItems(t, "List at the compacted revision", res.Items, item{k, "three"})
	res, err = s.List(ctx, p+"/a/", storage.ListOptions{})
	ok(t, err)
	checkItems(t, "latest after Compact", res.Items, item{k, "three"}, item{p + "/a/2", "x"})
	kv, err := s.Get(ctx, k)
	ok(t, err)
	checkKV(t, "Get after Compact", kv, k, "three", r1, r3)
	// Compacting again at or before the compacted revision changes nothing.
	ok(t, s.Compact(ctx, r3))
	ok(t, s.Compact(ctx, r2))

	cur, err := s.Revision(ctx)
	ok(t, err)
	_, err = s.List(ctx, p+"/a/", storage.ListOptions{Revision: cur + 1000})
	isErr(t, "List at a future revision", err, storage.ErrFutureRevision)
	_, err = s.Watch(ctx, p+"/a/", cur+1000)
	isErr(t, "Watch from a future revision", err, storage.ErrFutureRevision)
	err = s.Compact(ctx, cur+1000)
	isErr(t, "Compact at a future revision", err, storage.ErrFutureRevision)
}

func testWatchFromNow(t *testing.T, h Harness) {
	f, ctx := fixture(t, h)
	s, p := f.Store, f.Prefix
	r0 := mustCreate(t, ctx, s, p+"/a/old", "before")
	mustUpdate(t, ctx, s, p+"/a/old", r0, "before2")

	ch, err := s.Watch(ctx, p+"/a/", 0)
	ok(t, err)
	k := p + "/a/x"
	r1 := mustCreate(t, ctx, s, k, "v1")
	mustCreate(t, ctx, s, p+"/ab/x", "not watched")
	r2 := mustUpdate(t, ctx, s, k, r1, "v2")
	mustCreate(t, ctx, s, p+"/b/x", "not watched")
	r3 := mustDelete(t, ctx, s, k)
	r4 := mustCreate(t, ctx, s, p+"/a/y", "sentinel")

	expectEvent(t, ch, storage.Put, true, k, "v1", r1, r1)
	expectPrev(t, expectEvent(t, ch, storage.Put, false, k, "v2", r1, r2), "v1")
	expectEvent(t, ch, storage.Delete, false, k, "v2", r1, r3)
	expectEvent(t, ch, storage.Put, true, p+"/a/y", "sentinel", r4, r4)
	select {
	case ev := <-ch:
		t.Fatalf("unexpected event %+v", ev)
	case <-time.After(50 * time.Millisecond):
	}
}

func testWatchReplay(t *testing.T, h Harness) {
	f, ctx := fixture(t, h)
	s, p := f.Store, f.Prefix
	k1, k2 := p+"/a/1", p+"/a/2"
	r0 := mustCreate(t, ctx, s, p+"/b/start", "x")
	r1 := mustCreate(t, ctx, s, k1, "one")
	r2 := mustUpdate(t, ctx, s, k1, r1, "two")
	mustCreate(t, ctx, s, p+"/ab/1", "not watched")
	r3 := mustCreate(t, ctx, s, k2, "x")
	r4 := mustDelete(t, ctx, s, k1)

	all, err := s.Watch(ctx, p+"/a/", r0)
	ok(t, err)
	expectEvent(t, all, storage.Put, true, k1, "one", r1, r1)
	expectPrev(t, expectEvent(t, all, storage.Put, false, k1, "two", r1, r2), "one")
	expectEvent(t, all, storage.Put, true, k2, "x", r3, r3)
	expectEvent(t, all, storage.Delete, false, k1, "two", r1, r4)

	fromR2, err := s.Watch(ctx, p+"/a/", r2)
	ok(t, err)
	expectEvent(t, fromR2, storage.Put, true, k2, "x", r3, r3)
	expectEvent(t, fromR2, storage.Delete, false, k1, "two", r1, r4)

	// The replay goes on into live changes.
	r5 := mustUpdate(t, ctx, s, k2, r3, "y")
	expectPrev(t, expectEvent(t, all, storage.Put, false, k2, "y", r3, r5), "x")
	expectPrev(t, expectEvent(t, fromR2, storage.Put, false, k2, "y", r3, r5), "x")

	// From the latest revision: nothing to replay.
	cur, err := s.Revision(ctx)
	ok(t, err)
	latest, err := s.Watch(ctx, p+"/a/", cur)
	ok(t, err)
	r6 := mustCreate(t, ctx, s, k1, "again")
	expectEvent(t, latest, storage.Put, true, k1, "again", r6, r6)
}

func testWatchCompacted(t *testing.T, h Harness) {
	f, ctx := fixture(t, h)
	s, p := f.Store, f.Prefix
	k := p + "/a/1"
	r1 := mustCreate(t, ctx, s, k, "one")
	r2 := mustUpdate(t, ctx, s, k, r1, "two")
	r3 := mustUpdate(t, ctx, s, k, r2, "three")
	ok(t, s.Compact(ctx, r2))
	_, err := s.Watch(ctx, p+"/a/", r1)
	isErr(t, "Watch from a compacted revision", err, storage.ErrCompacted)
	ch, err := s.Watch(ctx, p+"/a/", r2)
	ok(t, err)
	expectEvent(t, ch, storage.Put, false, k, "three", r1, r3)
}

func testWatchCancel(t *testing.T, h Harness) {
	f, ctx := fixture(t, h)
	s, p := f.Store, f.Prefix
	wctx, cancel := context.WithCancel(ctx)
	ch, err := s.Watch(wctx, p+"/a/", 0)
	ok(t, err)
	r := mustCreate(t, ctx, s, p+"/a/1", "v")
	expectEvent(t, ch, storage.Put, true, p+"/a/1", "v", r, r)
	cancel()
	expectClosed(t, ch)
	// The store goes on.
	mustCreate(t, ctx, s, p+"/a/2", "v")
}

func testClose(t *testing.T, h Harness) {
	f, ctx := fixture(t, h)
	s, p := f.Store, f.Prefix
	r := mustCreate(t, ctx, s, p+"/a/1", "v")
	ch, err := s.Watch(ctx, p+"/a/", 0)
	ok(t, err)
	ok(t, s.Close())
	expectClosed(t, ch)
	_, err = s.Get(ctx, p+"/a/1")
	isErr(t, "Get after Close", err, storage.ErrClosed)
	_, err = s.Create(ctx, p+"/a/2", nil, 0)
	isErr(t, "Create after Close", err, storage.ErrClosed)
	_, err = s.Update(ctx, p+"/a/1", r, nil, 0)
	isErr(t, "Update after Close", err, storage.ErrClosed)
	_, err = s.Watch(ctx, p+"/a/", 0)
	isErr(t, "Watch after Close", err, storage.ErrClosed)
	ok(t, s.Close())
}

// waitGone advances time in steps until key is gone, failing if it is still there at limit (measured
// from the creation, elapsed is how far time has moved since).
func waitGone(t *testing.T, ctx context.Context, f Fixture, key string, elapsed, limit time.Duration, step time.Duration) time.Duration {
	t.Helper()
	for {
		_, err := f.Store.Get(ctx, key)
		if errors.Is(err, storage.ErrNotFound) {
			return elapsed
		}
		ok(t, err)
		if elapsed >= limit {
			t.Fatalf("%q still there %v after its write, want gone by %v", key, elapsed, limit)
		}
		d := min(step, limit-elapsed)
		if d <= 0 {
			d = step
		}
		f.Advance(d)
		elapsed += d
	}
}

func graceStep(h Harness) time.Duration {
	if h.ExpiryGrace > 0 {
		return max(h.ExpiryGrace/10, time.Millisecond)
	}
	return h.TTL / 10
}

func testTTL(t *testing.T, h Harness) {
	t.Run("Expires", func(t *testing.T) {
		t.Parallel()
		testTTLExpires(t, h)
	})
	t.Run("RestartsOnUpdate", func(t *testing.T) {
		t.Parallel()
		testTTLRestartsOnUpdate(t, h)
	})
}

func testTTLExpires(t *testing.T, h Harness) {
	f, ctx := fixture(t, h)
	s, p := f.Store, f.Prefix
	ch, err := s.Watch(ctx, p+"/a/", 0)
	ok(t, err)
	k := p + "/a/ttl"
	rev, err := s.Create(ctx, k, []byte("short-lived"), h.TTL)
	ok(t, err)
	keep := mustCreate(t, ctx, s, p+"/a/keep", "stays")

	f.Advance(h.TTL / 2)
	kv, err := s.Get(ctx, k)
	ok(t, err)
	checkKV(t, "before the deadline", kv, k, "short-lived", rev, rev)
	elapsed := h.TTL / 2
	if h.ExpiryGrace == 0 {
		f.Advance(h.TTL - h.TTL/2)
		_, err := s.Get(ctx, k)
		isErr(t, "Get at the deadline", err, storage.ErrNotFound)
	} else {
		f.Advance(h.TTL/2 - h.TTL/10)
		elapsed += h.TTL/2 - h.TTL/10
		waitGone(t, ctx, f, k, elapsed, h.TTL+h.ExpiryGrace, graceStep(h))
	}
	expectEvent(t, ch, storage.Put, true, k, "short-lived", rev, rev)
	expectEvent(t, ch, storage.Put, true, p+"/a/keep", "stays", keep, keep)
	ev := recv(t, ch)
	if ev.Type != storage.Delete || ev.KV.Key != k || string(ev.KV.Value) != "short-lived" || ev.KV.ModRevision <= keep {
		t.Fatalf("expiry event: got %v %q %q mod=%d, want a Delete of %q with its last value after %d",
			ev.Type, ev.KV.Key, ev.KV.Value, ev.KV.ModRevision, k, keep)
	}
	res, err := s.List(ctx, p+"/a/", storage.ListOptions{})
	ok(t, err)
	checkItems(t, "after expiry", res.Items, item{p + "/a/keep", "stays"})
	// The name is free again.
	mustCreate(t, ctx, s, k, "again")
}

func testTTLRestartsOnUpdate(t *testing.T, h Harness) {
	f, ctx := fixture(t, h)
	s, p := f.Store, f.Prefix
	T, G := h.TTL, h.ExpiryGrace
	// Update at a, inside (G, T): the key is surely alive, and its first deadline (at most T+G) comes
	// before the new one (at least a+T). Check at c, between the two.
	a := G + (T-G)/2
	c := T + (G+a)/2
	k := p + "/a/ttl"
	r1, err := s.Create(ctx, k, []byte("v1"), T)
	ok(t, err)
	f.Advance(a)
	r2, err := s.Update(ctx, k, r1, []byte("v2"), T)
	ok(t, err)
	f.Advance(c - a)
	kv, err := s.Get(ctx, k)
	ok(t, err)
	checkKV(t, "past the first deadline", kv, k, "v2", r1, r2)
	// Gone after the new deadline.
	waitGone(t, ctx, f, k, c-a, T+G, graceStep(h))
}

func testConcurrentWriters(t *testing.T, h Harness) {
	f, ctx := fixture(t, h)
	s, p := f.Store, f.Prefix
	const writers, each = 8, 25
	var mu sync.Mutex
	revs := map[int64]string{}
	errs := make(chan error, writers)
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				k := fmt.Sprintf("%s/a/%d-%02d", p, w, i)
				r, err := s.Create(ctx, k, []byte(k), 0)
				if err != nil {
					errs <- fmt.Errorf("Create(%q): %w", k, err)
					return
				}
				r2, err := s.Update(ctx, k, r, []byte(k+"!"), 0)
				if err != nil {
					errs <- fmt.Errorf("Update(%q): %w", k, err)
					return
				}
				mu.Lock()
				for _, rev := range []int64{r, r2} {
					if other, dup := revs[rev]; dup {
						mu.Unlock()
						errs <- fmt.Errorf("revision %d given to both %q and %q", rev, other, k)
						return
					}
					revs[rev] = k
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if t.Failed() {
		return
	}
	res, err := s.List(ctx, p+"/a/", storage.ListOptions{})
	ok(t, err)
	if len(res.Items) != writers*each {
		t.Fatalf("%d keys listed, want %d", len(res.Items), writers*each)
	}
	for _, kv := range res.Items {
		if string(kv.Value) != kv.Key+"!" {
			t.Fatalf("%q holds %q", kv.Key, kv.Value)
		}
	}
}

func testConditionalRace(t *testing.T, h Harness) {
	f, ctx := fixture(t, h)
	s, p := f.Store, f.Prefix
	k := p + "/a/counter"
	mustCreate(t, ctx, s, k, "0")
	const racers, wins = 8, 5
	var mu sync.Mutex
	winners := map[int64]int{} // expected revision -> racer that won with it
	errs := make(chan error, racers)
	var wg sync.WaitGroup
	for r := 0; r < racers; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for won := 0; won < wins; {
				kv, err := s.Get(ctx, k)
				if err != nil {
					errs <- err
					return
				}
				n, err := strconv.Atoi(string(kv.Value))
				if err != nil {
					errs <- err
					return
				}
				_, err = s.Update(ctx, k, kv.ModRevision, []byte(strconv.Itoa(n+1)), 0)
				if errors.Is(err, storage.ErrConflict) {
					continue
				}
				if err != nil {
					errs <- err
					return
				}
				won++
				mu.Lock()
				if other, dup := winners[kv.ModRevision]; dup {
					mu.Unlock()
					errs <- fmt.Errorf("racers %d and %d both won at revision %d", other, r, kv.ModRevision)
					return
				}
				winners[kv.ModRevision] = r
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if t.Failed() {
		return
	}
	kv, err := s.Get(ctx, k)
	ok(t, err)
	if string(kv.Value) != strconv.Itoa(racers*wins) {
		t.Fatalf("counter = %s, want %d: updates were lost", kv.Value, racers*wins)
	}
}
