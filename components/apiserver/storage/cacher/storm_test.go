package cacher

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/benbjohnson/clock"

	"orch.io/orch/components/apiserver/storage"
	"orch.io/orch/components/apiserver/storage/etcd3"
	"orch.io/orch/components/apiserver/storage/memory"
)

// held counts the reads a watch may ask of the store (its revision, and lists: the compaction
// probe) and, while held, keeps each waiting, as a busy store would.
type held struct {
	storage.Interface
	revisions, lists atomic.Int64

	mu   sync.Mutex
	hold chan struct{}
}

func (h *held) wait() {
	h.mu.Lock()
	hold := h.hold
	h.mu.Unlock()
	if hold != nil {
		<-hold
	}
}

func (h *held) Revision(ctx context.Context) (int64, error) {
	h.revisions.Add(1)
	h.wait()
	return h.Interface.Revision(ctx)
}

func (h *held) List(ctx context.Context, prefix string, o storage.ListOptions) (storage.ListResult, error) {
	h.lists.Add(1)
	h.wait()
	return h.Interface.List(ctx, prefix, o)
}

// holdReads keeps the store's reads waiting until release.
func (h *held) holdReads() (release func()) {
	hold := make(chan struct{})
	h.mu.Lock()
	h.hold = hold
	h.mu.Unlock()
	return func() {
		h.mu.Lock()
		h.hold = nil
		h.mu.Unlock()
		close(hold)
	}
}

func newHeldCache(t *testing.T) (*Cacher, *held, storage.Interface) {
	t.Helper()
	clk := clock.NewMock()
	mem := memory.New(clk)
	inner := &held{Interface: mem}
	c, err := New(inner, "/registry/events/", Options{Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, inner, mem
}

// watchAll opens n watches from from at once while the store's reads are held, releases them once
// every watch waits, and answers each watch's channel or error.
func watchAll(t *testing.T, c *Cacher, inner *held, n int, from int64) ([]<-chan storage.WatchEvent, []error) {
	t.Helper()
	release := inner.holdReads()
	chans, errs := make([]<-chan storage.WatchEvent, n), make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { chans[i], errs[i] = c.Watch(t.Context(), "/registry/events/", from) })
	}
	// One read runs (held); every other watch waits for the next.
	if from == 0 {
		waitWaiting(t, &c.revisions, n-1)
	} else {
		waitWaiting(t, &c.probes, n-1)
	}
	release()
	wg.Wait()
	return chans, errs
}

// The exhaustion campaign's storm: 2,000 watches from one list's revision. Each used to ask the store
// its revision and, to replay, whether it had compacted the watch's revision: 4,000 requests. Now
// a watch from a revision the cache has seen asks no revision, and the compaction probes in flight
// at the same time are one.
func TestWatchStormFromOneRevisionAsksTheStoreAlmostNothing(t *testing.T) {
	c, inner, _ := newHeldCache(t)
	from := createKey(t, c, "e0")
	createKey(t, c, "e1")
	createKey(t, c, "e2")
	revisions, lists := inner.revisions.Load(), inner.lists.Load()

	const watches = 2000
	chans, errs := watchAll(t, c, inner, watches, from)
	gotRevisions, gotLists := inner.revisions.Load()-revisions, inner.lists.Load()-lists
	t.Logf("%d watches from one revision: %d revision reads, %d lists", watches, gotRevisions, gotLists)
	if gotRevisions != 0 || gotLists > 2 {
		t.Fatalf("%d watches asked the store %d revisions and %d lists, want none and at most 2", watches, gotRevisions, gotLists)
	}
	for i, err := range errs {
		if err != nil {
			t.Fatalf("watch %d: %v", i, err)
		}
	}
	for _, ch := range chans[:3] {
		if ev := next(t, ch); ev.Err != nil || ev.KV.Key != "/registry/events/ns/e1" {
			t.Fatalf("first replayed %+v, want e1", ev)
		}
	}
}

