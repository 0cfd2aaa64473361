// Command orchload measures orch-apiserver: create throughput and latency, LIST time at 10,000
// events, watch delivery latency to many watchers and, when it starts the server itself, its
// memory. It prints a table with the targets beside the figures and can write them as JSON.
//
// It fails (exit 1) only when it cannot measure: the server is unreachable or answers errors above
// --max-error-ratio. A missed target is reported, not fatal.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/pflag"
	"orch.io/orch/cmd/internal/kubepeer"
)

type options struct {
	server, ca, bin, jsonFile string
	peerBin, serveEtcd        string
	floor, serveFloor         bool
	compare                   string
	insecure, start           bool
	clients                   int
	warmup, duration          time.Duration
	listEvents, listRuns      int
	watchers, watchEvents     int
	watchRate                 float64
	maxErrorRatio             float64
	only                      []string
}

// runs reports whether benchmark name was selected with --only.
func (o options) runs(name string) bool { return slices.Contains(o.only, name) }

func main() {
	o := options{}
	fs := pflag.NewFlagSet("orchload", pflag.ContinueOnError)
	fs.StringVar(&o.server, "server", "", "URL of a running orch-apiserver, e.g. https://127.0.0.1:6443 (loopback only).")
	fs.StringVar(&o.ca, "ca", "", "PEM file of the CA that signed the server's certificate (<data-dir>/pki/apiserver.crt for a self-signed server).")
	fs.BoolVar(&o.insecure, "insecure", false, "Do not verify the server's certificate.")
	fs.BoolVar(&o.start, "start", false, "Start --apiserver-bin on a free loopback port with a temporary --data-dir under $TMPDIR, measure it (memory too) and stop it. TMPDIR=/dev/shm takes the disk's fsync out of the figures.")
	fs.StringVar(&o.bin, "apiserver-bin", "bin/orch-apiserver", "The orch-apiserver binary --start runs.")
	fs.StringVar(&o.peerBin, "kube-apiserver-bin", "", "Start Kubernetes' kube-apiserver from this binary on an etcd of its own (memory and CPU are the two together) and measure it the same way, with events.k8s.io events: the peer orch is compared with.")
	fs.StringVar(&o.serveEtcd, "serve-etcd", "", "Run an embedded etcd under this directory until SIGTERM, printing its client URL (what --kube-apiserver-bin runs the peer on).")
	_ = fs.MarkHidden("serve-etcd")
	fs.BoolVar(&o.floor, "floor", false, "Start a bare Go HTTP/2 TLS server of this tool's own, which answers a create with 201 and the request's body, and measure creates on it (--only create): the least server CPU a create costs before an API server does anything.")
	fs.BoolVar(&o.serveFloor, "serve-floor", false, "Serve what --floor measures until SIGTERM, printing its URL.")
	_ = fs.MarkHidden("serve-floor")
	fs.StringVar(&o.compare, "compare", "", "Print the figures of orch's --json reports beside the peer's, with ratios, and exit: ORCH.json[,...]:PEER.json[,...].")
	fs.IntVar(&o.clients, "clients", 8, "Concurrent creating clients, each with its own keep-alive connection.")
	fs.DurationVar(&o.warmup, "warmup", 2*time.Second, "Creates before the measured window, not counted.")
	fs.DurationVar(&o.duration, "duration", 10*time.Second, "Length of the measured create window.")
	fs.IntVar(&o.listEvents, "list-events", 10000, "Events the LIST namespace holds at least before it is timed.")
	fs.IntVar(&o.listRuns, "list-runs", 10, "Timed full LISTs.")
	fs.IntVar(&o.watchers, "watchers", 100, "Concurrent watches, each on its own connection.")
	fs.IntVar(&o.watchEvents, "watch-events", 500, "Events created while the watches are open.")
	fs.Float64Var(&o.watchRate, "watch-rate", 200, "Creates per second during the watch benchmark.")
	fs.Float64Var(&o.maxErrorRatio, "max-error-ratio", 0.01, "Fraction of failed requests above which the run fails.")
	fs.StringSliceVar(&o.only, "only", []string{"create", "list", "watch"}, "Benchmarks to run, of create, list and watch (one alone is handy under a profiler).")
	fs.StringVar(&o.jsonFile, "json", "", "Also write the figures as JSON to this file.")
	if err := fs.Parse(os.Args[1:]); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return
		}
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	if o.compare != "" {
		if err := compare(os.Stdout, o.compare); err != nil {
			fmt.Fprintln(os.Stderr, "orchload:", err)
			os.Exit(1)
		}
		return
	}
	if o.serveEtcd != "" {
		if err := kubepeer.ServeEtcd(o.serveEtcd); err != nil {
			fmt.Fprintln(os.Stderr, "orchload:", err)
			os.Exit(1)
		}
		return
	}
	if o.serveFloor {
		if err := serveFloor(); err != nil {
			fmt.Fprintln(os.Stderr, "orchload:", err)
			os.Exit(1)
		}
		return
	}
	if err := o.validate(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "orchload:", err)
		stop()
		os.Exit(1)
	}
}

