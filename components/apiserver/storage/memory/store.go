// Package memory is a storage.Interface kept entirely in process memory, on an injected clock.
//
// It is built for tests and the simulator: every outcome (revisions, which conditional write wins,
// which keys expire and in which order, which watcher is dropped) is a function of the sequence of
// calls and of the clock's readings at those calls, never of goroutine scheduling.
//
//   - MVCC: every write appends a version to its key and one entry to a change log, at one store-wide
//     revision (the empty store is at revision 1, like etcd). Lists can read any revision that is not
//     compacted; watches replay the change log.
//   - History is bounded (WithHistoryLimit, default DefaultHistoryLimit changes): when more changes are
//     kept, the oldest are compacted exactly as Compact would, and reads or watches at those revisions
//     answer storage.ErrCompacted.
//   - Expiry follows the injected clock. Every operation first expires, in order of deadline then key,
//     each key whose deadline is not after clock.Now(); each expiry is a Delete at a new revision that
//     watchers see. A timer on the same clock does the same when no operation comes, so watchers see
//     expiries without further calls; whether the timer or the next call gets there first, the
//     history is the same.
//   - Watch fan-out never blocks a writer: each watcher has a buffered channel (WithWatchBuffer, or
//     WatchWithBuffer for one watch) that writers fill under the store lock. A watcher whose channel
//     is full gets a last event with Err storage.ErrWatcherTooSlow and is closed; whether that
//     happens depends only on the writes and on how many events the consumer has received.
//
// Values are not copied: the store keeps the slice a write passes and hands it to every reader and
// watcher, as storage.Interface allows (a node's status post copied its few KB three times: read,
// write and watch). Each is kept without room past its length, so a caller's append copies.
package memory

import (
	"container/heap"
	"context"
	"errors"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/benbjohnson/clock"

	"orch.io/orch/components/apiserver/storage"
)

const (
	// DefaultHistoryLimit is how many changes the store keeps for snapshot reads and watch replays
	// unless WithHistoryLimit says otherwise.
	DefaultHistoryLimit = 100000
	// DefaultWatchBuffer is how many undelivered events a watcher may have pending (beyond those of
	// its initial replay) unless WithWatchBuffer says otherwise.
	DefaultWatchBuffer = 1000
)

// Option configures a Store.
type Option func(*options)

type options struct {
	historyLimit int64
	watchBuffer  int
}

// WithHistoryLimit keeps the last n changes (revisions) of history: snapshot reads and watches from
// revisions older than the current revision minus n answer storage.ErrCompacted, as after Compact.
// n <= 0 keeps every change until Compact is called. Default DefaultHistoryLimit.
func WithHistoryLimit(n int) Option {
	return func(o *options) { o.historyLimit = int64(n) }
}

// WithWatchBuffer sets how many events a watcher may leave unread before it is dropped with
// storage.ErrWatcherTooSlow. A watch from a past revision gets room for its whole replay on top of
// this. n < 1 is taken as 1. Default DefaultWatchBuffer.
func WithWatchBuffer(n int) Option {
	return func(o *options) {
		if n < 1 {
			n = 1
		}
		o.watchBuffer = n
	}
}

// Store is the in-memory storage.Interface. Its zero value is not usable: call New.
type Store struct {
	clk  clock.Clock
	opts options

	mu     sync.Mutex
	closed bool

	rev        int64 // current revision
	compactRev int64 // oldest readable revision
	keys       map[string]*history
	index      storage.KeyIndex[*history]

	// log holds one event per revision in (compactRev, rev], in order, from log[logStart].
	log      []storage.WatchEvent
	logStart int

	expiries expiryHeap
	timer    *clock.Timer
	timerAt  time.Time
	timerGen uint64

	watchers map[*watcher]struct{}
}

var _ storage.Interface = (*Store)(nil)

// New returns an empty store whose expiries follow clk (the real clock when clk is nil).
func New(clk clock.Clock, opts ...Option) *Store {
	if clk == nil {
		clk = clock.New()
	}
	o := options{historyLimit: DefaultHistoryLimit, watchBuffer: DefaultWatchBuffer}
	for _, opt := range opts {
		opt(&o)
	}
	return &Store{
		clk:        clk,
		opts:       o,
		rev:        1,
		compactRev: 1,
		keys:       make(map[string]*history),
		watchers:   make(map[*watcher]struct{}),
	}
}

type version struct {
	modRev    int64
	createRev int64
	value     []byte
	deleted   bool
}

type history struct {
	versions []version // ascending modRev; the last is the current state
	deadline time.Time // expiry of the live key; zero when it does not expire
}

func (h *history) live() *version {
	if h == nil || len(h.versions) == 0 {
		return nil
	}
	v := &h.versions[len(h.versions)-1]
	if v.deleted {
		return nil
	}
	return v
}

