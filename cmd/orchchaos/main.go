// Command orchchaos kills orch-apiserver with SIGKILL while clients write, and judges what
// survives. It runs the server on its embedded etcd as a child process on loopback, with 8 clients
// creating, updating and deleting Events, kills it at seeded random moments, restarts it on the
// same data directory, and after each restart checks that every acknowledged write is there with
// its value, that no unacknowledged write is half there, and that a watcher resuming from its last
// resourceVersion saw every change exactly once, in order (or a relist after 410 Gone).
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
	"time"

	"github.com/spf13/pflag"
)

func main() {
	var o options
	pflag.StringVar(&o.apiserver, "apiserver", "bin/orch-apiserver", "the orch-apiserver binary to run")
	pflag.IntVar(&o.kills, "kills", 20, "how many times to kill the server")
	pflag.Int64Var(&o.seed, "seed", 1, "seed of the kill moments and of the clients' writes")
	pflag.IntVar(&o.clients, "clients", 8, "writing clients")
	pflag.DurationVar(&o.maxUp, "max-up", 4*time.Second, "the longest the server runs under writes before a kill (each kill waits a random time up to this)")
	pflag.StringVar(&o.dataDir, "data-dir", "", "the server's data directory, or with --agent orchlet's (default: a new temporary directory, removed at the end)")
	agent := pflag.Bool("agent", false, "kill orchlet instead: standalone with --pods static pods on the runtime at --container-runtime-endpoint, killed while they start and while they are deleted")
	var a agentOptions
	pflag.StringVar(&a.orchlet, "orchlet", "bin/orchlet", "with --agent: the orchlet binary to run")
	pflag.StringVar(&a.endpoint, "container-runtime-endpoint", "", "with --agent: the CRI runtime's socket (unix://...), where --image is present")
	pflag.StringVar(&a.image, "image", "", "with --agent: the pods' image, with sleep in it; pulled by nobody: it must be on the runtime")
	pflag.IntVar(&a.pods, "pods", 100, "with --agent: how many static pods")
	pflag.DurationVar(&a.converge, "converge-within", 3*time.Minute, "with --agent: how long after each restart the runtime may take to run exactly the pods that should run")
	pflag.Parse()
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
	total, err := run(context.Background(), o, os.Stdout)
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

type options struct {
	apiserver, dataDir string
	kills, clients     int
	seed               int64
	maxUp              time.Duration
}

// run does the kills and prints a line for each, and the total.
func run(ctx context.Context, o options, out io.Writer) (Verdict, error) {
	rng := rand.New(rand.NewSource(o.seed))
	srv, err := startServer(ctx, o.apiserver, o.dataDir)
	if err != nil {
		return Verdict{}, err
	}
	defer srv.kill()
	w := newWatcher(srv)
	if err := w.start(ctx); err != nil {
		return Verdict{}, err
	}
	defer w.stop()
	h := &history{}
	var total Verdict
	start := time.Now()
	fmt.Fprintf(out, "orch-apiserver on %s, data directory %s, %d clients, seed %d\n", srv.url, o.dataDir, o.clients, o.seed)
	for k := 1; k <= o.kills; k++ {
		up := time.Duration(rng.Int63n(int64(o.maxUp))) + 200*time.Millisecond
		stopClients := startClients(srv, h, o.clients, rng.Int63(), k)
		time.Sleep(up)
		srv.kill()
		stopClients()
		if srv, err = startServer(ctx, o.apiserver, o.dataDir); err != nil {
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
		found, err := listAll(srv)
		if err != nil {
			return total, fmt.Errorf("after kill %d: %w", k, err)
		}
		ops := h.ops()
		state := JudgeState(ops, found)
		watch := JudgeWatch(ops, w.log())
		v := state.Add(watch)
		v.Acked = state.Acked
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
