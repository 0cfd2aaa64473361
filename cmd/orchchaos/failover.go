package main

import (
	"context"
	"fmt"
	"io"
	"math/rand"
	"path/filepath"
	"syscall"
	"time"
)

// runFailover is the etcd failover campaign: two orch-apiserver replicas on a 3-member etcd
// cluster, clients writing through both (each retrying its next write against the other replica
// when one goes unanswered), and a watcher on each replica. Each round faults the cluster under
// the writes, in turn: the leader killed with SIGKILL, then a follower stopped with SIGTERM (taken
// out of the cluster mid-write); the member is started again after the round, and the stored
// events and both watchers are judged by the same core as the kills of the server.
func runFailover(ctx context.Context, o options, out io.Writer) (Verdict, error) {
	rng := rand.New(rand.NewSource(o.seed))
	etcd, err := startCluster(ctx, filepath.Join(o.dataDir, "etcd"), 3)
	if err != nil {
		return Verdict{}, err
	}
	defer etcd.stop()
	var replicas []*server
	var watchers []*watcher
	for _, name := range []string{"a", "b"} {
		srv, err := startServer(ctx, o.apiserver, filepath.Join(o.dataDir, name), "--etcd-servers", etcd.endpoints())
		if err != nil {
			return Verdict{}, fmt.Errorf("replica %s: %w", name, err)
		}
		defer srv.kill()
		w := newWatcher(srv)
		if err := w.start(ctx); err != nil {
			return Verdict{}, err
		}
		defer w.stop()
		replicas, watchers = append(replicas, srv), append(watchers, w)
	}
	h := &history{}
	var total Verdict
	start := time.Now()
	fmt.Fprintf(out, "orch-apiserver replicas on %s and %s over a 3-member etcd (%s), %d clients, seed %d\n",
		replicas[0].url, replicas[1].url, etcd.endpoints(), o.clients, o.seed)
	for k := 1; k <= o.kills; k++ {
		up := time.Duration(rng.Int63n(int64(o.maxUp))) + 200*time.Millisecond
		stopClients := startClients(replicas, h, o.clients, rng.Int63(), k)
		time.Sleep(up)
		leader, err := etcd.leader(ctx, 30*time.Second)
		if err != nil {
			stopClients()
			return total, fmt.Errorf("round %d: %w", k, err)
		}
		victim, fault := leader, "the leader killed (SIGKILL)"
		if k%2 == 0 {
			victim, fault = (leader+1+rng.Intn(2))%3, "a follower stopped (SIGTERM)"
		}
		m := etcd.members[victim]
		if k%2 == 0 {
			m.stop()
		} else {
			m.kill()
		}
		// The writes go on without the member for a while: clients time out or are answered 5xx
		// by one replica and retry against the other.
		time.Sleep(2 * time.Second)
		stopClients()
		if err := m.start(); err != nil {
			return total, fmt.Errorf("round %d: restarting %s: %w", k, m.flags.name, err)
		}
		if _, err := etcd.leader(ctx, time.Minute); err != nil {
			return total, fmt.Errorf("round %d: %w", k, err)
		}
		marker := fmt.Sprintf("marker-%d", k)
		mk, err := h.write(replicas[k%2].client, replicas[k%2].url, "verifier", Op{Name: marker, Verb: Create, Value: marker})
		if err != nil {
			return total, fmt.Errorf("round %d: %w", k, err)
		}
		for i, w := range watchers {
			if err := w.waitFor(mk.RV, 30*time.Second); err != nil {
				return total, fmt.Errorf("round %d: replica %d's watcher: %w", k, i, err)
			}
		}
		found, err := listAll(replicas[(k+1)%2])
		if err != nil {
			return total, fmt.Errorf("round %d: %w", k, err)
		}
		ops := h.ops()
		state := JudgeState(ops, found)
		v := state
		for _, w := range watchers {
			v = v.Add(JudgeWatch(ops, w.log()))
		}
		v.Acked = state.Acked
		fmt.Fprintf(out, "round %d, %s after %v under writes: %s; %d writes acknowledged so far (%d unknown, %d found applied), lost %d, half there %d, watch missed %d, duplicated %d, relists %d and %d\n",
			k, m.flags.name, up.Round(time.Millisecond), fault, state.Acked, countUnknown(ops), state.UnknownApplied, v.Lost, v.Half, v.Missed, v.Duplicated, watchers[0].relists(), watchers[1].relists())
		for _, p := range v.Problems {
			fmt.Fprintln(out, "  ", p)
		}
		total = v
	}
	fmt.Fprintf(out, "total: %d etcd faults in %v, %d writes acknowledged, %d unknown (%d found applied at the end), lost %d, half there %d, watch missed %d, duplicated %d, phantom %d, relists %d and %d: %s\n",
		o.kills, time.Since(start).Round(time.Second), total.Acked, countUnknown(h.ops()), total.UnknownApplied, total.Lost, total.Half, total.Missed, total.Duplicated, total.Phantom, watchers[0].relists(), watchers[1].relists(), verdictWord(total))
	return total, nil
}

// stop sends SIGTERM and waits for the member to be gone: it leaves the cluster mid-write.
func (m *member) stop() {
	select {
	case <-m.exited:
		return
	default:
	}
	_ = m.cmd.Process.Signal(syscall.SIGTERM)
	<-m.exited
}
