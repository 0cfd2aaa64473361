package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	apiversion "k8s.io/apimachinery/pkg/version"

	"orch.io/orch/components/orchlet/options"
	"orch.io/orch/fakecri"
	"orch.io/orch/fakecri/record"
	"orch.io/orch/sim/scenario"
)

// stringList is a repeatable flag.
type stringList []string

func (l *stringList) String() string     { return strings.Join(*l, " ") }
func (l *stringList) Set(v string) error { *l = append(*l, v); return nil }

// runRecord is `fakecri record`: a CRI proxy in front of a real runtime that, when stopped (or
// after --duration), writes what it saw as a fakecri script and a scenario skeleton.
func runRecord(ctx context.Context, args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("fakecri record", flag.ContinueOnError)
	fs.SetOutput(stderr)
	upstream := fs.String("upstream", "", "the real runtime's CRI endpoint, unix:///run/containerd/containerd.sock say (required)")
	listen := fs.String("listen", "unix:///tmp/fakecri-record.sock", "where the agent connects: unix:///path.sock or tcp://host:port")
	out := fs.String("out", "", "directory the recording is written to: fakecri.yaml and scenario.yaml (required)")
	period := fs.Duration("sample-period", 10*time.Second, "how often every container's stats are sampled; the replay matches the recording to within it")
	node := fs.String("node", "", "the recorded node's name, as the agent's --hostname-override (required: static pods' names end in it)")
	manifests := fs.String("manifests", "", "the agent's --pod-manifest-path: its files become the scenario's static pods")
	apiPods := fs.String("api-pods", "", "a directory of the pods (YAML, with spec.nodeName) the agent ran from the API server: the scenario's node is then an API-mode node that creates them at its start")
	var nodeArgs stringList
	fs.Var(&nodeArgs, "node-arg", "an option the agent runs with, replayed as given (repeatable): --node-arg=--eviction-hard=memory.available<100Mi")
	logs := fs.Bool("logs", false, "record each container's log lines too, from the log files the runtime writes (this machine's)")
	duration := fs.Duration("duration", 0, "stop recording after this long (0: at SIGINT or SIGTERM)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	fail := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "fakecri record: "+format+"\n", a...)
		return 1
	}
	switch {
	case fs.NArg() > 0:
		fmt.Fprintf(stderr, "fakecri record: unexpected arguments %q\n", fs.Args())
		return 2
	case *upstream == "":
		return fail("--upstream is required: the runtime's CRI endpoint")
	case *out == "":
		return fail("--out is required: the directory the recording is written to")
	case *node == "":
		return fail("--node is required: the recorded node's name (the agent's --hostname-override)")
	case *period <= 0:
		return fail("--sample-period must be positive, not %s", *period)
	case *duration < 0:
		return fail("--duration must not be negative, not %s", *duration)
	}
	if len(nodeArgs) > 0 { // refused now, not after an hour of recording
		if _, err := options.Parse(nodeArgs, apiversion.Info{GitVersion: "v0.0.0-record"}); err != nil {
			return fail("--node-arg: %v", err)
		}
	}
	if *manifests != "" {
		if st, err := os.Stat(*manifests); err != nil || !st.IsDir() {
			return fail("--manifests %s: not a directory", *manifests)
		}
	}
	var podYAMLs []string
	if *apiPods != "" {
		ents, err := os.ReadDir(*apiPods)
		if err != nil {
			return fail("--api-pods: %v", err)
		}
		for _, e := range ents {
			if e.IsDir() || strings.HasPrefix(e.Name(), ".") {
				continue
			}
			b, err := os.ReadFile(filepath.Join(*apiPods, e.Name()))
			if err != nil {
				return fail("--api-pods: %v", err)
			}
			podYAMLs = append(podYAMLs, string(b))
		}
		if len(podYAMLs) == 0 {
			return fail("--api-pods %s: no pod files", *apiPods)
		}
	}
	hostMem, systemMem := meminfo()

	dialCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	rec, err := record.New(dialCtx, record.Options{Upstream: *upstream, SamplePeriod: *period, Logs: *logs})
	cancel()
	if err != nil {
		return fail("%v", err)
	}
	defer rec.Close()
	lis, err := fakecri.Listen(*listen)
	if err != nil {
		return fail("listen %s: %v", *listen, err)
	}
	if network, p, _ := fakecri.ParseEndpoint(*listen); network == "unix" {
		defer os.Remove(p)
	}
	srv := rec.NewGRPCServer()
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(lis) }()
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	go rec.Run(runCtx)
	fmt.Fprintf(stderr, "fakecri record: forwarding %s to %s, sampling every %s\n", *listen, *upstream, *period)

	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sigs)
	var timeout <-chan time.Time
	if *duration > 0 {
		timeout = time.After(*duration)
	}
	select {
	case err := <-errc:
		if err != nil {
			return fail("serve: %v", err)
		}
	case <-ctx.Done():
	case <-timeout:
	case sig := <-sigs:
		fmt.Fprintf(stderr, "fakecri record: %v, writing the recording\n", sig)
	}
	stop()
	shutdown(srv, nil)
	final, cancelFinal := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancelFinal()
	if err := rec.Sample(final); err != nil { // the exits since the last round
		fmt.Fprintf(stderr, "fakecri record: last sample: %v\n", err)
	}
	if err := rec.WriteRecording(*out, record.Recording{Node: *node, Args: nodeArgs, Manifests: *manifests, APIPods: podYAMLs,
		HostMemory: hostMem, SystemMemory: systemMem, Upstream: *upstream}); err != nil {
		return fail("%v", err)
	}
	if _, err := scenario.Load(filepath.Join(*out, "scenario.yaml")); err != nil {
		return fail("the scenario written does not load (edit it, or record again): %v", err)
	}
	fmt.Fprintf(stderr, "fakecri record: %s of recording (%d samples) written to %s/fakecri.yaml and %s/scenario.yaml\n",
		rec.Elapsed().Round(time.Millisecond), rec.Samples(), *out, *out)
	return 0
}

// meminfo reads the machine's memory and what is in use now (MemTotal - MemAvailable), in bytes:
// the replay's host memory and what runs outside pods. Zeros when /proc/meminfo cannot be read.
func meminfo() (total, used uint64) {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0, 0
	}
	defer f.Close()
	var avail uint64
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		n, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		if err != nil {
			continue
		}
		switch k {
		case "MemTotal":
			total = n << 10
		case "MemAvailable":
			avail = n << 10
		}
	}
	if total == 0 || avail > total {
		return 0, 0
	}
	return total, total - avail
}
