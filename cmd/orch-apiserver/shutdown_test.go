package main

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"
)

// On SIGTERM the server first fails /readyz while it keeps serving for --shutdown-delay-duration,
// then ends open watches cleanly and exits 0; a write acknowledged during the delay is kept.
func TestGracefulShutdown(t *testing.T) {
	dataDir := t.TempDir()
	p := startBinary(t, dataDir, "--shutdown-delay-duration=2s")
	const events = "/apis/events.orch.io/v1/namespaces/default/events"

	watch, err := p.client.Get(p.url + events + "?watch=true")
	if err != nil {
		t.Fatal(err)
	}
	defer watch.Body.Close()
	frames := make(chan string, 16)
	watchErr := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(watch.Body)
		for sc.Scan() {
			frames <- sc.Text()
		}
		watchErr <- sc.Err()
	}()

	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		resp, err := p.client.Get(p.url + "/readyz?verbose")
		if err != nil {
			t.Fatalf("/readyz during the delay: %v", err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusInternalServerError && strings.Contains(string(body), "[-]shutdown failed: process is shutting down") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz never failed after SIGTERM: %d %s", resp.StatusCode, body)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if resp, err := p.client.Get(p.url + "/healthz"); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("/healthz during the delay: %v %v", resp, err)
	}
	resp, err := p.client.Post(p.url+events, "application/json", bytes.NewReader(event("default", "during-delay")))
	if err != nil {
		t.Fatalf("create during the delay: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("create during the delay: %d, want 201", resp.StatusCode)
	}
	select {
	case f := <-frames:
		if !strings.Contains(f, `"type":"ADDED"`) || !strings.Contains(f, "during-delay") {
			t.Fatalf("watch frame %s, want the ADDED event", f)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the watch did not see the create made during the delay")
	}

	select {
	case err := <-watchErr:
		if err != nil {
			t.Fatalf("the watch ended with %v, want a clean end", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the watch was not ended by the shutdown")
	}
	select {
	case <-p.exited:
	case <-time.After(15 * time.Second):
		t.Fatal("the server did not exit after the delay")
	}
	if !p.cmd.ProcessState.Success() {
		t.Fatalf("exit %v:\n%s", p.cmd.ProcessState, p.output.String())
	}

	again := startBinary(t, dataDir)
	resp, err = again.client.Get(again.url + events + "/during-delay")
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("the event acknowledged during the delay after a restart: %v %v", resp, err)
	}
	resp.Body.Close()
}
