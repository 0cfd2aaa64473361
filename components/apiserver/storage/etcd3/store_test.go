package etcd3

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	clientv3 "go.etcd.io/etcd/client/v3"

	"orch.io/orch/components/apiserver/storage"
	"orch.io/orch/components/apiserver/storage/storagetest"
)

// shared is the embedded etcd every test and benchmark of this binary uses, each under its own prefix.
var shared *Embedded

var prefixes atomic.Int64

func newPrefix() string { return fmt.Sprintf("/test-%d", prefixes.Add(1)) }

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "etcd3-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	shared, err = StartEmbedded(ctx, dir)
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	shared.Close()
	os.RemoveAll(dir)
	os.Exit(code)
}

func TestConformance(t *testing.T) {
	storagetest.Run(t, storagetest.Harness{
		New: func(t *testing.T) storagetest.Fixture {
			s := New(shared.Client, clock.New())
			t.Cleanup(func() { s.Close() })
			return storagetest.Fixture{Store: s, Prefix: newPrefix(), Advance: time.Sleep}
		},
		// Leases are whole seconds; a key may outlive its ttl by the one-second reuse window plus
		// etcd's 500 ms expiry check.
		TTL:         4 * time.Second,
		ExpiryGrace: 2 * time.Second,
	})
}

func TestRestartKeepsData(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "etcd")
	ctx := t.Context()
	e, err := StartEmbedded(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	s := New(e.Client, clock.New())
	rev, err := s.Create(ctx, "/registry/a", []byte("kept"), 0)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if err := e.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}

	e, err = StartEmbedded(ctx, dir)
	if err != nil {
		t.Fatalf("restart on the same directory: %v", err)
	}
	defer e.Close()
	s = New(e.Client, clock.New())
	defer s.Close()
	kv, err := s.Get(ctx, "/registry/a")
	if err != nil {
		t.Fatal(err)
	}
	if string(kv.Value) != "kept" || kv.ModRevision != rev {
		t.Fatalf("after restart: %q at %d, want %q at %d", kv.Value, kv.ModRevision, "kept", rev)
	}
	if cur, _ := s.Revision(ctx); cur < rev {
		t.Fatalf("revision went back from %d to %d", rev, cur)
	}
}

func TestTwoEmbeddedAtOnce(t *testing.T) {
	e, err := StartEmbedded(t.Context(), filepath.Join(t.TempDir(), "etcd"))
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if e.Endpoint == shared.Endpoint {
		t.Fatalf("both servers on %s", e.Endpoint)
	}
	if !strings.HasPrefix(e.Endpoint, "http://127.0.0.1:") {
		t.Fatalf("endpoint %s not on loopback", e.Endpoint)
	}
}

// One lease serves many writes of the same TTL, and it lives at least the TTL.
func TestLeaseReuse(t *testing.T) {
	ctx := t.Context()
	clk := clock.NewMock()
	clk.Set(time.Now())
	s := New(shared.Client, clk)
	defer s.Close()
	p := newPrefix()
	leaseOf := func(key string) clientv3.LeaseID {
		t.Helper()
		resp, err := shared.Client.Get(ctx, key)
		if err != nil || len(resp.Kvs) != 1 {
			t.Fatalf("Get(%q): %v %v", key, resp, err)
		}
		return clientv3.LeaseID(resp.Kvs[0].Lease)
	}
	const ttl = time.Hour
	var first clientv3.LeaseID
	for i := 0; i < 50; i++ {
		k := fmt.Sprintf("%s/k%d", p, i)
		if _, err := s.Create(ctx, k, nil, ttl); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			first = leaseOf(k)
			continue
		}
		if l := leaseOf(k); l != first {
			t.Fatalf("write %d got lease %x, want the shared %x", i, l, first)
		}
		clk.Add(time.Second) // 49 s in: still within the one-minute window
	}
	ttlResp, err := shared.Client.TimeToLive(ctx, first)
	if err != nil {
		t.Fatal(err)
	}
	if min := int64(ttl/time.Second) + 1; ttlResp.GrantedTTL < min || ttlResp.GrantedTTL > min+60 {
		t.Fatalf("lease granted for %d s, want between %d and %d", ttlResp.GrantedTTL, min, min+60)
	}
	// Past the window a new lease is granted.
	clk.Add(time.Minute)
	k := p + "/late"
	if _, err := s.Create(ctx, k, nil, ttl); err != nil {
		t.Fatal(err)
	}
	if leaseOf(k) == first {
		t.Fatal("lease reused past its window")
	}
	// Update without ttl keeps the lease; Update with another ttl takes another lease.
	kv, _ := s.Get(ctx, k)
	rev, err := s.Update(ctx, k, kv.ModRevision, []byte("x"), 0)
	if err != nil {
		t.Fatal(err)
	}
	if leaseOf(k) == 0 {
		t.Fatal("Update without ttl dropped the lease")
	}
	if _, err := s.Update(ctx, k, rev, []byte("y"), 2*time.Hour); err != nil {
		t.Fatal(err)
	}
	if l := leaseOf(k); l == first || l == 0 {
		t.Fatalf("Update with a new ttl kept lease %x", l)
	}
	// A lease revoked behind the manager's back is replaced.
	latest := leaseOf(k)
	if _, err := shared.Client.Revoke(ctx, latest); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Create(ctx, p+"/after-revoke", nil, 2*time.Hour); err != nil {
		t.Fatalf("Create after the lease was revoked: %v", err)
	}
}

