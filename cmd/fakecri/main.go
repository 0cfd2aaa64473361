// Command fakecri serves the fake CRI runtime over gRPC, for any node agent
// (or crictl) that speaks CRI, with an HTTP control API beside it.
//
//	fakecri --listen unix:///tmp/fakecri.sock [--control unix:///tmp/fakecri.sock.control]
//	        [--script behaviour.yaml] [--clock wall|manual] [--start-time 2025-01-01T00:00:00Z] [--seed 1]
//	        [--streaming-address 127.0.0.1:0] [--stream-idle-timeout 4h]
//
// SIGHUP re-reads the script file; SIGINT or SIGTERM stops the server.
//
//	fakecri record --upstream unix:///run/containerd/containerd.sock --listen unix:///tmp/rec.sock
//	        --out DIR --node NAME [--node-arg=--opt=value]... [--manifests DIR] [--api-pods DIR]
//	        [--sample-period 10s] [--logs] [--duration D]
//
// is a CRI proxy in front of a real runtime: it forwards every call and, when stopped, writes what
// it saw as a fakecri script and a scenario skeleton that orchsim replays.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/benbjohnson/clock"

	"orch.io/orch/fakecri"
	controlapi "orch.io/orch/fakecri/control"
	fakescript "orch.io/orch/fakecri/script"
)

func main() {
	os.Exit(run(context.Background(), os.Args[1:], os.Stderr))
}

