// Package etcd3 is the storage.Interface on etcd v3, through go.etcd.io/etcd/client/v3, plus what a
// single machine needs around it: an in-process etcd (StartEmbedded) and the periodic compactor
// (StartCompactor).
//
// Keys are used as given: the caller puts its own prefix (such as "/registry/") in front. Revisions
// are etcd's: the store-wide revision, an object's ModRevision is its resourceVersion.
//
//   - Create is a transaction on CreateRevision == 0; Update and Delete are transactions on
//     ModRevision; a failed compare reads the key back to tell storage.ErrNotFound from
//     storage.ErrConflict.
//   - A positive ttl attaches the key to a lease. Leases are reused, as the Kubernetes apiserver does:
//     one lease per TTL (rounded up to whole seconds) serves every write within a short window
//     (WithLeaseReuseWindow, default one minute, at most 5% of the ttl and at least one second), and is
//     granted for ttl plus that window so no key expires before its ttl; a key may outlive its ttl by
//     up to the window plus one second. Update with ttl <= 0 keeps the key's lease (its expiry).
//   - List is one Range (WithRange, WithLimit, WithRev); Remaining comes from the range's count.
//   - Watch checks the revision first (so a compacted or future fromRevision fails from Watch
//     itself), then watches from fromRevision+1 with previous values, so Delete events carry the last
//     value, expiries included. Events are handed on as the consumer reads them; one that stops
//     reading leaves them queued in the etcd client (as the Kubernetes apiserver's watches do) and
//     never holds up a writer.
//   - etcd's ErrCompacted and ErrFutureRev become storage.ErrCompacted and
//     storage.ErrFutureRevision; other errors are returned as they come.
package etcd3

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/benbjohnson/clock"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"orch.io/orch/components/apiserver/storage"
)

const (
	// DefaultLeaseReuseWindow is how long one lease serves writes of the same TTL, unless
	// WithLeaseReuseWindow says otherwise.
	DefaultLeaseReuseWindow = time.Minute
	// watchBuffer is the size of each watch channel.
	watchBuffer = 100
)

// Option configures a Store.
type Option func(*options)

type options struct {
	leaseReuseWindow time.Duration
}

// WithLeaseReuseWindow sets the longest time one lease serves writes of the same TTL (default
// DefaultLeaseReuseWindow). The window actually used for a TTL is at most 5% of it and at least one
// second; keys outlive their TTL by up to that window plus one second of rounding. d <= 0 still
// reuses a lease within one second.
func WithLeaseReuseWindow(d time.Duration) Option {
	return func(o *options) { o.leaseReuseWindow = d }
}

// Store is the etcd storage.Interface. Close it to end its watches; the client stays the caller's.
type Store struct {
	client *clientv3.Client
	clk    clock.Clock
	leases *leaseManager

	closed   atomic.Bool
	mu       sync.Mutex // orders Close against watch registration
	wg       sync.WaitGroup
	closeCtx context.Context
	cancel   context.CancelFunc
}

var _ storage.Interface = (*Store)(nil)

// New returns a store on client; clk times lease reuse (the real clock when clk is nil).
func New(client *clientv3.Client, clk clock.Clock, opts ...Option) *Store {
	if clk == nil {
		clk = clock.New()
	}
	o := options{leaseReuseWindow: DefaultLeaseReuseWindow}
	for _, opt := range opts {
		opt(&o)
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Store{
		client:   client,
		clk:      clk,
		leases:   newLeaseManager(client, clk, o.leaseReuseWindow),
		closeCtx: ctx,
		cancel:   cancel,
	}
}

// mapErr turns etcd's errors into the storage ones.
func mapErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, rpctypes.ErrCompacted):
		return storage.ErrCompacted
	case errors.Is(err, rpctypes.ErrFutureRev):
		return storage.ErrFutureRevision
	}
	return err
}

func (s *Store) check() error {
	if s.closed.Load() {
		return storage.ErrClosed
	}
	return nil
}

func toKV(kv *clientv3.GetResponse, i int) storage.KeyValue {
	k := kv.Kvs[i]
	return storage.KeyValue{Key: string(k.Key), Value: k.Value, CreateRevision: k.CreateRevision, ModRevision: k.ModRevision}
}

// put runs a transaction whose success branch puts key with a lease for ttl (ttl <= 0: none, or with
// keepLease the key's current one). A lease gone from etcd is forgotten and the write tried once more.
func (s *Store) put(ctx context.Context, key string, value []byte, ttl time.Duration, keepLease bool, cmps []clientv3.Cmp, orElse ...clientv3.Op) (*clientv3.TxnResponse, error) {
	for attempt := 0; ; attempt++ {
		var opts []clientv3.OpOption
		var lease clientv3.LeaseID
		if ttl > 0 {
			id, err := s.leases.get(ctx, ttl)
			if err != nil {
				return nil, err
			}
			lease = id
			opts = append(opts, clientv3.WithLease(id))
		} else if keepLease {
			opts = append(opts, clientv3.WithIgnoreLease())
		}
		// OpPut copies the value it is given, so it reads value in place rather than from a copy.
		put := clientv3.OpPut(key, unsafe.String(unsafe.SliceData(value), len(value)), opts...)
		resp, err := s.client.Txn(ctx).If(cmps...).Then(put).Else(orElse...).Commit()
		if err != nil && lease != 0 && attempt == 0 && errors.Is(err, rpctypes.ErrLeaseNotFound) {
			s.leases.forget(lease)
			continue
		}
		return resp, mapErr(err)
	}
}

