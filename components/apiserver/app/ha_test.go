package app_test

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"

	"orch.io/orch/components/apiserver/app"
	"orch.io/orch/components/certs/certstest"
)

// member is one etcd of a three-member cluster on loopback: clients over TLS with client
// certificates required, peers over plain HTTP.
type member struct {
	cfg  *embed.Config
	etcd *embed.Etcd
}

func (m *member) start(t *testing.T) {
	t.Helper()
	e, err := embed.StartEtcd(m.cfg)
	if err != nil {
		t.Fatalf("starting etcd %s: %v", m.cfg.Name, err)
	}
	m.etcd = e
}

func (m *member) stop() {
	if m.etcd != nil {
		m.etcd.Close()
		m.etcd = nil
	}
}

func (m *member) clientURL() string { return m.cfg.ListenClientUrls[0].String() }

func loopbackPorts(t *testing.T, n int) []int {
	t.Helper()
	var ports []int
	var listeners []net.Listener
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		listeners = append(listeners, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	for _, l := range listeners {
		_ = l.Close()
	}
	return ports
}

// startCluster starts three etcd members and waits until they have a leader.
func startCluster(t *testing.T, ca *certstest.CA, dir string) []*member {
	t.Helper()
	caFile := filepath.Join(dir, "ca.crt")
	certstest.WriteFile(t, caFile, ca.PEM)
	certFile, keyFile := ca.Server(t, "etcd").WriteFiles(t, dir, "etcd")
	ports := loopbackPorts(t, 6)
	var initial []string
	for i := range 3 {
		initial = append(initial, fmt.Sprintf("m%d=http://127.0.0.1:%d", i, ports[3+i]))
	}
	members := make([]*member, 3)
	for i := range members {
		cfg := embed.NewConfig()
		cfg.Name = fmt.Sprintf("m%d", i)
		cfg.Dir = filepath.Join(dir, cfg.Name)
		client := url.URL{Scheme: "https", Host: fmt.Sprintf("127.0.0.1:%d", ports[i])}
		peer := url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", ports[3+i])}
		cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{client}, []url.URL{client}
		cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{peer}, []url.URL{peer}
		cfg.InitialCluster = strings.Join(initial, ",")
		cfg.InitialClusterToken = "orch-ha-test"
		cfg.ClientTLSInfo = transport.TLSInfo{CertFile: certFile, KeyFile: keyFile, TrustedCAFile: caFile, ClientCertAuth: true}
		cfg.Logger = "zap"
		cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
		members[i] = &member{cfg: cfg}
	}
	for _, m := range members {
		m.start(t)
		t.Cleanup(m.stop)
	}
	for _, m := range members {
		select {
		case <-m.etcd.Server.ReadyNotify():
		case <-time.After(30 * time.Second):
			t.Fatalf("etcd %s not ready", m.cfg.Name)
		}
	}
	return members
}

func leaderOf(members []*member) *member {
	for _, m := range members {
		if m.etcd != nil && m.etcd.Server.Leader() == m.etcd.Server.MemberID() {
			return m
		}
	}
	return nil
}

// seen is what one watcher received, in order.
type seen struct {
	mu     sync.Mutex
	events []string // name@resourceVersion
	last   string
}

func (s *seen) snapshot() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.events...)
}

// watchAll follows events in ns through one replica from resourceVersion from, resuming from the
// last resourceVersion seen whenever the stream ends, as a client does.
func watchAll(ctx context.Context, client dynamic.Interface, ns, from string) *seen {
	s := &seen{last: from}
	go func() {
		for ctx.Err() == nil {
			w, err := client.Resource(eventsGVR).Namespace(ns).Watch(ctx, metav1.ListOptions{ResourceVersion: s.last, AllowWatchBookmarks: true})
			if err != nil {
				time.Sleep(100 * time.Millisecond)
				continue
			}
			for ev := range w.ResultChan() {
				obj, ok := ev.Object.(interface {
					GetName() string
					GetResourceVersion() string
				})
				if !ok {
					continue
				}
				s.mu.Lock()
				if ev.Type == watch.Added {
					s.events = append(s.events, obj.GetName()+"@"+obj.GetResourceVersion())
				}
				if obj.GetResourceVersion() != "" {
					s.last = obj.GetResourceVersion()
				}
				s.mu.Unlock()
			}
		}
	}()
	return s
}

