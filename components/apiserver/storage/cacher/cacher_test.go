package cacher

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/benbjohnson/clock"

	"orch.io/orch/components/apiserver/storage"
	"orch.io/orch/components/apiserver/storage/etcd3"
	"orch.io/orch/components/apiserver/storage/memory"
	"orch.io/orch/components/apiserver/storage/storagetest"
)

// The cache keeps the storage contract: the whole conformance suite runs through it.
func TestConformance(t *testing.T) {
	storagetest.Run(t, storagetest.Harness{
		New: func(t *testing.T) storagetest.Fixture {
			clk := clock.NewMock()
			c, err := New(memory.New(clk), "/", Options{Clock: clk})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { c.Close() })
			return storagetest.Fixture{Store: c, Advance: clk.Add}
		},
		TTL:         time.Minute,
		ExpiryGrace: 0,
	})
}

// On etcd too, where the cache's LISTs must agree with revisions etcd hands out.
func TestConformanceOnEtcd(t *testing.T) {
	e, err := etcd3.StartEmbedded(t.Context(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Close() })
	var n atomic.Int64
	storagetest.Run(t, storagetest.Harness{
		New: func(t *testing.T) storagetest.Fixture {
			prefix := fmt.Sprintf("/case-%d", n.Add(1))
			c, err := New(etcd3.New(e.Client, clock.New()), prefix+"/", Options{Clock: clock.New()})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { c.Close() })
			return storagetest.Fixture{Store: c, Prefix: prefix, Advance: time.Sleep}
		},
		TTL:         4 * time.Second,
		ExpiryGrace: 2 * time.Second,
	})
}

// counting counts the backing store's watches and lists.
type counting struct {
	storage.Interface
	watches, lists atomic.Int64
}

func (c *counting) Watch(ctx context.Context, prefix string, from int64) (<-chan storage.WatchEvent, error) {
	c.watches.Add(1)
	return c.Interface.Watch(ctx, prefix, from)
}

func (c *counting) List(ctx context.Context, prefix string, o storage.ListOptions) (storage.ListResult, error) {
	c.lists.Add(1)
	return c.Interface.List(ctx, prefix, o)
}

func newCache(t *testing.T, o Options) (*Cacher, *counting) {
	t.Helper()
	clk := clock.NewMock()
	inner := &counting{Interface: memory.New(clk)}
	o.Clock = clk
	c, err := New(inner, "/registry/events/", o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, inner
}

func next(t *testing.T, ch <-chan storage.WatchEvent) storage.WatchEvent {
	t.Helper()
	select {
	case ev, ok := <-ch:
		if !ok {
			t.Fatal("watch closed")
		}
		return ev
	case <-time.After(5 * time.Second):
		t.Fatal("no watch event")
	}
	return storage.WatchEvent{}
}

// waitSynced waits until the cache reflects rev.
func waitSynced(t *testing.T, c *Cacher, rev int64) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		c.mu.Lock()
		got, synced := c.rev, c.synced
		c.mu.Unlock()
		if got >= rev {
			return
		}
		select {
		case <-synced:
		case <-time.After(time.Until(deadline)):
			t.Fatalf("cache at %d, want %d", got, rev)
		}
	}
}

// createSynced creates n keys /registry/events/ns/e<i> with value(i) and waits until the cache
// reflects them; it answers the last revision.
func createSynced(t *testing.T, c *Cacher, n int, value func(int) string) int64 {
	t.Helper()
	var rev int64
	for i := range n {
		var err error
		if rev, err = c.Create(t.Context(), fmt.Sprintf("/registry/events/ns/e%d", i), []byte(value(i)), 0); err != nil {
			t.Fatal(err)
		}
	}
	waitSynced(t, c, rev)
	return rev
}

