package cacher

import (
	"context"
	"errors"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/benbjohnson/clock"

	"orch.io/orch/components/apiserver/storage"
)

// Defaults, in the order of Kubernetes' watch cache: a window of recent changes replayed to new
// watchers, and a per-watcher queue past which a watcher is dropped.
const (
	DefaultWindow     = 4096
	DefaultQueueLimit = 1024
)

// retryInterval is how long the cache waits before loading again after the store failed it.
const retryInterval = time.Second

// Options tune a Cacher; zero values take the defaults.
type Options struct {
	// Clock paces retries after the backing store fails; required.
	Clock      clock.Clock
	Window     int
	QueueLimit int
	// Starting, when set, bounds New's first LIST: a store that does not answer (an etcd not
	// reachable yet) would otherwise hold the server's start, deaf to a shutdown, until it does.
	// Once it ends the cache starts unloaded, as when the store fails, and loads on its retries.
	Starting context.Context
}

// Cacher is a storage.Interface serving watches and latest LISTs of one prefix from memory.
type Cacher struct {
	clock      clock.Clock
	inner      storage.Interface
	prefix     string
	window     int
	queueLimit int
	cancel     context.CancelFunc
	done       chan struct{}

	mu      sync.Mutex
	packer  *packer // from the first value the cache sees
	objects map[string]entry
	keys    storage.KeyIndex[entry] // objects' keys in order, for LISTs
	changes []change                // the window, oldest first
	rev     int64                   // the revision the cache reflects
	since   int64                   // changes after this revision are all in the window
	seen    int64                   // the latest revision the store is known to have written
	// compactedThrough is the latest revision known compacted: this server's Compact or a probe
	// found it so, and compaction never comes back.
	compactedThrough int64
	watchers         map[*watcher]struct{}
	stopped          bool          // no longer following: everything goes to the store
	closed           bool          // the store is closed
	synced           chan struct{} // closed and replaced whenever rev moves

	// The store's revision and compaction, each read once for all who ask at the same time: a
	// watch storm would otherwise cost the store two reads per watch.
	revisions flights[struct{}, int64]
	probes    flights[int64, int64]
}

// New lists prefix from inner and starts following it. The cache stops when inner closes.
func New(inner storage.Interface, prefix string, o Options) (*Cacher, error) {
	if o.Clock == nil {
		return nil, errors.New("cacher: a clock is required")
	}
	c := &Cacher{
		clock: o.Clock, inner: inner, prefix: prefix, window: o.Window, queueLimit: o.QueueLimit,
		done: make(chan struct{}), watchers: map[*watcher]struct{}{}, synced: make(chan struct{}),
	}
	if c.window <= 0 {
		c.window = DefaultWindow
	}
	if c.queueLimit <= 0 {
		c.queueLimit = DefaultQueueLimit
	}
	c.revisions = flights[struct{}, int64]{read: c.readRevision, join: func(struct{}, struct{}) struct{} { return struct{}{} }}
	c.probes = flights[int64, int64]{read: c.probe, join: func(next, from int64) int64 { return min(next, from) }}
	ctx, cancel := context.WithCancel(context.Background())
	c.cancel = cancel
	listCtx := ctx
	if o.Starting != nil {
		var endList context.CancelFunc
		listCtx, endList = context.WithCancel(ctx)
		defer context.AfterFunc(o.Starting, endList)()
		defer endList()
	}
	changes, err := c.load(ctx, listCtx)
	if errors.Is(err, storage.ErrClosed) {
		cancel()
		return nil, err
	}
	if err != nil {
		// A store that cannot be listed yet (unreachable, or holding a value that cannot be read,
		// such as one encrypted with a key no longer configured) answers every request itself
		// until a load succeeds: the server starts and reports what fails.
		c.stopped = true
	}
	go c.follow(ctx, changes)
	return c, nil
}

