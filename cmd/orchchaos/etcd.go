package main

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"

	"orch.io/orch/components/freeport"
	"orch.io/orch/components/syncbuf"
)

// memberFlags are the hidden flags with which orchchaos runs itself as one member of an etcd
// cluster: members are child processes, so that one can be killed with SIGKILL.
type memberFlags struct {
	name, dir, initialCluster, clientURL, peerURL string
}

// serveMember runs one etcd member until SIGTERM, printing "ready" once it serves.
func serveMember(f memberFlags) error {
	client, err := url.Parse(f.clientURL)
	if err != nil {
		return err
	}
	peer, err := url.Parse(f.peerURL)
	if err != nil {
		return err
	}
	cfg := embed.NewConfig()
	cfg.Name, cfg.Dir = f.name, f.dir
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{*client}, []url.URL{*client}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{*peer}, []url.URL{*peer}
	cfg.InitialCluster = f.initialCluster
	cfg.InitialClusterToken = "orchchaos"
	cfg.Logger = "zap"
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return err
	}
	defer e.Close()
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		return err
	case <-time.After(time.Minute):
		return errors.New("etcd member not ready within a minute")
	}
	fmt.Println("ready")
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	select {
	case <-sig:
		return nil
	case err := <-e.Err():
		return err
	}
}

// member is one etcd member run as a child process, on ports fixed for the whole run so that it
// restarts where its peers look for it.
type member struct {
	flags  memberFlags
	cmd    *exec.Cmd
	output *syncbuf.Buffer
	exited chan struct{}
}

// cluster is a 3-member etcd on loopback, each member a child process.
type cluster struct {
	members []*member
}

// startCluster starts n members under dir and waits until the cluster has a leader.
func startCluster(ctx context.Context, dir string, n int) (*cluster, error) {
	c := &cluster{}
	var initial []string
	for i := range n {
		cp, err := freeport.Get()
		if err != nil {
			return nil, err
		}
		pp, err := freeport.Get()
		if err != nil {
			return nil, err
		}
		f := memberFlags{name: fmt.Sprintf("m%d", i), dir: filepath.Join(dir, fmt.Sprintf("m%d", i)),
			clientURL: "http://127.0.0.1:" + strconv.Itoa(cp), peerURL: "http://127.0.0.1:" + strconv.Itoa(pp)}
		initial = append(initial, f.name+"="+f.peerURL)
		c.members = append(c.members, &member{flags: f})
	}
	for _, m := range c.members {
		m.flags.initialCluster = strings.Join(initial, ",")
	}
	for _, m := range c.members {
		if err := m.start(); err != nil {
			c.stop()
			return nil, err
		}
	}
	if _, err := c.leader(ctx, time.Minute); err != nil {
		c.stop()
		return nil, err
	}
	return c, nil
}

// start runs the member; it is serving once its peers answer, which the cluster's leader shows.
func (m *member) start() error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	f := m.flags
	m.output, m.exited = &syncbuf.Buffer{}, make(chan struct{})
	m.cmd = exec.Command(self, "--serve-etcd-member", f.name, "--etcd-member-dir", f.dir,
		"--etcd-initial-cluster", f.initialCluster, "--etcd-client-url", f.clientURL, "--etcd-peer-url", f.peerURL)
	m.cmd.Stdout, m.cmd.Stderr = m.output, m.output
	if err := m.cmd.Start(); err != nil {
		return err
	}
	go func() { _ = m.cmd.Wait(); close(m.exited) }()
	return nil
}

// kill sends SIGKILL and waits for the member to be gone.
func (m *member) kill() {
	if m.cmd == nil {
		return
	}
	select {
	case <-m.exited:
		return
	default:
	}
	_ = m.cmd.Process.Kill()
	<-m.exited
}

func (c *cluster) stop() {
	for _, m := range c.members {
		m.kill()
	}
}

// endpoints are the members' client URLs, what orch-apiserver's --etcd-servers names.
func (c *cluster) endpoints() string {
	var urls []string
	for _, m := range c.members {
		urls = append(urls, m.flags.clientURL)
	}
	return strings.Join(urls, ",")
}

// leader is the index of the member the cluster's members name as their leader, within timeout.
func (c *cluster) leader(ctx context.Context, timeout time.Duration) (int, error) {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		ids, leader := map[uint64]int{}, uint64(0)
		for i, m := range c.members {
			if id, l, err := status(ctx, m.flags.clientURL); err == nil {
				ids[id] = i
				if l != 0 {
					leader = l
				}
			}
		}
		if i, ok := ids[leader]; ok {
			return i, nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	var out []string
	for _, m := range c.members {
		out = append(out, m.flags.name+": "+m.output.String())
	}
	return -1, fmt.Errorf("the etcd cluster has no leader within %v:\n%s", timeout, strings.Join(out, "\n"))
}

// status asks one member its own ID and its leader's.
func status(ctx context.Context, endpoint string) (id, leader uint64, err error) {
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{endpoint}, DialTimeout: time.Second, Logger: zap.NewNop()})
	if err != nil {
		return 0, 0, err
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	s, err := cli.Status(ctx, endpoint)
	if err != nil {
		return 0, 0, err
	}
	return s.Header.MemberId, s.Leader, nil
}

// compact moves etcd's revision past every resourceVersion the API has handed out, by a write
// outside orch's keys, and compacts to it, as the server's compactor does to what is older than
// its interval: a watch resumed from any earlier resourceVersion must be refused with 410 Gone.
func (c *cluster) compact(ctx context.Context) (int64, error) {
	var urls []string
	for _, m := range c.members {
		urls = append(urls, m.flags.clientURL)
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: urls, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return 0, err
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var rev int64
	for range 2 {
		put, err := cli.Put(ctx, "/orchchaos/revision", time.Now().String())
		if err != nil {
			return 0, fmt.Errorf("etcd put: %w", err)
		}
		rev = put.Header.Revision
	}
	if _, err := cli.Compact(ctx, rev, clientv3.WithCompactPhysical()); err != nil {
		return 0, fmt.Errorf("etcd compact to %d: %w", rev, err)
	}
	return rev, nil
}