// A hundred watchers cost the backing store one watch, and each sees every change in order.
func TestWatchersShareOneBackingWatch(t *testing.T) {
	c, inner := newCache(t, Options{})
	ctx := t.Context()
	var chans []<-chan storage.WatchEvent
	for i := range 100 {
		prefix := "/registry/events/"
		if i%2 == 1 {
			prefix = "/registry/events/ns-a/"
		}
		ch, err := c.Watch(ctx, prefix, 0)
		if err != nil {
			t.Fatal(err)
		}
		chans = append(chans, ch)
	}
	var revs []int64
	for i := range 5 {
		ns := []string{"ns-a", "ns-b"}[i%2]
		rev, err := c.Create(ctx, fmt.Sprintf("/registry/events/%s/e%d", ns, i), []byte("v"), 0)
		if err != nil {
			t.Fatal(err)
		}
		revs = append(revs, rev)
	}
	for i, ch := range chans {
		want := revs
		if i%2 == 1 {
			want = []int64{revs[0], revs[2], revs[4]}
		}
		for _, rev := range want {
			if ev := next(t, ch); ev.KV.ModRevision != rev || !ev.Created {
				t.Fatalf("watcher %d: %+v, want the create at %d", i, ev, rev)
			}
		}
	}
	if n := inner.watches.Load(); n != 1 {
		t.Fatalf("the backing store was watched %d times, want once", n)
	}
}

// A watcher that stops reading is dropped with ErrWatcherTooSlow once its queue is full, and the
// others go on receiving.
func TestSlowWatcherIsDropped(t *testing.T) {
	c, _ := newCache(t, Options{QueueLimit: 10})
	ctx := t.Context()
	slow, err := c.Watch(ctx, "/registry/events/", 0)
	if err != nil {
		t.Fatal(err)
	}
	fast, err := c.Watch(ctx, "/registry/events/", 0)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 50 {
		key := fmt.Sprintf("/registry/events/ns/e%02d", i)
		if _, err := c.Create(ctx, key, []byte("v"), 0); err != nil {
			t.Fatal(err)
		}
		if ev := next(t, fast); ev.Err != nil || ev.KV.Key != key {
			t.Fatalf("the reading watcher got %+v, want %s", ev, key)
		}
	}
	var last storage.WatchEvent
	for ev := range slow {
		last = ev
	}
	if !errors.Is(last.Err, storage.ErrWatcherTooSlow) {
		t.Fatalf("the slow watcher ended with %+v, want ErrWatcherTooSlow", last)
	}
}

// A LIST of the latest revision comes from memory once the cache has caught up; a LIST at a past
// revision goes to the store.
func TestListFromCache(t *testing.T) {
	c, inner := newCache(t, Options{})
	ctx := t.Context()
	rev := createSynced(t, c, 5, func(i int) string { return fmt.Sprint(i) })
	before := inner.lists.Load()
	page, err := c.List(ctx, "/registry/events/ns/", storage.ListOptions{Limit: 2, StartKey: "/registry/events/ns/e1"})
	if err != nil {
		t.Fatal(err)
	}
	if inner.lists.Load() != before {
		t.Fatal("a LIST of the latest revision went to the store")
	}
	if len(page.Items) != 2 || page.Items[0].Key != "/registry/events/ns/e1" || page.Items[1].Key != "/registry/events/ns/e2" || page.Remaining != 2 || page.Revision != rev {
		t.Fatalf("page %+v", page)
	}
	if _, err := c.List(ctx, "/registry/events/ns/", storage.ListOptions{Revision: rev - 1}); err != nil || inner.lists.Load() != before+1 {
		t.Fatalf("a LIST at a past revision: %v, store lists %d", err, inner.lists.Load()-before)
	}
}

