package app

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/benbjohnson/clock"

	"orch.io/orch/components/orchlet/app/apptest"
	"orch.io/orch/components/orchlet/host"
	"orch.io/orch/fakecri"
	"orch.io/orch/fakecri/calllog"
	"orch.io/orch/fakecri/fakecritest"
	"orch.io/orch/fakecri/script"
)

// shutdownGrace is how soon the agent must end once asked to stop, whatever it waits on: the
// process is SIGTERM's context cancelled, so each case cancels Run's.
const shutdownGrace = 5 * time.Second

// A port another process holds refuses the start at once, naming the options that chose it.
func TestRunRefusesATakenPort(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	cancel, done := runAsync(parse(t, apptest.WithRuntime(t, "--healthz-bind-address=127.0.0.1", "--healthz-port="+port)...), host.NewFake(), clock.New())
	defer cancel()
	err = wait(t, done)
	if err == nil || !strings.Contains(err.Error(), "--healthz-port") || !strings.Contains(err.Error(), "address already in use") {
		t.Fatalf("err = %v, want a refusal naming --healthz-port and the address in use", err)
	}
}

// stopsWithinGrace cancels Run once waiting says it is waiting, and fails unless Run ends within
// the shutdown grace without an error.
func stopsWithinGrace(t *testing.T, cancel context.CancelFunc, done <-chan error, waiting func() bool) {
	t.Helper()
	apptest.WaitWithin(t, clock.New(), "the agent waiting", 20*time.Second, func() (bool, error) { return waiting(), nil })
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("stopped while waiting: %v, want nil", err)
		}
	case <-time.After(shutdownGrace):
		t.Fatalf("still running %v after being asked to stop", shutdownGrace)
	}
}

// Waiting for a runtime whose socket accepts connections and never answers (a runtime starting
// or stuck). A socket nobody listens on is refused at once (TestRunRefusesAnUnreachableRuntime).
func TestStopWhileWaitingForTheRuntime(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "mute.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var accepted atomic.Int32
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			defer c.Close()
		}
	}()
	o := parse(t, "--enable-server=false", "--read-only-port=0", "--healthz-port=0", "--container-runtime-endpoint=unix://"+sock, "--runtime-request-timeout=10m")
	cancel, done := runAsync(o, host.NewFake(), clock.New())
	defer cancel()
	stopsWithinGrace(t, cancel, done, func() bool { return accepted.Load() > 0 })
}

// Waiting for an API server that accepts connections and never answers.
func TestStopWhileWaitingForTheAPIServer(t *testing.T) {
	var asked atomic.Int32
	mute := make(chan struct{})
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked.Add(1)
		select {
		case <-r.Context().Done():
		case <-mute:
		}
	}))
	defer srv.Close()
	defer close(mute) // a request whose connection the client keeps must not hold srv.Close
	kubeconfig := apptest.AnonymousKubeconfig(t, srv)
	o := parse(t, apptest.WithRuntime(t, "--orchconfig="+kubeconfig, "--hostname-override=node-a", "--root-dir="+t.TempDir(), "--cert-dir="+t.TempDir())...)
	cancel, done := runAsync(o, host.NewFake(), clock.New())
	defer cancel()
	stopsWithinGrace(t, cancel, done, func() bool { return asked.Load() > 0 })
}

// staticPod runs the agent on a runtime with script and a manifest directory holding one pod.
func staticPod(t *testing.T, script *script.Script) (*fakecri.Runtime, string, context.CancelFunc, <-chan error) {
	t.Helper()
	rt, sock := fakecritest.Start(t, fakecri.Options{Seed: 1, Script: script})
	manifests := t.TempDir()
	if err := os.WriteFile(filepath.Join(manifests, "web.yaml"), []byte("apiVersion: v1\nkind: Pod\nmetadata: {name: web}\nspec:\n  terminationGracePeriodSeconds: 600\n  containers:\n  - {name: app, image: busybox:1.36}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	o := parse(t, "--enable-server=false", "--read-only-port=0", "--healthz-port=0", "--container-runtime-endpoint="+sock,
		"--pod-manifest-path="+manifests, "--file-check-frequency=1s", "--root-dir="+t.TempDir(), "--runtime-request-timeout=10m")
	cancel, done := runAsync(o, host.NewFake(), clock.New())
	return rt, manifests, cancel, done
}

// inFlight says whether a call of method is in the runtime unanswered.
func inFlight(rt *fakecri.Runtime, method string) bool {
	for _, c := range rt.Calls(calllog.Filter{Method: method}) {
		if c.End.IsZero() {
			return true
		}
	}
	return false
}

// Waiting on a runtime call that does not answer until its deadline, ten minutes away.
func TestStopDuringASlowRuntimeCall(t *testing.T) {
	rt, _, cancel, done := staticPod(t, &script.Script{Faults: []script.FaultRule{{Method: "RunPodSandbox", Hang: true}}})
	defer cancel()
	stopsWithinGrace(t, cancel, done, func() bool { return inFlight(rt, "RunPodSandbox") })
}

// Waiting for a pod's container to stop: it takes its ten-minute grace period over SIGTERM.
func TestStopDuringPodTermination(t *testing.T) {
	rt, manifests, cancel, done := staticPod(t, &script.Script{Containers: []script.ContainerRule{{
		Match: script.ContainerMatch{Name: "app"}, Stop: &script.StopSpec{Delay: script.Duration(10 * time.Minute)}}}})
	defer cancel()
	apptest.WaitWithin(t, clock.New(), "the pod running", 20*time.Second, func() (bool, error) {
		return len(rt.Calls(calllog.Filter{Method: "StartContainer"})) > 0, nil
	})
	if err := os.Remove(filepath.Join(manifests, "web.yaml")); err != nil {
		t.Fatal(err)
	}
	stopsWithinGrace(t, cancel, done, func() bool { return inFlight(rt, "StopContainer") })
}