// Create implements storage.Interface.
func (s *Store) Create(ctx context.Context, key string, value []byte, ttl time.Duration) (int64, error) {
	if err := s.check(); err != nil {
		return 0, err
	}
	resp, err := s.put(ctx, key, value, ttl, false, []clientv3.Cmp{clientv3.Compare(clientv3.CreateRevision(key), "=", 0)})
	if err != nil {
		return 0, err
	}
	if !resp.Succeeded {
		return 0, storage.ErrKeyExists
	}
	return resp.Header.Revision, nil
}

// Get implements storage.Interface.
func (s *Store) Get(ctx context.Context, key string) (storage.KeyValue, error) {
	if err := s.check(); err != nil {
		return storage.KeyValue{}, err
	}
	resp, err := s.client.Get(ctx, key)
	if err != nil {
		return storage.KeyValue{}, mapErr(err)
	}
	if len(resp.Kvs) == 0 {
		return storage.KeyValue{}, storage.ErrNotFound
	}
	return toKV(resp, 0), nil
}

// onRevision compares the key's ModRevision (and that it exists, so 0 never matches a missing key).
func onRevision(key string, rev int64) []clientv3.Cmp {
	return []clientv3.Cmp{
		clientv3.Compare(clientv3.ModRevision(key), "=", rev),
		clientv3.Compare(clientv3.Version(key), ">", 0),
	}
}

// failed tells, from the count read by a failed conditional write, why it failed.
func failed(resp *clientv3.TxnResponse) error {
	if rr := resp.Responses[0].GetResponseRange(); rr == nil || rr.Count == 0 {
		return storage.ErrNotFound
	}
	return storage.ErrConflict
}

// Update implements storage.Interface. A ttl <= 0 keeps the key's lease, so its expiry stays.
func (s *Store) Update(ctx context.Context, key string, expectedRevision int64, value []byte, ttl time.Duration) (int64, error) {
	if err := s.check(); err != nil {
		return 0, err
	}
	resp, err := s.put(ctx, key, value, ttl, true, onRevision(key, expectedRevision), clientv3.OpGet(key, clientv3.WithCountOnly()))
	if err != nil {
		return 0, err
	}
	if !resp.Succeeded {
		return 0, failed(resp)
	}
	return resp.Header.Revision, nil
}

// Delete implements storage.Interface.
func (s *Store) Delete(ctx context.Context, key string, expectedRevision int64) (storage.KeyValue, int64, error) {
	if err := s.check(); err != nil {
		return storage.KeyValue{}, 0, err
	}
	if expectedRevision == 0 {
		resp, err := s.client.Delete(ctx, key, clientv3.WithPrevKV())
		if err != nil {
			return storage.KeyValue{}, 0, mapErr(err)
		}
		if resp.Deleted == 0 || len(resp.PrevKvs) == 0 {
			return storage.KeyValue{}, 0, storage.ErrNotFound
		}
		p := resp.PrevKvs[0]
		return storage.KeyValue{Key: string(p.Key), Value: p.Value, CreateRevision: p.CreateRevision, ModRevision: p.ModRevision}, resp.Header.Revision, nil
	}
	resp, err := s.client.Txn(ctx).If(onRevision(key, expectedRevision)...).
		Then(clientv3.OpDelete(key, clientv3.WithPrevKV())).
		Else(clientv3.OpGet(key, clientv3.WithCountOnly())).Commit()
	if err != nil {
		return storage.KeyValue{}, 0, mapErr(err)
	}
	if !resp.Succeeded {
		return storage.KeyValue{}, 0, failed(resp)
	}
	dr := resp.Responses[0].GetResponseDeleteRange()
	if dr == nil || len(dr.PrevKvs) == 0 {
		return storage.KeyValue{}, 0, fmt.Errorf("etcd3: delete of %q returned no previous value", key)
	}
	p := dr.PrevKvs[0]
	return storage.KeyValue{Key: string(p.Key), Value: p.Value, CreateRevision: p.CreateRevision, ModRevision: p.ModRevision}, resp.Header.Revision, nil
}

// nonEmpty returns key, or "\x00" for an empty key (etcd refuses empty keys; "\x00" with range end
// "\x00" means every key).
func nonEmpty(key string) string {
	if key == "" {
		return "\x00"
	}
	return key
}