// A packed LIST answers the same page as an unpacked one, its values read one at a time from
// Values; a packed LIST the store answers (a past revision) has its values in its items.
func TestPackedListReadsValuesOneAtATime(t *testing.T) {
	c, _ := newCache(t, Options{})
	ctx := t.Context()
	rev := createSynced(t, c, 5, func(i int) string {
		return fmt.Sprintf(`{"kind":"Event","n":%d,"note":"%s"}`, i, strings.Repeat("x", i*40))
	})
	o := storage.ListOptions{StartKey: "/registry/events/ns/e1", Limit: 3}
	want, err := c.List(ctx, "/registry/events/ns/", o)
	if err != nil {
		t.Fatal(err)
	}
	o.Packed = true
	got, err := c.List(ctx, "/registry/events/ns/", o)
	if err != nil {
		t.Fatal(err)
	}
	if got.Values == nil || len(got.Items) != 3 || got.Revision != want.Revision || got.Remaining != want.Remaining {
		t.Fatalf("packed page: %d items, revision %d, remaining %d, values %v; want 3, %d, %d and values", len(got.Items), got.Revision, got.Remaining, got.Values, want.Revision, want.Remaining)
	}
	var buf []byte
	for i, kv := range got.Items {
		if kv.Value != nil {
			t.Errorf("item %d carries its value in a packed page", i)
		}
		w := want.Items[i]
		if buf, err = got.Values.Value(i, buf[:0]); err != nil {
			t.Fatal(err)
		}
		if kv.Key != w.Key || kv.ModRevision != w.ModRevision || kv.CreateRevision != w.CreateRevision || string(buf) != string(w.Value) {
			t.Errorf("item %d: %s@%d %q, want %s@%d %q", i, kv.Key, kv.ModRevision, buf, w.Key, w.ModRevision, w.Value)
		}
	}
	again, err := got.Values.Value(0, []byte("kept:"))
	if err != nil || string(again) != "kept:"+string(want.Items[0].Value) {
		t.Errorf("Value appends to dst: %q, %v", again, err)
	}
	past, err := c.List(ctx, "/registry/events/ns/", storage.ListOptions{Revision: rev, Packed: true})
	if err != nil {
		t.Fatal(err)
	}
	if past.Values != nil || len(past.Items) != 5 || string(past.Items[1].Value) != string(want.Items[0].Value) {
		t.Fatalf("a packed LIST the store answered: values %v, %d items", past.Values, len(past.Items))
	}
}

// A watch from a revision older than the window is the store's, which still has it.
func TestWatchOlderThanTheWindowGoesToTheStore(t *testing.T) {
	c, inner := newCache(t, Options{Window: 3})
	ctx := t.Context()
	first, err := c.Create(ctx, "/registry/events/ns/e0", []byte("v"), 0)
	if err != nil {
		t.Fatal(err)
	}
	var rev int64
	for i := 1; i < 6; i++ {
		if rev, err = c.Create(ctx, fmt.Sprintf("/registry/events/ns/e%d", i), []byte("v"), 0); err != nil {
			t.Fatal(err)
		}
	}
	waitSynced(t, c, rev)
	before := inner.watches.Load()
	ch, err := c.Watch(ctx, "/registry/events/", first)
	if err != nil {
		t.Fatal(err)
	}
	if inner.watches.Load() != before+1 {
		t.Fatal("a watch older than the window was served from the cache")
	}
	if ev := next(t, ch); ev.KV.Key != "/registry/events/ns/e1" {
		t.Fatalf("first replayed %+v", ev)
	}
}

// failingLists refuses every LIST while failing is set, as a store holding a value it cannot
// decrypt does.
type failingLists struct {
	counting
	failing atomic.Bool
}

func (f *failingLists) List(ctx context.Context, prefix string, o storage.ListOptions) (storage.ListResult, error) {
	if f.failing.Load() {
		f.lists.Add(1)
		return storage.ListResult{}, errors.New("unable to transform key")
	}
	return f.counting.List(ctx, prefix, o)
}

// A store the cache cannot load at start does not stop the server: every request goes to the
// store, and the cache loads on the clock's next retry once the store lists again.
func TestStartsWhenTheStoreCannotBeListed(t *testing.T) {
	clk := clock.NewMock()
	inner := &failingLists{counting: counting{Interface: memory.New(clk)}}
	inner.failing.Store(true)
	c, err := New(inner, "/registry/events/", Options{Clock: clk})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	ctx := t.Context()
	if _, err := c.List(ctx, "/registry/events/", storage.ListOptions{}); err == nil {
		t.Fatal("a LIST was answered while the store could not list")
	}
	// Watches go to the store meanwhile and see changes.
	w, err := c.Watch(ctx, "/registry/events/", 0)
	if err != nil {
		t.Fatal(err)
	}
	rev, err := c.Create(ctx, "/registry/events/ns/a", []byte("v"), 0)
	if err != nil {
		t.Fatal(err)
	}
	if ev := next(t, w); ev.KV.ModRevision != rev {
		t.Fatalf("watch while unloaded: %+v", ev)
	}
	inner.failing.Store(false)
	for deadline := time.Now().Add(5 * time.Second); ; {
		clk.Add(retryInterval)
		c.mu.Lock()
		loaded := !c.stopped && c.rev >= rev
		c.mu.Unlock()
		if loaded {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the cache did not load once the store listed again")
		}
		time.Sleep(10 * time.Millisecond)
	}
	before := inner.lists.Load()
	res, err := c.List(ctx, "/registry/events/", storage.ListOptions{})
	if err != nil || len(res.Items) != 1 || inner.lists.Load() != before {
		t.Fatalf("LIST after loading: %d items, %v, store lists %d -> %d (want it from memory)", len(res.Items), err, before, inner.lists.Load())
	}
}