// load fills the cache from a LIST (made under listCtx) and opens the watch that continues it
// (under ctx).
func (c *Cacher) load(ctx, listCtx context.Context) (<-chan storage.WatchEvent, error) {
	var items []storage.KeyValue
	var rev int64
	start := ""
	for {
		page, err := c.inner.List(listCtx, c.prefix, storage.ListOptions{Revision: rev, StartKey: start, Limit: 10000})
		if err != nil {
			return nil, err
		}
		rev = page.Revision
		items = append(items, page.Items...)
		if page.Remaining == 0 || len(page.Items) == 0 {
			break
		}
		start = page.Items[len(page.Items)-1].Key + "\x00"
	}
	changes, err := c.inner.Watch(ctx, c.prefix, rev)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.objects = make(map[string]entry, len(items))
	keys := make([]string, len(items))
	for i, kv := range items {
		c.objects[kv.Key] = c.packerFor(kv.Value).entry(kv)
		keys[i] = kv.Key
	}
	c.keys.Reset(keys)
	c.changes = nil // watchers' replays may still read the old window's array
	c.since = rev
	c.stopped = false
	c.advance(rev)
	return changes, nil
}

// follow applies the backing store's changes until it closes. A watch that ends otherwise (the
// cache fell behind, or etcd lost its leader) drops every watcher, whose clients resume from their
// last revision, and loads the cache again. Until that load succeeds the cache no longer knows the
// store's latest changes, so requests go to the store meanwhile: a watcher registered on the stale
// cache would never get the changes between its last revision and the one the load jumps to.
func (c *Cacher) follow(ctx context.Context, changes <-chan storage.WatchEvent) {
	defer close(c.done)
	for {
		// changes is nil when New could not load: go straight to loading again.
		if changes != nil {
			for ev := range changes {
				if ev.Err != nil {
					break
				}
				c.apply(ev)
			}
			c.halt(false)
			if ctx.Err() != nil {
				return
			}
		}
		var err error
		for {
			if changes, err = c.load(ctx, ctx); err == nil {
				break
			}
			if errors.Is(err, storage.ErrClosed) || ctx.Err() != nil {
				c.halt(errors.Is(err, storage.ErrClosed))
				return
			}
			select {
			case <-ctx.Done():
			case <-c.clock.After(retryInterval):
			}
		}
	}
}

// packerFor answers the cache's packer, made with v as its dictionary if the cache has none yet;
// c.mu is held.
func (c *Cacher) packerFor(v []byte) *packer {
	if c.packer == nil {
		c.packer = newPacker(v)
	}
	return c.packer
}

func (c *Cacher) apply(ev storage.WatchEvent) {
	c.mu.Lock()
	defer c.mu.Unlock()
	key := ev.KV.Key
	last, had := c.objects[key]
	ch := c.packerFor(ev.KV.Value).change(ev, last.packed)
	switch ev.Type {
	case storage.Put:
		c.objects[key] = ch.entry
		if !had {
			c.keys.Add(key, c.objects)
		}
	case storage.Delete:
		delete(c.objects, key)
		if had {
			c.keys.Removed()
		}
	}
	c.changes = append(c.changes, ch)
	if len(c.changes) > c.window {
		// The dropped change is not cleared: a watcher's replay may still be reading it. The
		// array goes when append moves the window to a new one.
		c.since = c.changes[0].entry.modRevision
		c.changes = c.changes[1:]
	}
	for w := range c.watchers {
		if ev.KV.ModRevision > w.from && strings.HasPrefix(key, w.prefix) && !w.push(ev, c.queueLimit) {
			delete(c.watchers, w)
		}
	}
	c.advance(ev.KV.ModRevision)
}

// advance moves the cache to rev and wakes LISTs waiting for it.
func (c *Cacher) advance(rev int64) {
	c.rev, c.seen = rev, max(c.seen, rev)
	close(c.synced)
	c.synced = make(chan struct{})
}

// halt stops serving from memory; closed says the store itself is gone.
func (c *Cacher) halt(closed bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stopped, c.closed = true, c.closed || closed
	for w := range c.watchers {
		w.end(nil)
	}
	clear(c.watchers)
}

func (c *Cacher) covers(prefix string) bool { return strings.HasPrefix(prefix, c.prefix) }

// Writes and single reads go to the backing store: they must see its latest state. A write's
// revision is one the store has written, which a watch from it need not ask about.

func (c *Cacher) Create(ctx context.Context, key string, value []byte, ttl time.Duration) (int64, error) {
	rev, err := c.inner.Create(ctx, key, value, ttl)
	c.noteSeen(rev)
	return rev, err
}

