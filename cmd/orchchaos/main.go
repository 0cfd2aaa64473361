// Command orchchaos kills orch-apiserver with SIGKILL while clients write, and judges what
// survives. It runs the server as a child process on loopback, on its embedded etcd or on a
// 3-member etcd cluster whose members are child processes too (--etcd-members), with 8 clients
// creating, updating and deleting Events, kills it at seeded random moments, restarts it on the
// same data directory, and after each restart checks that every acknowledged write is there with
// its value, that no unacknowledged write is half there, and that a watcher resuming from its last
// resourceVersion saw every change exactly once, in order (or a relist after 410 Gone).
//
// With --agent it kills orchlet instead, on a real CRI runtime, standalone or in API-server mode
// (--api-mode), and judges the runtime's sandboxes and containers (and the API's pod statuses).
//
// It prints one line per kill and a total, and exits 1 when anything was lost, duplicated or half
// there, 2 when it could not run.
package main

import (
	"context"
	"fmt"
	"io"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"orch.io/orch/cmd/internal/kubepeer"
	"orch.io/orch/cmd/orchchaos/internal/exhaust"
)

func main() {
	var o options
	pflag.StringVar(&o.apiserver, "apiserver", "bin/orch-apiserver", "the orch-apiserver binary to run")
	pflag.IntVar(&o.kills, "kills", 20, "how many times to kill the server")
	pflag.Int64Var(&o.seed, "seed", 1, "seed of the kill moments and of the clients' writes")
	pflag.IntVar(&o.clients, "clients", 8, "writing clients")
	pflag.DurationVar(&o.maxUp, "max-up", 4*time.Second, "the longest the server runs under writes before a kill (each kill waits a random time up to this)")
	pflag.StringVar(&o.dataDir, "data-dir", "", "the server's data directory, or with --agent orchlet's (and the server's, under apiserver/, with --api-mode) (default: a new temporary directory, removed at the end)")
	pflag.IntVar(&o.etcdMembers, "etcd-members", 0, "run the server on an etcd cluster of this many members (3), each a child process on loopback, instead of its embedded etcd (0)")
	pflag.BoolVar(&o.compact, "compact", false, "with --etcd-members: after each kill, compact etcd past every resourceVersion handed out, so that the watcher's resume is refused with 410 Gone and it must relist")
	pflag.IntVar(&o.replicas, "replicas", 1, "orch-apiserver replicas: 2 runs the etcd failover campaign instead of kills of the server (with --etcd-members 3): --kills rounds, each killing the etcd leader or stopping a follower under the writes")
	pflag.DurationVar(&o.exhaust, "exhaust", 0, "run the resource exhaustion campaign for this long instead of kills: idle connections, slow bodies, unread answers, oversized headers and bodies and a watch storm, /readyz probed every 20 ms and a well-behaved client writing")
	pflag.IntVar(&o.idle, "idle", 10000, "with --exhaust: idle connections held open")
	pflag.BoolVar(&o.attackersShareCPU, "attackers-share-cpu", false, "with --exhaust as root: keep the attackers at the server's CPU weight, all in one cgroup (by default the attackers, orchchaos itself, run at a process's CPU weight and the server and the bystanders at 16 times that, as if the attackers were other machines)")
	attackers := pflag.String("attackers", "all", "with --exhaust: the attackers to run, all or names joined by commas ("+strings.Join(exhaust.AttackerNames, ", ")+"), or names each prefixed by - to run all but those (--attackers=-watch-storm); the idle connections are --idle's")
	pflag.BoolVar(&o.memoryAfter, "memory-after", true, "with --exhaust: after the window, wait 30 s and 2 minutes more to report the memory the server keeps; false ends at the window's end, for runs that look at the window only")
	pflag.StringVar(&o.profiles, "profiles", "", "with --exhaust: write the server's profiles into this directory: heap-<point>.pb.gz at each point its memory is reported (before, idle, window, end, after, after-gc, later) cpu-window.pb.gz, 10 s of CPU from 5 s into the window, and trace-start.out and trace-orchchaos-start.out, the server's and orchchaos' own runtime traces over the window's first 3 s (go tool trace); the heap figures are printed in any case")
	var mf memberFlags
	pflag.StringVar(&mf.name, "serve-etcd-member", "", "run as this member of an etcd cluster until SIGTERM (how --etcd-members starts each)")
	pflag.StringVar(&mf.dir, "etcd-member-dir", "", "the member's data directory")
	pflag.StringVar(&mf.initialCluster, "etcd-initial-cluster", "", "the members' names and peer URLs")
	pflag.StringVar(&mf.clientURL, "etcd-client-url", "", "the member's client URL")
	pflag.StringVar(&mf.peerURL, "etcd-peer-url", "", "the member's peer URL")
	for _, hidden := range []string{"serve-etcd-member", "etcd-member-dir", "etcd-initial-cluster", "etcd-client-url", "etcd-peer-url"} {
		_ = pflag.CommandLine.MarkHidden(hidden)
	}
	agent := pflag.Bool("agent", false, "kill orchlet instead: standalone with --pods static pods (or in API-server mode with --api-mode) on the runtime at --container-runtime-endpoint, killed while they start and while they are deleted")
	var a agentOptions
	pflag.StringVar(&a.orchlet, "orchlet", "bin/orchlet", "with --agent: the orchlet binary to run")
	pflag.StringVar(&a.endpoint, "container-runtime-endpoint", "", "with --agent: the CRI runtime's socket (unix://...), where --image is present")
	pflag.StringVar(&a.image, "image", "", "with --agent: the pods' image, with sleep in it; pulled by nobody: it must be on the runtime")
	pflag.IntVar(&a.pods, "pods", 100, "with --agent: how many pods")
	pflag.DurationVar(&a.converge, "converge-within", 3*time.Minute, "with --agent: how long after each restart the runtime may take to run exactly the pods that should run")
	pflag.BoolVar(&a.api, "api-mode", false, "with --agent: run orchlet in API-server mode on orch-apiserver (--apiserver, its embedded etcd), the pods created bound to its node and deleted through the API, and judge their statuses there too")
	var bystandersURL, bystandersCA, bystandersGroup string
	pflag.StringVar(&bystandersURL, "bystanders", "", "from a start line on stdin until it ends, ask this server's /readyz every 20 ms and create and read events as a well-behaved client, one line per answer (how --exhaust runs them, in a process apart from the attackers)")
	pflag.StringVar(&bystandersCA, "bystanders-ca", "", "with --bystanders: the server's certificate, trusted")
	pflag.StringVar(&bystandersGroup, "bystanders-group", "", "with --bystanders: the group serving Events (default orch's)")
	pflag.StringVar(&o.peer, "peer", "", "with --exhaust: attack Kubernetes' kube-apiserver, this binary (make peers builds it in ~/.cache/orch-peers), on an etcd of its own instead of orch-apiserver: the same requests on events.k8s.io, the same bystanders, kube-apiserver and its etcd at the server's CPU weight")
	serveEtcd := pflag.String("serve-etcd", "", "run an embedded etcd under this directory until SIGTERM, printing its client URL (what --peer runs kube-apiserver on)")
	for _, hidden := range []string{"bystanders", "bystanders-ca", "bystanders-group", "serve-etcd"} {
		_ = pflag.CommandLine.MarkHidden(hidden)
	}
	pflag.Parse()
	if *serveEtcd != "" {
		if err := kubepeer.ServeEtcd(*serveEtcd); err != nil {
			fmt.Fprintln(os.Stderr, "orchchaos: etcd:", err)
			os.Exit(2)
		}
		return
	}
	if bystandersURL != "" {
		if err := exhaust.RunBystanders(bystandersURL, bystandersCA, bystandersGroup, os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "orchchaos: bystanders:", err)
			os.Exit(2)
		}
		return
	}
	if mf.name != "" {
		if err := serveMember(mf); err != nil {
			fmt.Fprintln(os.Stderr, "orchchaos: etcd member:", err)
			os.Exit(2)
		}
		return
	}
	if o.etcdMembers != 0 && o.etcdMembers != 3 {
		fmt.Fprintln(os.Stderr, "orchchaos: --etcd-members is 0 (the embedded etcd) or 3")
		os.Exit(2)
	}
	if o.replicas != 1 && (o.replicas != 2 || o.etcdMembers != 3 || o.compact) {
		fmt.Fprintln(os.Stderr, "orchchaos: --replicas is 1, or 2 with --etcd-members 3 and without --compact")
		os.Exit(2)
	}
	if o.compact && o.etcdMembers == 0 {
		fmt.Fprintln(os.Stderr, "orchchaos: --compact needs --etcd-members: the embedded etcd dies with the server")
		os.Exit(2)
	}
	if o.attackersShareCPU && o.exhaust <= 0 {
		fmt.Fprintln(os.Stderr, "orchchaos: --attackers-share-cpu needs --exhaust: only the exhaustion campaign weights its processes' CPU")
		os.Exit(2)
	}
	var err error
	if o.attackers, err = exhaust.ParseAttackers(*attackers); err != nil {
		fmt.Fprintln(os.Stderr, "orchchaos:", err)
		os.Exit(2)
	}
	if err := checkExhaustFlags(o, pflag.CommandLine.Changed); err != nil {
		fmt.Fprintln(os.Stderr, "orchchaos:", err)
		os.Exit(2)
	}
	if o.kills < 1 || o.clients < 1 || o.maxUp <= 0 {
		fmt.Fprintln(os.Stderr, "orchchaos: --kills, --clients and --max-up must be positive")
		os.Exit(2)
	}
	temporary := o.dataDir == ""
	if temporary {
		dir, err := os.MkdirTemp("", "orchchaos-")
		if err != nil {
			fmt.Fprintln(os.Stderr, "orchchaos:", err)
			os.Exit(2)
		}
		defer os.RemoveAll(dir)
		o.dataDir = dir
	}
	if *agent {
		mainAgent(o, a, temporary)
		return
	}
	campaign := run
	if o.replicas == 2 {
		campaign = runFailover
	}
	if o.exhaust > 0 {
		campaign = runExhaust
	}
	total, err := campaign(context.Background(), o, os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "orchchaos:", err)
		os.RemoveAll(o.dataDir)
		os.Exit(2)
	}
	if !total.OK() {
		os.RemoveAll(o.dataDir)
		os.Exit(1)
	}
}

