package etcd3

import (
	"context"
	"sync"
	"time"

	"github.com/benbjohnson/clock"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// reuseGuard is how much longer than its ttl a reused lease must still live when it is handed out,
// so that the write carrying it lands well before the lease's end.
const reuseGuard = 250 * time.Millisecond

// leaseManager hands out leases for TTL writes, reusing one lease per TTL for a short window as the
// Kubernetes apiserver does: a Grant per write would cost a raft round trip per write.
//
// A lease for ttl is granted for ceil(ttl + window) seconds, where window = clamp(ttl/20, 1s,
// maxWindow), and handed to every write of the same whole-second ttl while it still has at least
// ttl + reuseGuard to live. So no key expires before its ttl, and none outlives it by more than the
// window plus one second.
type leaseManager struct {
	client    *clientv3.Client
	clk       clock.Clock
	maxWindow time.Duration

	mu     sync.Mutex
	leases map[int64]grantedLease // by ttl in whole seconds
}

type grantedLease struct {
	id      clientv3.LeaseID
	expires time.Time // lower bound of the lease's end, on clk
}

func newLeaseManager(client *clientv3.Client, clk clock.Clock, maxWindow time.Duration) *leaseManager {
	return &leaseManager{client: client, clk: clk, maxWindow: maxWindow, leases: make(map[int64]grantedLease)}
}

// reuseWindow is how long a lease for ttl keeps serving writes.
func (m *leaseManager) reuseWindow(ttl time.Duration) time.Duration {
	return max(min(ttl/20, m.maxWindow), time.Second)
}

func ceilSeconds(d time.Duration) int64 {
	return int64((d + time.Second - 1) / time.Second)
}

func (m *leaseManager) get(ctx context.Context, ttl time.Duration) (clientv3.LeaseID, error) {
	secs := ceilSeconds(ttl)
	ttl = time.Duration(secs) * time.Second
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.clk.Now()
	if l, ok := m.leases[secs]; ok && !now.Add(ttl+reuseGuard).After(l.expires) {
		return l.id, nil
	}
	// Forget leases that no longer serve anyone.
	for k, l := range m.leases {
		if l.expires.Before(now.Add(time.Duration(k) * time.Second)) {
			delete(m.leases, k)
		}
	}
	// The lease's clock starts when etcd applies the grant, after now: expires is a lower bound.
	resp, err := m.client.Grant(ctx, ceilSeconds(ttl+m.reuseWindow(ttl)))
	if err != nil {
		return 0, err
	}
	m.leases[secs] = grantedLease{id: resp.ID, expires: now.Add(time.Duration(resp.TTL) * time.Second)}
	return resp.ID, nil
}

// forget drops a lease etcd no longer knows (revoked from outside).
func (m *leaseManager) forget(id clientv3.LeaseID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for k, l := range m.leases {
		if l.id == id {
			delete(m.leases, k)
		}
	}
}