func TestCompactor(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	clk := clock.NewMock()
	s := New(shared.Client, clock.New())
	defer s.Close()
	p := newPrefix()
	r1, err := s.Create(ctx, p+"/a", []byte("1"), 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Update(ctx, p+"/a", r1, []byte("2"), 0); err != nil {
		t.Fatal(err)
	}
	done := StartCompactor(ctx, shared.Client, clk, time.Minute)
	// The first round records a revision at or after r1's successor; the next compacts to it. The
	// compactor arms its timer in its own goroutine, so keep moving the clock until it has compacted.
	deadline := time.Now().Add(20 * time.Second)
	for {
		_, err := s.List(ctx, p+"/", storage.ListOptions{Revision: r1})
		if errors.Is(err, storage.ErrCompacted) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if time.Now().After(deadline) {
			t.Fatal("compactor did not compact")
		}
		clk.Add(time.Minute)
		time.Sleep(20 * time.Millisecond)
	}
	// The latest state is untouched.
	kv, err := s.Get(ctx, p+"/a")
	if err != nil || string(kv.Value) != "2" {
		t.Fatalf("after compaction: %q %v", kv.Value, err)
	}
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("compactor did not stop with its context")
	}
}

// A list of 10,000 objects of about 1 KiB comes back in one response.
func TestLargeList(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 10,000 objects")
	}
	ctx := t.Context()
	s := New(shared.Client, clock.New())
	defer s.Close()
	p := newPrefix()
	value := []byte(strings.Repeat("x", 1200))
	const n = 10000
	const batch = 100 // etcd's default max ops per txn is 128
	for i := 0; i < n; i += batch {
		var ops []clientv3.Op
		for j := i; j < i+batch; j++ {
			ops = append(ops, clientv3.OpPut(fmt.Sprintf("%s/%05d", p, j), string(value)))
		}
		if _, err := shared.Client.Txn(ctx).Then(ops...).Commit(); err != nil {
			t.Fatal(err)
		}
	}
	res, err := s.List(ctx, p+"/", storage.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Items) != n {
		t.Fatalf("%d items, want %d", len(res.Items), n)
	}
}

func benchmarkCreateParallel(b *testing.B, ttl time.Duration) {
	s := New(shared.Client, clock.New())
	defer s.Close()
	ctx := context.Background()
	p := newPrefix()
	value := []byte(strings.Repeat("x", 1800)) // an orchload event as stored, managedFields and all
	var n atomic.Int64
	b.SetParallelism(4) // 8 writers on 2 cores, orchload's default clients
	cpu := processCPU(b)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			k := fmt.Sprintf("%s/events/default/e-%d", p, n.Add(1))
			if _, err := s.Create(ctx, k, value, ttl); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.StopTimer()
	b.ReportMetric(float64((processCPU(b)-cpu).Microseconds())/1000/float64(b.N), "cpu-ms/op")
}

// processCPU is the process's user and system CPU so far: a create's cost to the embedded etcd,
// which runs in the test's process, whatever the wall time.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func BenchmarkCreateParallel(b *testing.B) { benchmarkCreateParallel(b, 0) }

// With a TTL: lease reuse keeps this close to the plain figure.
func BenchmarkCreateParallelTTL(b *testing.B) { benchmarkCreateParallel(b, time.Hour) }

// orch's embedded member, which never has followers, keeps few raft entries past a snapshot; the
// etcd Kubernetes' API server is measured on keeps etcd's default.
func TestEmbeddedCatchUpEntries(t *testing.T) {
	for _, tc := range []struct {
		name  string
		start func(context.Context, string) (*Embedded, error)
		want  uint64
	}{
		{"orch's embedded member", StartEmbedded, singleMemberCatchUpEntries},
		{"etcd's defaults", StartEmbeddedEtcdDefaults, 5000},
	} {
		e, err := tc.start(t.Context(), filepath.Join(t.TempDir(), "etcd"))
		if err != nil {
			t.Fatal(err)
		}
		got := e.etcd.Server.Cfg.SnapshotCatchUpEntries
		_ = e.Close()
		if got != tc.want {
			t.Errorf("%s: %d raft entries kept past a snapshot, want %d", tc.name, got, tc.want)
		}
	}
}