func (o options) validate() error {
	var errs []error
	given := 0
	for _, b := range []bool{o.start, o.server != "", o.peerBin != "", o.floor} {
		if b {
			given++
		}
	}
	if given != 1 {
		errs = append(errs, errors.New("give exactly one of --start, --server, --kube-apiserver-bin and --floor"))
	}
	if o.floor && (len(o.only) != 1 || o.only[0] != "create") {
		errs = append(errs, errors.New("--floor measures creates only: add --only create"))
	}
	if o.server != "" && !isLoopbackURL(o.server) {
		errs = append(errs, fmt.Errorf("--server %s: only https://127.0.0.1, https://[::1] or https://localhost targets are allowed", o.server))
	}
	if o.clients < 1 || o.listRuns < 1 || o.watchers < 1 || o.watchEvents < 1 || o.listEvents < 0 {
		errs = append(errs, errors.New("--clients, --list-runs, --watchers and --watch-events must be positive, --list-events not negative"))
	}
	if o.duration <= 0 || o.warmup < 0 || o.watchRate <= 0 {
		errs = append(errs, errors.New("--duration and --watch-rate must be positive, --warmup not negative"))
	}
	for _, b := range o.only {
		if b != "create" && b != "list" && b != "watch" {
			errs = append(errs, fmt.Errorf("--only %q: not one of create, list, watch", b))
		}
	}
	return errors.Join(errs...)
}

func isLoopbackURL(u string) bool {
	for _, p := range []string{"https://127.0.0.1:", "https://[::1]:", "https://localhost:"} {
		if strings.HasPrefix(u, p) {
			return true
		}
	}
	return false
}

// report is everything a run measured; it is also the JSON document --json writes.
type report struct {
	Server    string        `json:"server"`
	StartedAt time.Time     `json:"startedAt"`
	CPUs      int           `json:"cpus"`
	LoadStart string        `json:"loadAverageAtStart"`
	LoadEnd   string        `json:"loadAverageAtEnd"`
	Create    *createResult `json:"create,omitempty"`
	List      *listResult   `json:"list,omitempty"`
	Watch     *watchResult  `json:"watch,omitempty"`
	// Memory is read once the server holds the LIST benchmark's 10,000 events (the figure the
	// target is about), MemoryAfterLists once it served the LISTs, MemoryAtEnd after everything.
	Memory           *memoryResult `json:"memoryWithListEvents,omitempty"`
	MemoryAfterLists *memoryResult `json:"memoryAfterLists,omitempty"`
	MemoryAtEnd      *memoryResult `json:"memoryAtEnd,omitempty"`
	Targets          targets       `json:"targets"`
}

type memoryResult struct {
	RSSMiB     float64 `json:"rssMiB"`
	PeakRSSMiB float64 `json:"peakRssMiB"`
	AnonMiB    float64 `json:"anonRssMiB"`
	Events     int     `json:"eventsStored"`
}

func run(ctx context.Context, o options) error {
	var (
		t   target
		srv *process
		err error
	)
	rep := report{StartedAt: time.Now().UTC(), CPUs: runtime.NumCPU(), LoadStart: loadAverage(), Targets: defaultTargets}
	switch {
	case o.start:
		if srv, t, err = startServer(ctx, o.bin); err != nil {
			return err
		}
		defer srv.stop()
		rep.Server = fmt.Sprintf("%s (%s, pid %d, started by orchload, data in %s)", t.url, o.bin, srv.Cmd.Process.Pid, srv.Dir)
	case o.peerBin != "":
		if srv, t, err = startPeer(ctx, o.peerBin); err != nil {
			return err
		}
		defer srv.stop()
		rep.Server = fmt.Sprintf("%s (kube-apiserver %s, pid %d, on etcd pid %d, started by orchload)", t.url, o.peerBin, srv.Cmd.Process.Pid, srv.etcd.Cmd.Process.Pid)
	case o.floor:
		if srv, t, err = startFloor(); err != nil {
			return err
		}
		defer srv.stop()
		rep.Server = fmt.Sprintf("%s (orchload's bare HTTP/2 TLS server, pid %d: the floor)", t.url, srv.Cmd.Process.Pid)
	default:
		t.url, t.group = strings.TrimSuffix(o.server, "/"), "events.orch.io"
		if t.tls, err = tlsConfig(o.ca, o.insecure); err != nil {
			return err
		}
		if err := waitReady(ctx, t, 10*time.Second); err != nil {
			return err
		}
		rep.Server = t.url
	}
	held := srv
	if o.floor {
		held = nil // it keeps no events: its memory says nothing
	}
	err = measure(ctx, o, t, held, &rep)
	if err != nil && srv != nil {
		// The server's side of a failure is in its log, which stop removes.
		err = fmt.Errorf("%w; the server's log ends:\n%s", err, srv.LogTail(20))
	}
	rep.LoadEnd = loadAverage()
	rep.print(os.Stdout)
	if o.jsonFile != "" {
		b, jerr := json.MarshalIndent(rep, "", "  ")
		if jerr == nil {
			jerr = os.WriteFile(o.jsonFile, append(b, '\n'), 0o644)
		}
		err = errors.Join(err, jerr)
	}
	return err
}