// checkExhaustFlags refuses the exhaustion campaign's flags without --exhaust, and a --peer that is
// no file, by name; changed says whether a flag was given.
func checkExhaustFlags(o options, changed func(string) bool) error {
	if o.exhaust <= 0 {
		for _, name := range []string{"attackers", "memory-after", "peer"} {
			if changed(name) {
				return fmt.Errorf("--%s needs --exhaust: it picks what the exhaustion campaign runs, or on what", name)
			}
		}
		return nil
	}
	if o.peer != "" {
		if info, err := os.Stat(o.peer); err != nil {
			return fmt.Errorf("--peer: %w (make peers builds kube-apiserver)", err)
		} else if info.IsDir() {
			return fmt.Errorf("--peer %s: a directory, not kube-apiserver's binary", o.peer)
		}
	}
	return nil
}

type options struct {
	apiserver, dataDir string
	peer               string // with --exhaust, kube-apiserver's binary: attacked instead of orch-apiserver
	kills, clients     int
	etcdMembers        int
	compact            bool
	replicas           int
	exhaust            time.Duration
	idle               int
	profiles           string
	attackersShareCPU  bool
	attackers          exhaust.Attackers
	memoryAfter        bool
	seed               int64
	maxUp              time.Duration
}

// run does the kills and prints a line for each, and the total.
func run(ctx context.Context, o options, out io.Writer) (Verdict, error) {
	rng := rand.New(rand.NewSource(o.seed))
	var args []string
	storage := "its embedded etcd"
	var etcd *cluster
	if o.etcdMembers > 0 {
		var err error
		if etcd, err = startCluster(ctx, filepath.Join(o.dataDir, "etcd"), o.etcdMembers); err != nil {
			return Verdict{}, err
		}
		defer etcd.stop()
		args = []string{"--etcd-servers", etcd.endpoints()}
		storage = fmt.Sprintf("a %d-member etcd (%s)", o.etcdMembers, etcd.endpoints())
	}
	srv, err := startServer(ctx, o.apiserver, o.dataDir, args...)
	if err != nil {
		return Verdict{}, err
	}
	// The server at the end, not the first: each kill starts another.
	defer func() { srv.kill() }()
	w := newWatcher(srv)
	if err := w.start(ctx); err != nil {
		return Verdict{}, err
	}
	defer w.stop()
	h := &history{}
	var total Verdict
	var noRelist []string // compactions the watcher resumed past without a relist
	start := time.Now()
	fmt.Fprintf(out, "orch-apiserver on %s over %s, data directory %s, %d clients, seed %d\n", srv.url, storage, o.dataDir, o.clients, o.seed)
	for k := 1; k <= o.kills; k++ {
		up := time.Duration(rng.Int63n(int64(o.maxUp))) + 200*time.Millisecond
		stopClients := startClients([]*server{srv}, h, o.clients, rng.Int63(), k)
		time.Sleep(up)
		srv.kill()
		stopClients()
		relists := w.relists()
		if o.compact {
			if _, err := etcd.compact(ctx); err != nil {
				return total, fmt.Errorf("after kill %d: %w", k, err)
			}
		}
		if srv, err = startServer(ctx, o.apiserver, o.dataDir, args...); err != nil {
			return total, fmt.Errorf("restart after kill %d: %w", k, err)
		}
		w.point(srv)
		marker := fmt.Sprintf("marker-%d", k)
		// The verifier's marker is judged like any write; the watcher has caught up once it reaches it.
		m, err := h.write(srv.client, srv.url, "verifier", Op{Name: marker, Verb: Create, Value: marker})
		if err != nil {
			return total, fmt.Errorf("after kill %d: %w", k, err)
		}
		if err := w.waitFor(m.RV, 30*time.Second); err != nil {
			return total, fmt.Errorf("after kill %d: %w", k, err)
		}
		if o.compact && w.relists() == relists {
			noRelist = append(noRelist, fmt.Sprintf("watch: resumed after kill %d past a compaction without 410 Gone and a relist", k))
		}
		found, err := listAll(srv)
		if err != nil {
			return total, fmt.Errorf("after kill %d: %w", k, err)
		}
		ops := h.ops()
		state := JudgeState(ops, found)
		watch := JudgeWatch(ops, w.log())
		v := state.Add(watch)
		v.Acked = state.Acked
		v.Missed += len(noRelist)
		v.Problems = append(v.Problems, noRelist...)
		fmt.Fprintf(out, "kill %d after %v: %d writes acknowledged so far (%d unknown, %d found applied), lost %d, half there %d, watch missed %d, duplicated %d, relists %d\n",
			k, up.Round(time.Millisecond), state.Acked, countUnknown(ops), state.UnknownApplied, v.Lost, v.Half, v.Missed, v.Duplicated, w.relists())
		for _, p := range v.Problems {
			fmt.Fprintln(out, "  ", p)
		}
		total = v
	}
	fmt.Fprintf(out, "total: %d kills in %v, %d writes acknowledged, %d unknown (%d found applied at the end), lost %d, half there %d, watch missed %d, duplicated %d, phantom %d, relists %d: %s\n",
		o.kills, time.Since(start).Round(time.Second), total.Acked, countUnknown(h.ops()), total.UnknownApplied, total.Lost, total.Half, total.Missed, total.Duplicated, total.Phantom, w.relists(), verdictWord(total))
	return total, nil
}

func countUnknown(ops []Op) int {
	n := 0
	for _, op := range ops {
		if op.Outcome == Unknown {
			n++
		}
	}
	return n
}

func verdictWord(v Verdict) string {
	if v.OK() {
		return "PASS"
	}
	return "FAIL"
}