func (c *Cacher) Get(ctx context.Context, key string) (storage.KeyValue, error) {
	return c.inner.Get(ctx, key)
}

func (c *Cacher) Update(ctx context.Context, key string, expectedRevision int64, value []byte, ttl time.Duration) (int64, error) {
	rev, err := c.inner.Update(ctx, key, expectedRevision, value, ttl)
	c.noteSeen(rev)
	return rev, err
}

func (c *Cacher) Delete(ctx context.Context, key string, expectedRevision int64) (storage.KeyValue, int64, error) {
	kv, rev, err := c.inner.Delete(ctx, key, expectedRevision)
	c.noteSeen(rev)
	return kv, rev, err
}

// noteSeen records that the store has written rev (0 when a write failed).
func (c *Cacher) noteSeen(rev int64) {
	c.mu.Lock()
	c.seen = max(c.seen, rev)
	c.mu.Unlock()
}

// Revision reads the store's current revision, sharing the read in flight with everyone who asked
// before it started.
func (c *Cacher) Revision(ctx context.Context) (int64, error) {
	return c.revisions.do(ctx, struct{}{})
}

func (c *Cacher) readRevision(ctx context.Context, _ struct{}) (int64, error) {
	rev, err := c.inner.Revision(ctx)
	c.noteSeen(rev)
	return rev, err
}

func (c *Cacher) Compact(ctx context.Context, revision int64) error {
	if err := c.inner.Compact(ctx, revision); err != nil {
		return err
	}
	c.noteCompacted(revision - 1) // the compacted revision itself stays readable
	return nil
}

// noteCompacted records that every revision through rev is compacted (and so written).
func (c *Cacher) noteCompacted(rev int64) {
	c.mu.Lock()
	c.compactedThrough = max(c.compactedThrough, rev)
	c.seen = max(c.seen, rev)
	c.mu.Unlock()
}

// compacted is whether the store has compacted the revision from: at once when this server
// compacted it or a probe found it so; otherwise from a probe of the store shared by every caller
// waiting at the time (another server on the same etcd compacts too). A probe that fails otherwise
// (the store unreachable) does not refuse the watch, whose changes the window holds.
func (c *Cacher) compacted(ctx context.Context, from int64) (bool, error) {
	for {
		c.mu.Lock()
		through := c.compactedThrough
		c.mu.Unlock()
		if from <= through {
			return true, nil
		}
		probed, err := c.probes.do(ctx, from)
		if ctx.Err() != nil {
			return false, ctx.Err()
		}
		if err != nil || probed == 0 {
			return false, nil
		}
		// The shared probe asked about an older revision than from and found it compacted;
		// from's own answer is the next probe's.
	}
}

// probe lists one key at from: the store refuses it when it has compacted from. It answers from
// when compacted (and records it), 0 when not.
func (c *Cacher) probe(ctx context.Context, from int64) (int64, error) {
	_, err := c.inner.List(ctx, c.prefix, storage.ListOptions{Revision: from, Limit: 1})
	if errors.Is(err, storage.ErrCompacted) {
		c.noteCompacted(from)
		return from, nil
	}
	return 0, err
}

// Stop ends every watch served from memory and hands everything to the store from then on; the
// server stops its caches when it shuts down, before the store's client goes away.
func (c *Cacher) Stop() {
	c.cancel()
	<-c.done
}

// Stopped closes once the cache no longer follows the store.
func (c *Cacher) Stopped() <-chan struct{} { return c.done }

// Close stops the cache and closes the store, which the cache wraps as its owner.
func (c *Cacher) Close() error {
	c.Stop()
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	return c.inner.Close()
}

// List answers a LIST of the latest revision from memory when the cache has caught up with the
// backing store's current revision, which makes it as consistent as a read of the store; a LIST at
// a past revision, outside the prefix, or while the cache lags is the store's. Options no store
// can answer are refused first, as every store refuses them.
func (c *Cacher) List(ctx context.Context, prefix string, o storage.ListOptions) (storage.ListResult, error) {
	if err := o.Validate(prefix); err != nil {
		return storage.ListResult{}, err
	}
	if o.Revision != 0 || !c.covers(prefix) {
		return c.inner.List(ctx, prefix, o)
	}
	current, err := c.Revision(ctx)
	if err != nil {
		return storage.ListResult{}, err
	}
	if res, ok, err := c.listCached(prefix, o, current); ok || err != nil {
		return res, err
	}
	return c.inner.List(ctx, prefix, o)
}