// at returns the key's state at rev, or nil when it did not exist then.
func (h *history) at(rev int64) *version {
	vs := h.versions
	// The newest version at or before rev; usually the last one.
	i := len(vs) - 1
	if i >= 0 && vs[i].modRev > rev {
		i = sort.Search(len(vs), func(j int) bool { return vs[j].modRev > rev }) - 1
	}
	if i < 0 || vs[i].deleted {
		return nil
	}
	return &vs[i]
}

// readOnly is value as the store keeps and hands it out: without room past its length, so that
// no two callers' appends write to the same array.
func readOnly(value []byte) []byte { return value[:len(value):len(value)] }

func (v *version) kv(key string) storage.KeyValue {
	return storage.KeyValue{Key: key, Value: v.value, CreateRevision: v.createRev, ModRevision: v.modRev}
}

// begin takes the lock, refuses a closed store or ended ctx, and applies due expiries.
func (s *Store) begin(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return storage.ErrClosed
	}
	s.expireLocked()
	return nil
}

func checkKey(key string) error {
	if key == "" {
		return errors.New("storage: empty key")
	}
	return nil
}

// Create implements storage.Interface.
func (s *Store) Create(ctx context.Context, key string, value []byte, ttl time.Duration) (int64, error) {
	if err := checkKey(key); err != nil {
		return 0, err
	}
	if err := s.begin(ctx); err != nil {
		return 0, err
	}
	defer s.mu.Unlock()
	h := s.keys[key]
	if h.live() != nil {
		return 0, storage.ErrKeyExists
	}
	if h == nil {
		h = &history{}
		s.keys[key] = h
		s.index.Add(key, s.keys)
	}
	rev := s.rev + 1
	v := version{modRev: rev, createRev: rev, value: readOnly(value)}
	h.versions = append(h.versions, v)
	h.deadline = time.Time{}
	s.setExpiryLocked(key, h, ttl)
	s.commitLocked(storage.WatchEvent{Type: storage.Put, Created: true, KV: storage.KeyValue{
		Key: key, Value: v.value, CreateRevision: rev, ModRevision: rev}})
	return rev, nil
}

// Get implements storage.Interface.
func (s *Store) Get(ctx context.Context, key string) (storage.KeyValue, error) {
	if err := s.begin(ctx); err != nil {
		return storage.KeyValue{}, err
	}
	defer s.mu.Unlock()
	v := s.keys[key].live()
	if v == nil {
		return storage.KeyValue{}, storage.ErrNotFound
	}
	return v.kv(key), nil
}

// Update implements storage.Interface. A ttl <= 0 leaves the key's current expiry (if any) as it is.
func (s *Store) Update(ctx context.Context, key string, expectedRevision int64, value []byte, ttl time.Duration) (int64, error) {
	if err := s.begin(ctx); err != nil {
		return 0, err
	}
	defer s.mu.Unlock()
	h := s.keys[key]
	cur := h.live()
	if cur == nil {
		return 0, storage.ErrNotFound
	}
	if cur.modRev != expectedRevision {
		return 0, storage.ErrConflict
	}
	rev := s.rev + 1
	v := version{modRev: rev, createRev: cur.createRev, value: readOnly(value)}
	h.versions = append(h.versions, v)
	s.setExpiryLocked(key, h, ttl)
	s.commitLocked(storage.WatchEvent{Type: storage.Put, PrevValue: cur.value, KV: storage.KeyValue{
		Key: key, Value: v.value, CreateRevision: v.createRev, ModRevision: rev}})
	return rev, nil
}

// Delete implements storage.Interface.
func (s *Store) Delete(ctx context.Context, key string, expectedRevision int64) (storage.KeyValue, int64, error) {
	if err := s.begin(ctx); err != nil {
		return storage.KeyValue{}, 0, err
	}
	defer s.mu.Unlock()
	h := s.keys[key]
	cur := h.live()
	if cur == nil {
		return storage.KeyValue{}, 0, storage.ErrNotFound
	}
	if expectedRevision != 0 && cur.modRev != expectedRevision {
		return storage.KeyValue{}, 0, storage.ErrConflict
	}
	deleted := cur.kv(key)
	rev := s.deleteLocked(key, h)
	return deleted, rev, nil
}

// deleteLocked writes a tombstone for the live key and returns its revision.
func (s *Store) deleteLocked(key string, h *history) int64 {
	cur := *h.live()
	rev := s.rev + 1
	h.versions = append(h.versions, version{modRev: rev, createRev: cur.createRev, deleted: true})
	h.deadline = time.Time{}
	s.commitLocked(storage.WatchEvent{Type: storage.Delete, KV: storage.KeyValue{
		Key: key, Value: cur.value, CreateRevision: cur.createRev, ModRevision: rev}})
	return rev
}

