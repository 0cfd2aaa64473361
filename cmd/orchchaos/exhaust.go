package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"

	"orch.io/orch/cmd/orchchaos/internal/exhaust"
)

// runExhaust runs the exhaustion campaign on orch-apiserver, or with --peer on kube-apiserver on an
// etcd of its own.
func runExhaust(ctx context.Context, o options, out io.Writer) (Verdict, error) {
	start := func(ctx context.Context) (*exhaust.Target, error) {
		var srv *server
		var err error
		if o.peer != "" {
			srv, err = startPeer(ctx, o.peer, filepath.Join(o.dataDir, "kube-apiserver"))
		} else {
			srv, err = startServer(ctx, o.apiserver, o.dataDir)
		}
		if err != nil {
			return nil, err
		}
		t := &exhaust.Target{Name: srv.name(), URL: srv.url, Client: srv.client, CAFile: srv.caFile, Group: srv.group, PID: srv.cmd.Process.Pid, Stop: srv.kill}
		if srv.peer != nil {
			t.EtcdPID = srv.peer.Etcd.Cmd.Process.Pid
		}
		return t, nil
	}
	problems, err := exhaust.Run(ctx, exhaust.Options{
		Duration:          o.exhaust,
		Idle:              o.idle,
		Profiles:          o.profiles,
		AttackersShareCPU: o.attackersShareCPU,
		Attackers:         o.attackers,
		MemoryAfter:       o.memoryAfter,
		Peer:              o.peer != "",
	}, start, out)
	if err != nil {
		return Verdict{}, err
	}
	v := Verdict{Problems: problems}
	for _, p := range v.Problems {
		fmt.Fprintln(out, "  ", p)
	}
	fmt.Fprintln(out, "total:", verdictWord(v))
	return v, nil
}