// listCached answers from memory when the cache has caught up with current; the objects are
// chosen under the lock and unpacked after it, so a large LIST does not hold up the watchers.
func (c *Cacher) listCached(prefix string, o storage.ListOptions, current int64) (storage.ListResult, bool, error) {
	c.mu.Lock()
	if c.stopped || c.rev < current {
		c.mu.Unlock()
		return storage.ListResult{}, false, nil
	}
	keys := c.keys.Sorted(c.objects)
	i := sort.SearchStrings(keys, o.Start(prefix))
	end := i
	for end < len(keys) && strings.HasPrefix(keys[end], prefix) {
		end++
	}
	n := end - i
	if o.Limit > 0 && int64(n) > o.Limit {
		n = int(o.Limit)
	}
	res := storage.ListResult{Revision: c.rev, Remaining: int64(end - i - n)}
	entries := make([]entry, n)
	for j := range n {
		entries[j] = c.objects[keys[i+j]]
	}
	keys, p := keys[i:i+n:i+n], c.packer
	c.mu.Unlock()
	if n == 0 {
		return res, true, nil
	}
	if o.Packed {
		res.Items, res.Values = p.packedItems(keys, entries)
		return res, true, nil
	}
	items, err := p.keyValues(keys, entries)
	if err != nil {
		return storage.ListResult{}, false, err
	}
	res.Items = items
	return res, true, nil
}

// Watch serves changes under prefix after fromRevision from memory: the window's changes first,
// then live ones. A revision older than the window, not yet written, or compacted in the store is
// the store's to answer. A watch from a revision the cache has seen asks the store nothing but,
// when it replays the window, whether the store compacted it; the reads it makes are shared with
// every watch asking at the same time.
func (c *Cacher) Watch(ctx context.Context, prefix string, fromRevision int64) (<-chan storage.WatchEvent, error) {
	c.mu.Lock()
	closed, stopped, seen := c.closed, c.stopped, c.seen
	c.mu.Unlock()
	switch {
	case closed:
		return nil, storage.ErrClosed
	case stopped || !c.covers(prefix):
		return c.inner.Watch(ctx, prefix, fromRevision)
	}
	if fromRevision == 0 || fromRevision > seen {
		// "From now" is the store's now: the cache may not have seen the latest write yet. A
		// revision past any the cache has seen may be written or not yet.
		current, err := c.Revision(ctx)
		if err != nil {
			return nil, err
		}
		if fromRevision == 0 {
			fromRevision = current
		} else if fromRevision > current {
			return c.inner.Watch(ctx, prefix, fromRevision)
		}
		seen = current
	}
	if fromRevision < seen {
		// A replay: the store may have compacted what the window still holds, and a client must
		// then hear so (it relists) rather than get history the store no longer vouches for. A
		// watch from seen itself is not asked about: only a compaction to a revision newer than any
		// this server has seen could refuse it, and compactors (every orch-apiserver's on a
		// shared etcd) compact to a revision recorded an interval before.
		compacted, err := c.compacted(ctx, fromRevision)
		if err != nil {
			return nil, err
		}
		if compacted {
			return nil, storage.ErrCompacted
		}
	}
	c.mu.Lock()
	if c.stopped || fromRevision < c.since {
		c.mu.Unlock()
		return c.inner.Watch(ctx, prefix, fromRevision)
	}
	w := newWatcher(ctx, prefix, fromRevision)
	// The replay is the window's own changes after fromRevision, shared and unpacked one at a time
	// as the watcher delivers them: a copy per watcher of every change since would cost a watch
	// opened from far behind up to the whole window, unpacked, until its reader took it.
	first := sort.Search(len(c.changes), func(i int) bool { return c.changes[i].entry.modRevision > fromRevision })
	w.start(c.changes[first:len(c.changes):len(c.changes)], c.packer, func() {
		c.mu.Lock()
		delete(c.watchers, w)
		c.mu.Unlock()
	})
	c.watchers[w] = struct{}{}
	c.mu.Unlock()
	return w.ch, nil
}