// commitLocked records ev as the change at the next revision and fans it out.
func (s *Store) commitLocked(ev storage.WatchEvent) {
	s.rev++
	s.log = append(s.log, ev)
	for w := range s.watchers {
		if strings.HasPrefix(ev.KV.Key, w.prefix) {
			s.sendLocked(w, ev)
		}
	}
	if s.opts.historyLimit > 0 && s.rev-s.compactRev > s.opts.historyLimit {
		s.compactLocked(s.rev - s.opts.historyLimit)
	}
	s.armLocked()
}

// List implements storage.Interface.
func (s *Store) List(ctx context.Context, prefix string, opts storage.ListOptions) (storage.ListResult, error) {
	if err := opts.Validate(prefix); err != nil {
		return storage.ListResult{}, err
	}
	start := opts.Start(prefix)
	if err := s.begin(ctx); err != nil {
		return storage.ListResult{}, err
	}
	defer s.mu.Unlock()
	rev := opts.Revision
	if rev == 0 {
		rev = s.rev
	}
	if rev < s.compactRev {
		return storage.ListResult{}, storage.ErrCompacted
	}
	if rev > s.rev {
		return storage.ListResult{}, storage.ErrFutureRevision
	}
	res := storage.ListResult{Revision: rev}
	keys := s.index.Sorted(s.keys)
	for i := sort.SearchStrings(keys, start); i < len(keys) && strings.HasPrefix(keys[i], prefix); i++ {
		v := s.keys[keys[i]].at(rev)
		if v == nil {
			continue
		}
		if opts.Limit == 0 || int64(len(res.Items)) < opts.Limit {
			res.Items = append(res.Items, v.kv(keys[i]))
		} else {
			res.Remaining++
		}
	}
	return res, nil
}

// Revision implements storage.Interface.
func (s *Store) Revision(ctx context.Context) (int64, error) {
	if err := s.begin(ctx); err != nil {
		return 0, err
	}
	defer s.mu.Unlock()
	return s.rev, nil
}

// Compact implements storage.Interface. Compacting at or before the already compacted revision is a
// no-op; a revision after the current one is storage.ErrFutureRevision.
func (s *Store) Compact(ctx context.Context, revision int64) error {
	if err := s.begin(ctx); err != nil {
		return err
	}
	defer s.mu.Unlock()
	if revision > s.rev {
		return storage.ErrFutureRevision
	}
	if revision > s.compactRev {
		s.compactLocked(revision)
	}
	return nil
}

// compactLocked drops the history that no read at revision r or later needs.
func (s *Store) compactLocked(r int64) {
	for s.logStart < len(s.log) && s.log[s.logStart].KV.ModRevision <= r {
		key := s.log[s.logStart].KV.Key
		s.log[s.logStart] = storage.WatchEvent{}
		s.logStart++
		s.compactKeyLocked(key, r)
	}
	if s.logStart == len(s.log) {
		s.log, s.logStart = s.log[:0], 0
	} else if s.logStart > 1024 && s.logStart > len(s.log)/2 {
		n := copy(s.log, s.log[s.logStart:])
		clear(s.log[n:])
		s.log, s.logStart = s.log[:n], 0
	}
	s.compactRev = r
}

func (s *Store) compactKeyLocked(key string, r int64) {
	h := s.keys[key]
	if h == nil {
		return
	}
	vs := h.versions
	if len(vs) == 0 || vs[0].modRev > r {
		return
	}
	i := 0 // the newest version at or before r: the state a read at r sees
	for i+1 < len(vs) && vs[i+1].modRev <= r {
		i++
	}
	drop := i
	if vs[i].deleted {
		drop++
	}
	if drop == 0 {
		return
	}
	clear(vs[:drop])
	h.versions = vs[drop:]
	if len(h.versions) == 0 {
		delete(s.keys, key)
		s.index.Removed()
	}
}

// Close implements storage.Interface: it closes every watch channel and stops the expiry timer.
// Later calls answer storage.ErrClosed. Close may be called more than once.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	for w := range s.watchers {
		s.dropWatcherLocked(w)
	}
	if s.timer != nil {
		s.timer.Stop()
		s.timer = nil
	}
	return nil
}

// ---- expiry ----

type expiry struct {
	deadline time.Time
	key      string
}

type expiryHeap []expiry

func (h expiryHeap) Len() int { return len(h) }
func (h expiryHeap) Less(i, j int) bool {
	if !h[i].deadline.Equal(h[j].deadline) {
		return h[i].deadline.Before(h[j].deadline)
	}
	return h[i].key < h[j].key
}
func (h expiryHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *expiryHeap) Push(x any)   { *h = append(*h, x.(expiry)) }
func (h *expiryHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	old[len(old)-1] = expiry{}
	*h = old[:len(old)-1]
	return x
}