// Watches "from now" still start at the store's own current revision, read once for all who asked
// while the read before it ran.
func TestWatchStormFromNowReadsTheRevisionOnce(t *testing.T) {
	c, inner, mem := newHeldCache(t)
	createSynced(t, c, 2, func(int) string { return "v" })
	// Written behind the cache's back: only the store's revision knows it.
	behind, err := mem.Create(t.Context(), "/registry/events/ns/behind", []byte("b"), 0)
	if err != nil {
		t.Fatal(err)
	}
	revisions, lists := inner.revisions.Load(), inner.lists.Load()
	const watches = 2000
	chans, errs := watchAll(t, c, inner, watches, 0)
	gotRevisions, gotLists := inner.revisions.Load()-revisions, inner.lists.Load()-lists
	t.Logf("%d watches from now: %d revision reads, %d lists", watches, gotRevisions, gotLists)
	if gotRevisions > 2 || gotLists != 0 {
		t.Fatalf("%d watches from now asked the store %d revisions and %d lists, want at most 2 and none", watches, gotRevisions, gotLists)
	}
	for i, err := range errs {
		if err != nil {
			t.Fatalf("watch %d: %v", i, err)
		}
	}
	next1, err := c.Create(t.Context(), "/registry/events/ns/after", []byte("a"), 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, ch := range chans[:3] {
		// The write the cache had not seen when the watches started is before their now.
		if ev := next(t, ch); ev.KV.ModRevision != next1 {
			t.Fatalf("a watch from now (after %d) got %+v first, want revision %d", behind, ev, next1)
		}
	}
}

// Another server on the same store compacts: a watch from a compacted revision the window still
// holds hears 410 (ErrCompacted) from a probe; from the compacted revision itself it replays. One
// this server compacted is refused without asking.
func TestWatchFromARevisionCompactedElsewhere(t *testing.T) {
	c, inner, mem := newHeldCache(t)
	r1 := createKey(t, c, "e1")
	r2 := createKey(t, c, "e2")
	r3 := createKey(t, c, "e3")
	r4 := createKey(t, c, "e4")
	if err := mem.Compact(t.Context(), r3); err != nil { // behind the cache's back
		t.Fatal(err)
	}
	for _, from := range []int64{r1, r2} {
		if _, err := c.Watch(t.Context(), "/registry/events/", from); !errors.Is(err, storage.ErrCompacted) {
			t.Fatalf("a watch from %d, compacted elsewhere at %d: %v, want ErrCompacted", from, r3, err)
		}
	}
	ch, err := c.Watch(t.Context(), "/registry/events/", r3)
	if err != nil {
		t.Fatal(err)
	}
	if ev := next(t, ch); ev.KV.ModRevision != r4 {
		t.Fatalf("from the compacted revision: %+v, want revision %d", ev, r4)
	}

	if err := c.Compact(t.Context(), r4); err != nil {
		t.Fatal(err)
	}
	lists := inner.lists.Load()
	if _, err := c.Watch(t.Context(), "/registry/events/", r3); !errors.Is(err, storage.ErrCompacted) {
		t.Fatalf("a watch from %d, compacted here at %d: %v, want ErrCompacted", r3, r4, err)
	}
	if n := inner.lists.Load() - lists; n != 0 {
		t.Fatalf("a revision this server compacted asked the store %d lists", n)
	}
}

// A shared probe asks about the oldest revision of its callers: when that one is compacted, a
// caller from a newer revision gets its own answer, not the oldest's.
func TestSharedProbeAnswersEachRevision(t *testing.T) {
	c, inner, mem := newHeldCache(t)
	r1 := createKey(t, c, "e1")
	createKey(t, c, "e2")
	r3 := createKey(t, c, "e3")
	createKey(t, c, "e4")
	if err := mem.Compact(t.Context(), r3); err != nil {
		t.Fatal(err)
	}
	release := inner.holdReads()
	type result struct {
		from int64
		err  error
	}
	results := make(chan result, 3)
	watch := func(from int64) {
		_, err := c.Watch(t.Context(), "/registry/events/", from)
		results <- result{from, err}
	}
	go watch(r3) // runs the first probe, held
	waitRunning(t, &c.probes)
	go watch(r1)
	go watch(r3)
	waitWaiting(t, &c.probes, 2) // the next probe asks about r1 for both
	release()
	want := map[int64]int{r1: 0, r3: 0}
	for range 3 {
		r := <-results
		switch {
		case r.from == r1 && errors.Is(r.err, storage.ErrCompacted), r.from == r3 && r.err == nil:
			want[r.from]++
		default:
			t.Fatalf("a watch from %d: %v", r.from, r.err)
		}
	}
	if want[r1] != 1 || want[r3] != 2 {
		t.Fatalf("answers %v", want)
	}
}

// waitRunning waits until a read runs.
func waitRunning[K, V any](t *testing.T, f *flights[K, V]) {
	t.Helper()
	for i := 0; ; i++ {
		f.mu.Lock()
		running := f.running != nil
		f.mu.Unlock()
		if running {
			return
		}
		if i > 5000 {
			t.Fatal("no read runs")
		}
		time.Sleep(time.Millisecond)
	}
}

// On etcd, with another API server's store compacting the shared history (as its compactor does).
func TestWatchFromARevisionAnotherServerCompactedOnEtcd(t *testing.T) {
	e, err := etcd3.StartEmbedded(t.Context(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Close() })
	c, err := New(etcd3.New(e.Client, clock.New()), "/registry/events/", Options{Clock: clock.New()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	other := etcd3.New(e.Client, clock.New())
	r1 := createKey(t, c, "e1")
	createKey(t, c, "e2")
	r3 := createKey(t, c, "e3")
	if err := other.Compact(t.Context(), r3); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Watch(t.Context(), "/registry/events/", r1); !errors.Is(err, storage.ErrCompacted) {
		t.Fatalf("a watch from %d, compacted by another server at %d: %v, want ErrCompacted", r1, r3, err)
	}
	if _, err := c.Watch(t.Context(), "/registry/events/", r3); err != nil {
		t.Fatalf("a watch from the compacted revision: %v", err)
	}
}

// createKey creates /registry/events/ns/<name> and waits until the cache reflects it.
func createKey(t *testing.T, c *Cacher, name string) int64 {
	t.Helper()
	rev, err := c.Create(t.Context(), "/registry/events/ns/"+name, []byte(name), 0)
	if err != nil {
		t.Fatal(err)
	}
	waitSynced(t, c, rev)
	return rev
}