// Two orch-apiserver replicas on a three-member etcd cluster (TLS with client certificates) take
// creates while a member dies and comes back and then the leader dies. Every create answered 201 is
// readable afterwards through both replicas at the resourceVersion it was acknowledged with, and a
// watcher on each replica sees the same events in the same order.
func TestHAOnAThreeMemberEtcdCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three etcd members and two API servers")
	}
	dir := t.TempDir()
	ca := certstest.NewCA(t, "etcd-ca")
	members := startCluster(t, ca, dir)
	clientCert, clientKey := ca.Client(t, "orch-apiserver").WriteFiles(t, dir, "apiserver-etcd-client")
	var endpoints []string
	for _, m := range members {
		endpoints = append(endpoints, m.clientURL())
	}
	tune := func(o *app.Options) {
		o.EtcdServers = endpoints
		o.EtcdCAFile = filepath.Join(dir, "ca.crt")
		o.EtcdCertFile, o.EtcdKeyFile = clientCert, clientKey
	}
	replicas := []*testServer{startServer(t, tune), startServer(t, tune)}
	clients := make([]dynamic.Interface, len(replicas))
	for i, r := range replicas {
		c, err := dynamic.NewForConfig(r.restConfig())
		if err != nil {
			t.Fatal(err)
		}
		clients[i] = c
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const ns = "ha"
	list, err := clients[0].Resource(eventsGVR).Namespace(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	watchers := []*seen{watchAll(ctx, clients[0], ns, list.GetResourceVersion()), watchAll(ctx, clients[1], ns, list.GetResourceVersion())}

	var mu sync.Mutex
	acked := map[string]string{} // name -> resourceVersion answered with 201
	failed := 0
	load, stopLoad := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; load.Err() == nil; i++ {
				name := fmt.Sprintf("ha-%d-%04d", w, i)
				reqCtx, done := context.WithTimeout(ctx, 10*time.Second)
				out, err := clients[(w+i)%2].Resource(eventsGVR).Namespace(ns).Create(reqCtx, newEvent(ns, name, nil), metav1.CreateOptions{})
				done()
				mu.Lock()
				if err != nil {
					failed++
				} else {
					acked[name] = out.GetResourceVersion()
				}
				mu.Unlock()
			}
		}()
	}
	ackedNow := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(acked)
	}
	time.Sleep(time.Second)
	follower := members[0]
	if leaderOf(members) == follower {
		follower = members[1]
	}
	follower.stop()
	before := ackedNow()
	time.Sleep(1500 * time.Millisecond)
	if ackedNow() == before {
		t.Errorf("no create was acknowledged while a follower was down")
	}
	follower.start(t)
	<-follower.etcd.Server.ReadyNotify()
	time.Sleep(time.Second)
	leader := leaderOf(members)
	if leader == nil {
		t.Fatal("no leader")
	}
	leader.stop()
	before = ackedNow()
	deadline := time.Now().Add(20 * time.Second)
	for ackedNow() < before+20 && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	if ackedNow() < before+20 {
		t.Errorf("creates did not resume after the leader died: %d acknowledged since", ackedNow()-before)
	}
	stopLoad()
	wg.Wait()
	t.Logf("%d creates acknowledged, %d failed while members died", len(acked), failed)

	total := 0
	for i, c := range clients {
		list, err := c.Resource(eventsGVR).Namespace(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		stored := map[string]string{}
		for _, item := range list.Items {
			stored[item.GetName()] = item.GetResourceVersion()
		}
		for name, want := range acked {
			if got, ok := stored[name]; !ok || got != want {
				t.Fatalf("acknowledged %s at resourceVersion %s; through replica %d: %q (found %v)", name, want, i, got, ok)
			}
		}
		total = len(list.Items)
	}
	deadline = time.Now().Add(30 * time.Second)
	for len(watchers[0].snapshot()) < total || len(watchers[1].snapshot()) < total {
		if time.Now().After(deadline) {
			t.Fatalf("watchers saw %d and %d events, the store holds %d", len(watchers[0].snapshot()), len(watchers[1].snapshot()), total)
		}
		time.Sleep(100 * time.Millisecond)
	}
	a, b := watchers[0].snapshot(), watchers[1].snapshot()
	if strings.Join(a, ",") != strings.Join(b, ",") {
		t.Fatalf("the replicas' watchers disagree:\n%v\n%v", a, b)
	}
	inWatch := map[string]bool{}
	for _, e := range a {
		inWatch[e] = true
	}
	for name, rv := range acked {
		if !inWatch[name+"@"+rv] {
			t.Fatalf("acknowledged %s@%s never reached the watchers", name, rv)
		}
	}
}