// breakable ends the watches it has handed out on demand, as etcd does when the member serving
// them loses its leader, and can hold the cache's loading LISTs so a test can act while the cache
// reloads.
type breakable struct {
	counting
	mu      sync.Mutex
	breaks  []chan struct{}
	gate    chan struct{} // when set, loading LISTs wait for it to close
	loading chan struct{} // told when a loading LIST waits
}

var errNoLeader = errors.New("etcdserver: no leader")

func (b *breakable) Watch(ctx context.Context, prefix string, from int64) (<-chan storage.WatchEvent, error) {
	in, err := b.counting.Watch(ctx, prefix, from)
	if err != nil {
		return nil, err
	}
	broken := make(chan struct{})
	b.mu.Lock()
	b.breaks = append(b.breaks, broken)
	b.mu.Unlock()
	out := make(chan storage.WatchEvent)
	go func() {
		defer close(out)
		for {
			var ev storage.WatchEvent
			select {
			case <-broken:
				ev = storage.WatchEvent{Err: errNoLeader}
			case e, ok := <-in:
				if !ok {
					return
				}
				ev = e
			}
			select {
			case out <- ev:
			case <-ctx.Done():
				return
			}
			if ev.Err != nil {
				return
			}
		}
	}()
	return out, nil
}

// breakWatches ends every watch handed out so far with an error.
func (b *breakable) breakWatches() {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, ch := range b.breaks {
		close(ch)
	}
	b.breaks = nil
}

// holdLoads makes the cache's loading LISTs (not the one-item probes of a watch) wait until the
// returned release is called; loading is told when one waits.
func (b *breakable) holdLoads() (loading <-chan struct{}, release func()) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.gate, b.loading = make(chan struct{}), make(chan struct{}, 1)
	gate := b.gate
	return b.loading, func() { close(gate) }
}

func (b *breakable) List(ctx context.Context, prefix string, o storage.ListOptions) (storage.ListResult, error) {
	b.mu.Lock()
	gate, loading := b.gate, b.loading
	b.mu.Unlock()
	if gate != nil && o.Limit != 1 {
		select {
		case loading <- struct{}{}:
		default:
		}
		select {
		case <-gate:
		case <-ctx.Done():
			return storage.ListResult{}, ctx.Err()
		}
	}
	return b.counting.List(ctx, prefix, o)
}