// setExpiryLocked starts a ttl from now for the live key; ttl <= 0 leaves its expiry as it is.
func (s *Store) setExpiryLocked(key string, h *history, ttl time.Duration) {
	if ttl <= 0 {
		return
	}
	h.deadline = s.clk.Now().Add(ttl)
	heap.Push(&s.expiries, expiry{deadline: h.deadline, key: key})
}

// valid reports whether e is still the deadline of a live key (entries go stale when their key is
// deleted or given another deadline; they are dropped when they reach the top of the heap).
func (s *Store) valid(e expiry) bool {
	h := s.keys[e.key]
	return h.live() != nil && h.deadline.Equal(e.deadline)
}

// expireLocked deletes, in order of deadline then key, every key whose deadline has come.
func (s *Store) expireLocked() {
	if len(s.expiries) == 0 {
		return
	}
	now := s.clk.Now()
	for len(s.expiries) > 0 && !s.expiries[0].deadline.After(now) {
		e := heap.Pop(&s.expiries).(expiry)
		if s.valid(e) {
			s.deleteLocked(e.key, s.keys[e.key])
		}
	}
}

// armLocked points the clock timer at the earliest pending deadline.
func (s *Store) armLocked() {
	for len(s.expiries) > 0 && !s.valid(s.expiries[0]) {
		heap.Pop(&s.expiries)
	}
	if len(s.expiries) == 0 || s.closed {
		if s.timer != nil {
			s.timer.Stop()
			s.timer = nil
		}
		return
	}
	next := s.expiries[0].deadline
	if s.timer != nil && s.timerAt.Equal(next) {
		return
	}
	if s.timer != nil {
		s.timer.Stop()
	}
	s.timerGen++
	gen := s.timerGen
	d := next.Sub(s.clk.Now())
	if d < 0 {
		d = 0
	}
	s.timerAt = next
	s.timer = s.clk.AfterFunc(d, func() { s.onTimer(gen) })
}

func (s *Store) onTimer(gen uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	if gen == s.timerGen {
		s.timer = nil
	}
	s.expireLocked()
	s.armLocked()
}

// ---- watch ----

type watcher struct {
	prefix string
	ch     chan storage.WatchEvent
	stop   func() bool
}

// Watch implements storage.Interface. A fromRevision after the current revision is
// storage.ErrFutureRevision.
func (s *Store) Watch(ctx context.Context, prefix string, fromRevision int64) (<-chan storage.WatchEvent, error) {
	return s.watch(ctx, prefix, fromRevision, s.opts.watchBuffer)
}

// WatchWithBuffer is Watch with room for n unread events (beyond its replay) instead of the
// store's WithWatchBuffer; n < 1 is taken as 1. It is for a watch read only now and then (the
// simulator's watch of every pod, read at settled points, must never drop an event), so that the
// watches read as they come (the watch cache's) keep the store's smaller channel: each watcher's
// channel is allocated whole when it starts.
func (s *Store) WatchWithBuffer(ctx context.Context, prefix string, fromRevision int64, n int) (<-chan storage.WatchEvent, error) {
	return s.watch(ctx, prefix, fromRevision, max(n, 1))
}

func (s *Store) watch(ctx context.Context, prefix string, fromRevision int64, buffer int) (<-chan storage.WatchEvent, error) {
	if err := s.begin(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	from := fromRevision
	if from == 0 {
		from = s.rev
	}
	if from < s.compactRev {
		return nil, storage.ErrCompacted
	}
	if from > s.rev {
		return nil, storage.ErrFutureRevision
	}
	log := s.log[s.logStart:]
	i := sort.Search(len(log), func(i int) bool { return log[i].KV.ModRevision > from })
	var replay []storage.WatchEvent
	for _, ev := range log[i:] {
		if strings.HasPrefix(ev.KV.Key, prefix) {
			replay = append(replay, ev)
		}
	}
	w := &watcher{prefix: prefix, ch: make(chan storage.WatchEvent, len(replay)+buffer+1)}
	for _, ev := range replay {
		w.ch <- ev
	}
	s.watchers[w] = struct{}{}
	w.stop = context.AfterFunc(ctx, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if _, ok := s.watchers[w]; ok {
			s.dropWatcherLocked(w)
		}
	})
	return w.ch, nil
}

// sendLocked hands ev to w without ever blocking: the last free slot of the channel is kept for the
// ErrWatcherTooSlow event that ends a watcher with no room left.
func (s *Store) sendLocked(w *watcher, ev storage.WatchEvent) {
	if len(w.ch) < cap(w.ch)-1 {
		w.ch <- ev
		return
	}
	w.ch <- storage.WatchEvent{Err: storage.ErrWatcherTooSlow}
	s.dropWatcherLocked(w)
}

func (s *Store) dropWatcherLocked(w *watcher) {
	delete(s.watchers, w)
	close(w.ch)
	if w.stop != nil {
		w.stop()
	}
}