func run(ctx context.Context, args []string, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "record" {
		return runRecord(ctx, args[1:], stderr)
	}
	fs := flag.NewFlagSet("fakecri", flag.ContinueOnError)
	fs.SetOutput(stderr)
	listen := fs.String("listen", "unix:///tmp/fakecri.sock", "CRI gRPC endpoint: unix:///path.sock or tcp://host:port")
	control := fs.String("control", "", "control API endpoint (HTTP): unix:///path or host:port; default: the CRI socket path + \".control\"; \"none\" disables it")
	scriptPath := fs.String("script", "", "behaviour script (YAML); SIGHUP re-reads it")
	clockKind := fs.String("clock", "wall", "wall: real time; manual: time moves only through the control API")
	startTime := fs.String("start-time", "2025-01-01T00:00:00Z", "the manual clock's starting time (RFC 3339)")
	seed := fs.Int64("seed", 1, "seed for ids and seeded faults")
	maxCalls := fs.Int("max-calls", 100000, "calls kept in the call log")
	streamAddr := fs.String("streaming-address", "127.0.0.1:0", "host:port of the streaming server exec, attach and port-forward URLs point to (port 0: any free one), as containerd's stream_server_address; \"none\" serves none")
	streamIdle := fs.Duration("stream-idle-timeout", 4*time.Hour, "a stream with no data either way this long is closed (0: never), as containerd's stream_idle_timeout")
	stateDir := fs.String("state-dir", "", "directory fakecri keeps its files in, where its image filesystem's mountpoint is unless the script names one (so an agent's statfs of it succeeds); default: the CRI socket path + \".d\"")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "fakecri: unexpected arguments %q\n", fs.Args())
		return 2
	}
	fail := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "fakecri: "+format+"\n", a...)
		return 1
	}

	var clk clock.Clock = clock.New()
	var mock *clock.Mock
	switch *clockKind {
	case "wall":
	case "manual":
		t, err := time.Parse(time.RFC3339Nano, *startTime)
		if err != nil {
			return fail("--start-time: %v", err)
		}
		mock = clock.NewMock()
		mock.Set(t)
		clk = mock
	default:
		return fail("--clock must be wall or manual, not %q", *clockKind)
	}

	network, sockPath, _ := fakecri.ParseEndpoint(*listen)
	if *stateDir == "" {
		if network != "unix" {
			return fail("--state-dir is required when --listen is not a unix socket")
		}
		*stateDir = sockPath + ".d"
	}
	imageFs := filepath.Join(*stateDir, "imagefs")
	if err := os.MkdirAll(imageFs, 0o755); err != nil {
		return fail("--state-dir: %v", err)
	}
	load := func() (*fakescript.Script, error) {
		s := &fakescript.Script{}
		if *scriptPath != "" {
			var err error
			if s, err = fakescript.Load(*scriptPath); err != nil {
				return nil, err
			}
		}
		return withImageFsAt(s, imageFs), nil
	}
	script, err := load()
	if err != nil {
		return fail("%v", err)
	}
	rt, err := fakecri.New(fakecri.Options{Clock: clk, Seed: *seed, Script: script, MaxCalls: *maxCalls, CreateLogFiles: true})
	if err != nil {
		return fail("%v", err)
	}

	lis, err := fakecri.Listen(*listen)
	if err != nil {
		return fail("listen %s: %v", *listen, err)
	}
	defer lis.Close()
	defer func() {
		if network == "unix" {
			os.Remove(sockPath)
		}
	}()
	srv := fakecri.NewGRPCServer(rt)

	ctlEndpoint := *control
	if ctlEndpoint == "" {
		if network != "unix" {
			return fail("--control is required when --listen is not a unix socket (or give --control=none)")
		}
		ctlEndpoint = "unix://" + sockPath + ".control"
	}
	var ctlSrv *http.Server
	var ctlLis net.Listener
	if ctlEndpoint != "none" {
		if ctlLis, err = fakecri.Listen(ctlEndpoint); err != nil {
			return fail("listen %s: %v", ctlEndpoint, err)
		}
		defer ctlLis.Close()
		if n, p, _ := fakecri.ParseEndpoint(ctlEndpoint); n == "unix" {
			defer os.Remove(p)
		}
		ctlSrv = &http.Server{Handler: controlapi.Handler(rt, controlapi.Options{Mock: mock, Complete: func(s *fakescript.Script) *fakescript.Script { return withImageFsAt(s, imageFs) }}), ReadHeaderTimeout: 10 * time.Second}
		go ctlSrv.Serve(ctlLis)
	}

	streamsShown := "none"
	if *streamAddr != "none" {
		streamLis, err := net.Listen("tcp", *streamAddr)
		if err != nil {
			return fail("--streaming-address: %v", err)
		}
		streams, err := rt.ServeStreams(streamLis, *streamIdle)
		if err != nil {
			return fail("--streaming-address: %v", err)
		}
		defer streams.Close()
		streamsShown = streams.Addr().String()
	}

	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(lis) }()
	ctlShown := ctlEndpoint
	if ctlLis != nil && strings.HasPrefix(ctlLis.Addr().Network(), "tcp") {
		ctlShown = ctlLis.Addr().String()
	}
	fmt.Fprintf(stderr, "fakecri %s: CRI on %s, control on %s, streams on %s, %s clock at %s\n",
		fakecri.Version, *listen, ctlShown, streamsShown, *clockKind, clk.Now().UTC().Format(time.RFC3339))

	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)
	for {
		select {
		case err := <-errc:
			if err != nil {
				return fail("serve: %v", err)
			}
			return 0
		case <-ctx.Done():
			rt.Close()
			shutdown(srv, ctlSrv)
			return 0
		case sig := <-sigs:
			if sig == syscall.SIGHUP {
				if *scriptPath == "" {
					fmt.Fprintln(stderr, "fakecri: SIGHUP without --script: nothing to reload")
					continue
				}
				s, err := load()
				if err == nil {
					err = rt.SetScript(s)
				}
				if err != nil {
					fmt.Fprintf(stderr, "fakecri: script not reloaded: %v\n", err)
				} else {
					fmt.Fprintf(stderr, "fakecri: script reloaded from %s\n", *scriptPath)
				}
				continue
			}
			fmt.Fprintf(stderr, "fakecri: %v, stopping\n", sig)
			rt.Close()
			shutdown(srv, ctlSrv)
			return 0
		}
	}
}

// withImageFsAt gives s's image filesystem the mountpoint dir unless the script names one: a real
// agent sizes the image filesystem by statfs of the mountpoint ImageFsInfo names, as the kubelet
// does, so the default must exist on this host (containerd's own path need not).
func withImageFsAt(s *fakescript.Script, dir string) *fakescript.Script {
	if s.Node.ImageFs == nil {
		s.Node.ImageFs = &fakescript.Filesystem{}
	}
	if s.Node.ImageFs.Mountpoint == "" {
		s.Node.ImageFs.Mountpoint = dir
	}
	return s
}

func shutdown(srv interface {
	GracefulStop()
	Stop()
}, ctl *http.Server) {
	done := make(chan struct{})
	go func() { srv.GracefulStop(); close(done) }()
	select {
	case <-done:
	case <-time.After(3 * time.Second): // a call hanging on a fault, or a pull on a stopped clock
		srv.Stop()
	}
	if ctl != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		ctl.Shutdown(ctx)
	}
}