// When the store's watch breaks, the cache no longer knows the store's latest changes until it has
// loaded again: a client that resumes its watch meanwhile (as every dropped watcher does at once)
// still receives every change after the revision it resumes from, including those written while
// the cache was reloading.
func TestWatchResumedWhileReloadingMissesNothing(t *testing.T) {
	clk := clock.NewMock()
	inner := &breakable{counting: counting{Interface: memory.New(clk)}}
	const prefix = "/registry/events/"
	c, err := New(inner, prefix, Options{Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	ctx := t.Context()
	seen, err := c.Create(ctx, prefix+"ns/e0", []byte("v"), 0)
	if err != nil {
		t.Fatal(err)
	}
	waitSynced(t, c, seen)
	dropped, err := c.Watch(ctx, prefix, seen)
	if err != nil {
		t.Fatal(err)
	}

	loading, release := inner.holdLoads()
	inner.breakWatches()
	select {
	case <-loading:
	case <-time.After(5 * time.Second):
		t.Fatal("the cache did not load again after its watch broke")
	}
	for ev := range dropped {
		t.Fatalf("the dropped watcher got %+v", ev)
	}
	during, err := c.Create(ctx, prefix+"ns/e1", []byte("v"), 0)
	if err != nil {
		t.Fatal(err)
	}
	resumed, err := c.Watch(ctx, prefix, seen)
	if err != nil {
		t.Fatal(err)
	}
	release()
	waitSynced(t, c, during)
	after, err := c.Create(ctx, prefix+"ns/e2", []byte("v"), 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []int64{during, after} {
		if ev := next(t, resumed); ev.Err != nil || ev.KV.ModRevision != want {
			t.Fatalf("the resumed watch got %+v, want the change at %d", ev, want)
		}
	}
}

// unansweredLists never answers a LIST before its context ends, as an etcd not reachable yet.
type unansweredLists struct{ storage.Interface }

func (unansweredLists) List(ctx context.Context, _ string, _ storage.ListOptions) (storage.ListResult, error) {
	<-ctx.Done()
	return storage.ListResult{}, ctx.Err()
}

// A shutdown while the first LIST waits for the store ends the wait: the cache starts unloaded,
// and the server's start goes on to its shutdown.
func TestStartingEndsTheFirstLoad(t *testing.T) {
	clk := clock.NewMock()
	starting, stop := context.WithCancel(context.Background())
	stop()
	c, err := New(unansweredLists{memory.New(clk)}, "/registry/events/", Options{Clock: clk, Starting: starting})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	// Unloaded, the cache sends requests to the store, which answers this one when it ends.
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := c.List(ctx, "/registry/events/", storage.ListOptions{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("LIST of a cache that never loaded: %v, want the store's answer", err)
	}
}

// Watches opened from far behind share the window's packed changes: a watcher holds no unpacked
// copy of the changes since its revision while its reader lags, and one that reads gets every
// change of its prefix in order, then the live ones.
func TestReplayIsSharedNotCopied(t *testing.T) {
	c, _ := newCache(t, Options{})
	ctx := t.Context()
	const changes, watchers, size = 2000, 50, 4096
	value := func(i int) string { return fmt.Sprintf("%d:%s", i, strings.Repeat("x", size)) }
	from := createSynced(t, c, 1, value)
	var want []int64
	for i := 1; i < changes; i++ {
		key := fmt.Sprintf("/registry/events/ns/e%d", i)
		if i%4 == 0 {
			key = fmt.Sprintf("/registry/events/other/e%d", i) // outside the readers' prefix
		}
		rev, err := c.Create(ctx, key, []byte(value(i)), 0)
		if err != nil {
			t.Fatal(err)
		}
		if i%4 != 0 {
			want = append(want, rev)
		}
		waitSynced(t, c, rev)
	}

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	lagging := make([]<-chan storage.WatchEvent, watchers)
	for i := range lagging {
		ch, err := c.Watch(ctx, "/registry/events/ns/", from)
		if err != nil {
			t.Fatal(err)
		}
		lagging[i] = ch
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	// Copied, the replays would hold watchers x 1,500 changes x 4 KiB (about 300 MB); shared,
	// each holds what its channel took (16 changes, 3 MiB for all) and a slice of the window.
	grown := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	t.Logf("%d watchers from %d changes behind: heap %+d bytes", watchers, changes, grown)
	if limit := int64(watchers * 64 * size); grown > limit {
		t.Fatalf("%d watchers from behind grew the heap by %d bytes, want under %d: their replays are copies", watchers, grown, limit)
	}

	live, err := c.Create(ctx, "/registry/events/ns/live", []byte("live"), 0)
	if err != nil {
		t.Fatal(err)
	}
	want = append(want, live)
	for i, ch := range lagging[:3] {
		for j, rev := range want {
			ev := next(t, ch)
			if ev.Err != nil || ev.KV.ModRevision != rev || !strings.HasPrefix(ev.KV.Key, "/registry/events/ns/") {
				t.Fatalf("watcher %d, change %d: %+v, want revision %d", i, j, ev, rev)
			}
		}
	}
	runtime.KeepAlive(lagging)
}