// measure runs the selected benchmarks into rep, stopping at the first that cannot be measured.
// LIST runs first so the server's memory can be read when it holds the 10,000 events the memory
// target speaks of, whatever number the create benchmark reaches on this machine's disk; it is read
// before the LISTs too, as each LIST leaves tens of MiB of garbage that RSS keeps for a while.
func measure(ctx context.Context, o options, t target, srv *process, rep *report) error {
	// A run id keeps names unique when a long-lived server is measured again.
	id := fmt.Sprintf("%x", time.Now().UnixNano()&0xffffff)
	stored := 0
	readMemory := func() (*memoryResult, error) {
		if srv == nil {
			return nil, nil
		}
		m, err := srv.memory()
		if err != nil {
			return nil, fmt.Errorf("reading the server's memory: %w", err)
		}
		m.Events = stored
		return &m, nil
	}
	var err error
	if o.runs("list") {
		fmt.Fprintf(os.Stderr, "orchload: LIST benchmark, %d events, %d runs\n", o.listEvents, o.listRuns)
		if err := t.prepare(ctx, "orchload-list"); err != nil {
			return err
		}
		l, err := runList(ctx, t, "orchload-list", "list-"+id, o.clients, o.listEvents, o.listRuns, func() (err error) {
			rep.Memory, err = readMemory()
			return err
		})
		if err != nil {
			return fmt.Errorf("LIST benchmark: %w", err)
		}
		rep.List = &l
		stored = l.Items
		if rep.Memory != nil {
			rep.Memory.Events = l.Items // counted by the LIST that followed the read
		}
		if rep.MemoryAfterLists, err = readMemory(); err != nil {
			return err
		}
	}
	if o.runs("create") {
		fmt.Fprintf(os.Stderr, "orchload: create benchmark, %d clients, %v (+%v warm-up)\n", o.clients, o.duration, o.warmup)
		if err := t.prepare(ctx, "orchload-create"); err != nil {
			return err
		}
		c := runCreate(ctx, t, "orchload-create", "load-"+id, o.clients, o.warmup, o.duration)
		rep.Create = &c
		stored += c.Stored
		if ctx.Err() != nil {
			return fmt.Errorf("interrupted: %w", ctx.Err())
		}
		if errorRatio(c.Errors, c.Errors+c.Created) > o.maxErrorRatio {
			return fmt.Errorf("%d of %d creates failed (above --max-error-ratio %g)", c.Errors, c.Errors+c.Created, o.maxErrorRatio)
		}
	}
	if o.runs("watch") {
		fmt.Fprintf(os.Stderr, "orchload: watch benchmark, %d watchers, %d events at %g/s\n", o.watchers, o.watchEvents, o.watchRate)
		if err := t.prepare(ctx, "orchload-watch-"+id); err != nil {
			return err
		}
		w, err := runWatch(ctx, t, "orchload-watch-"+id, "watch-"+id, o.watchers, o.watchEvents, o.watchRate)
		if err != nil {
			return fmt.Errorf("watch benchmark: %w", err)
		}
		rep.Watch = &w
		stored += w.Expected / w.Watchers
		if errorRatio(w.Errors, w.Events) > o.maxErrorRatio {
			return fmt.Errorf("watch benchmark: %d errors (above --max-error-ratio %g)", w.Errors, o.maxErrorRatio)
		}
	}
	rep.MemoryAtEnd, err = readMemory()
	return err
}

func errorRatio(failed, total int) float64 {
	if failed == 0 {
		return 0
	}
	return float64(failed) / float64(max(1, total))
}

// loadAverage is the 1, 5 and 15 minute load from /proc/loadavg: the figures are only as good as
// the machine was quiet.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	return strings.Join(strings.Fields(string(b))[:3], " ")
}