// List implements storage.Interface.
func (s *Store) List(ctx context.Context, prefix string, opts storage.ListOptions) (storage.ListResult, error) {
	if err := s.check(); err != nil {
		return storage.ListResult{}, err
	}
	if err := opts.Validate(prefix); err != nil {
		return storage.ListResult{}, err
	}
	start := opts.Start(prefix)
	ops := []clientv3.OpOption{clientv3.WithRange(clientv3.GetPrefixRangeEnd(prefix))}
	if opts.Limit > 0 {
		ops = append(ops, clientv3.WithLimit(opts.Limit))
	}
	if opts.Revision > 0 {
		ops = append(ops, clientv3.WithRev(opts.Revision))
	}
	resp, err := s.client.Get(ctx, nonEmpty(start), ops...)
	if err != nil {
		return storage.ListResult{}, mapErr(err)
	}
	res := storage.ListResult{Revision: opts.Revision, Remaining: resp.Count - int64(len(resp.Kvs))}
	if res.Revision == 0 {
		res.Revision = resp.Header.Revision
	}
	if len(resp.Kvs) > 0 {
		res.Items = make([]storage.KeyValue, len(resp.Kvs))
		for i := range resp.Kvs {
			res.Items[i] = toKV(resp, i)
		}
	}
	return res, nil
}

// Revision implements storage.Interface.
func (s *Store) Revision(ctx context.Context) (int64, error) {
	if err := s.check(); err != nil {
		return 0, err
	}
	resp, err := s.client.Get(ctx, "\x00", clientv3.WithCountOnly())
	if err != nil {
		return 0, mapErr(err)
	}
	return resp.Header.Revision, nil
}

// Compact implements storage.Interface. Compacting at or before the already compacted revision is a
// no-op; a revision after the current one is storage.ErrFutureRevision.
func (s *Store) Compact(ctx context.Context, revision int64) error {
	if err := s.check(); err != nil {
		return err
	}
	_, err := s.client.Compact(ctx, revision)
	if errors.Is(err, rpctypes.ErrCompacted) {
		return nil
	}
	return mapErr(err)
}

// Watch implements storage.Interface. A fromRevision after the current revision is
// storage.ErrFutureRevision. If etcd compacts past the watch while it runs, the last event has Err
// storage.ErrCompacted; other failures end it with etcd's error.
func (s *Store) Watch(ctx context.Context, prefix string, fromRevision int64) (<-chan storage.WatchEvent, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	if fromRevision < 0 {
		return nil, fmt.Errorf("storage: negative revision %d", fromRevision)
	}
	// Reading at fromRevision answers ErrCompacted or ErrFutureRev up front, and reading the latest
	// revision pins down "from now".
	probe := []clientv3.OpOption{clientv3.WithCountOnly()}
	if fromRevision > 0 {
		probe = append(probe, clientv3.WithRev(fromRevision))
	}
	resp, err := s.client.Get(ctx, nonEmpty(prefix), probe...)
	if err != nil {
		return nil, mapErr(err)
	}
	from := fromRevision
	if from == 0 {
		from = resp.Header.Revision
	}

	s.mu.Lock()
	if s.closed.Load() {
		s.mu.Unlock()
		return nil, storage.ErrClosed
	}
	s.wg.Add(1)
	s.mu.Unlock()

	wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	stop := context.AfterFunc(s.closeCtx, cancel)
	wch := s.client.Watch(wctx, prefix, clientv3.WithPrefix(), clientv3.WithRev(from+1), clientv3.WithPrevKV())
	out := make(chan storage.WatchEvent, watchBuffer)
	go func() {
		defer s.wg.Done()
		defer stop()
		defer cancel()
		defer close(out)
		send := func(ev storage.WatchEvent) bool {
			select {
			case out <- ev:
				return true
			case <-wctx.Done():
				return false
			}
		}
		for {
			var wr clientv3.WatchResponse
			var open bool
			select {
			case <-wctx.Done():
				return
			case wr, open = <-wch:
			}
			if !open {
				return
			}
			if err := wr.Err(); err != nil {
				if wctx.Err() == nil {
					send(storage.WatchEvent{Err: mapErr(err)})
				}
				return
			}
			for _, ev := range wr.Events {
				if !send(convert(ev)) {
					return
				}
			}
		}
	}()
	return out, nil
}

func convert(ev *clientv3.Event) storage.WatchEvent {
	kv := ev.Kv
	if ev.Type == clientv3.EventTypeDelete {
		out := storage.WatchEvent{Type: storage.Delete, KV: storage.KeyValue{Key: string(kv.Key), ModRevision: kv.ModRevision}}
		if p := ev.PrevKv; p != nil {
			out.KV.Value = p.Value
			out.KV.CreateRevision = p.CreateRevision
		}
		return out
	}
	out := storage.WatchEvent{
		Type:    storage.Put,
		Created: ev.IsCreate(),
		KV:      storage.KeyValue{Key: string(kv.Key), Value: kv.Value, CreateRevision: kv.CreateRevision, ModRevision: kv.ModRevision},
	}
	if p := ev.PrevKv; p != nil && !out.Created {
		out.PrevValue = p.Value
	}
	return out
}

// Close implements storage.Interface: it ends the store's watches (closing their channels) and
// refuses later calls with storage.ErrClosed. The client is left open. Close may be called more
// than once.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed.Swap(true) {
		s.mu.Unlock()
		return nil
	}
	s.mu.Unlock()
	s.cancel()
	s.wg.Wait()
	return nil
}
