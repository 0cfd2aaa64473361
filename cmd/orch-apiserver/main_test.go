package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/benbjohnson/clock"

	"orch.io/orch/components/apiserver/app"
	"orch.io/orch/components/apiserver/app/apptest"
	"orch.io/orch/components/freeport"
	"orch.io/orch/components/syncbuf"
)

// binary is orch-apiserver built once for every test of this package.
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "orch-apiserver-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "orch-apiserver")
	build := exec.Command(goTool(), "build", "-ldflags=-s -w", "-o", binary, ".")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building orch-apiserver:", err)
		_ = os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// goTool is the go command of the toolchain running the tests.
func goTool() string {
	if goroot := os.Getenv("GOROOT"); goroot != "" {
		if p := filepath.Join(goroot, "bin", "go"); fileExists(p) {
			return p
		}
	}
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	return "go"
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// process is a running orch-apiserver.
type process struct {
	cmd     *exec.Cmd
	url     string
	dataDir string
	output  *syncbuf.Buffer
	exited  chan struct{}
	client  *http.Client
}

// startBinary starts orch-apiserver on dataDir and waits until /readyz answers ok, verifying the
// server against the certificate it wrote under dataDir/pki. The process is killed at the end of
// the test whatever happens. It retries once on a port lost to another process.
func startBinary(t *testing.T, dataDir string, extra ...string) *process {
	t.Helper()
	for attempt := 0; ; attempt++ {
		p, err := tryStartBinary(t, dataDir, freeport.For(t), extra...)
		if err == nil {
			return p
		}
		if attempt == 0 && strings.Contains(err.Error(), "address already in use") {
			t.Logf("port taken before the server bound it, retrying: %v", err)
			continue
		}
		t.Fatal(err)
	}
}

func tryStartBinary(t *testing.T, dataDir string, port int, extra ...string) (*process, error) {
	t.Helper()
	s, err := apptest.Start(context.Background(), apptest.Options{Binary: binary, DataDir: dataDir, Port: port, Args: extra,
		Dir: t.TempDir(), Ready: 30 * time.Second, Clock: clock.New(), ClientTimeout: 20 * time.Second})
	if err != nil {
		return nil, err
	}
	t.Cleanup(s.Kill)
	return &process{cmd: s.Cmd, url: s.URL, dataDir: dataDir, output: s.Output, exited: s.Exited, client: s.Client}, nil
}

type stored struct {
	UID             string
	ResourceVersion string
}

// event is the JSON of a valid Event named name in namespace ns.
func event(ns, name string) []byte {
	data, _ := json.Marshal(map[string]any{
		"apiVersion":          "events.orch.io/v1",
		"kind":                "Event",
		"metadata":            map[string]any{"name": name, "namespace": ns},
		"eventTime":           "2026-11-22T00:00:00.000000Z",
		"reportingController": "orch.io/durability-test",
		"reportingInstance":   "durability-test-1",
		"action":              "Writing",
		"reason":              "Durability",
		"type":                "Normal",
		"note":                "must survive kill -9",
		"regarding":           map[string]any{"apiVersion": "v1", "kind": "Pod", "namespace": ns, "name": "pod-" + name},
	})
	return data
}

func decodeMeta(t *testing.T, body []byte) (name string, s stored) {
	t.Helper()
	var obj struct {
		Metadata struct {
			Name            string `json:"name"`
			UID             string `json:"uid"`
			ResourceVersion string `json:"resourceVersion"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(body, &obj); err != nil {
		t.Fatalf("decoding %s: %v", body, err)
	}
	return obj.Metadata.Name, stored{UID: obj.Metadata.UID, ResourceVersion: obj.Metadata.ResourceVersion}
}

// TestAcknowledgedWritesSurviveKill9 is ARCHITECTURE.md's storage promise: an object whose write
// was acknowledged survives kill -9 of the server and its embedded etcd.
func TestAcknowledgedWritesSurviveKill9(t *testing.T) {
	const n = 50
	const ns = "durable"
	dataDir := t.TempDir()
	first := startBinary(t, dataDir)

	want := map[string]stored{}
	for i := range n {
		name := fmt.Sprintf("durable-%02d", i)
		resp, err := first.client.Post(first.url+"/apis/events.orch.io/v1/namespaces/"+ns+"/events", "application/json", bytes.NewReader(event(ns, name)))
		if err != nil {
			t.Fatalf("create %s: %v", name, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusCreated {
			t.Fatalf("create %s: %d %s, want 201", name, resp.StatusCode, body)
		}
		gotName, s := decodeMeta(t, body)
		if gotName != name || s.UID == "" || s.ResourceVersion == "" {
			t.Fatalf("create %s answered name %q uid %q resourceVersion %q", name, gotName, s.UID, s.ResourceVersion)
		}
		want[name] = s
	}

	// kill -9: no shutdown, no etcd close, no flush beyond what was acknowledged.
	if err := first.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	select {
	case <-first.exited:
	case <-time.After(10 * time.Second):
		t.Fatal("orch-apiserver still running 10s after SIGKILL")
	}
	if ws, ok := first.cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("first server ended with %v, want killed by SIGKILL", first.cmd.ProcessState)
	}

	second := startBinary(t, dataDir)
	for i := range n {
		name := fmt.Sprintf("durable-%02d", i)
		resp, err := second.client.Get(second.url + "/apis/events.orch.io/v1/namespaces/" + ns + "/events/" + name)
		if err != nil {
			t.Fatalf("get %s: %v", name, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("get %s after kill -9: %d %s, want 200", name, resp.StatusCode, body)
		}
		gotName, s := decodeMeta(t, body)
		if gotName != name || s != want[name] {
			t.Fatalf("get %s after kill -9: name %q %+v, want %+v as acknowledged", name, gotName, s, want[name])
		}
	}

	// And nothing else: the list holds exactly the acknowledged events.
	resp, err := second.client.Get(second.url + "/apis/events.orch.io/v1/namespaces/" + ns + "/events")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var list struct {
		Items []json.RawMessage `json:"items"`
	}
	if err := json.Unmarshal(body, &list); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("list after kill -9: %d %s (%v)", resp.StatusCode, body, err)
	}
	if len(list.Items) != n {
		t.Fatalf("list after kill -9 has %d events, want %d", len(list.Items), n)
	}
	// The restarted server keeps writing after the last acknowledged revision.
	resp, err = second.client.Post(second.url+"/apis/events.orch.io/v1/namespaces/"+ns+"/events", "application/json", bytes.NewReader(event(ns, "after-restart")))
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("create after restart: %d %s", resp.StatusCode, body)
	}
	_, after := decodeMeta(t, body)
	lastRV, _ := strconv.ParseInt(want[fmt.Sprintf("durable-%02d", n-1)].ResourceVersion, 10, 64)
	if rv, err := strconv.ParseInt(after.ResourceVersion, 10, 64); err != nil || rv <= lastRV {
		t.Fatalf("create after restart has resourceVersion %q, want one after %d", after.ResourceVersion, lastRV)
	}
}

// run runs the binary to completion with args, in a scratch directory so nothing is left behind.
func run(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, args...)
	cmd.Dir = t.TempDir()
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exit):
		code = exit.ExitCode()
	default:
		t.Fatalf("running %v: %v", args, err)
	}
	if ctx.Err() != nil {
		t.Fatalf("orch-apiserver %v did not exit within 30s; stderr:\n%s", args, errOut.String())
	}
	return out.String(), errOut.String(), code
}

// TestBadFlagsRefuseToStart: a flag value the server cannot honour stops it at once with a non-zero
// status and a message naming the flag.
func TestBadFlagsRefuseToStart(t *testing.T) {
	for _, tc := range []struct {
		name     string
		args     []string
		wantCode int
		want     []string
	}{
		{"port zero", []string{"--secure-port", "0"}, 1, []string{"--secure-port", "between 1 and 65535"}},
		{"port too large", []string{"--secure-port", "70000"}, 1, []string{"--secure-port", "between 1 and 65535"}},
		{"port not a number", []string{"--secure-port", "https"}, 2, []string{"--secure-port", "https"}},
		{"unknown authorization mode", []string{"--authorization-mode", "Nope"}, 1, []string{"--authorization-mode", "Nope", "AlwaysAllow"}},
		{"certificate without key", []string{"--tls-cert-file", "server.crt"}, 1, []string{"--tls-cert-file", "--tls-private-key-file"}},
		{"key without certificate", []string{"--tls-private-key-file", "server.key"}, 1, []string{"--tls-cert-file", "--tls-private-key-file"}},
		{"bind address not an IP", []string{"--bind-address", "localhost"}, 1, []string{"--bind-address", "localhost"}},
		{"negative event ttl", []string{"--event-ttl", "-1h"}, 1, []string{"--event-ttl"}},
		{"unknown flag", []string{"--no-such-flag"}, 2, []string{"--no-such-flag"}},
		{"token file missing", []string{"--token-auth-file", "missing.csv"}, 1, []string{"--token-auth-file"}},
		{"etcd certificate without key", []string{"--etcd-servers", "https://127.0.0.1:2379", "--etcd-certfile", "client.crt"}, 1, []string{"--etcd-certfile and --etcd-keyfile must be given together"}},
		{"etcd TLS without etcd servers", []string{"--etcd-cafile", "ca.crt"}, 1, []string{"--etcd-cafile, --etcd-certfile and --etcd-keyfile secure --etcd-servers, which is not set"}},
		{"negative in-flight limit", []string{"--max-requests-inflight", "-1"}, 1, []string{"--max-requests-inflight -1 must not be negative"}},
		{"negative mutating in-flight limit", []string{"--max-mutating-requests-inflight", "-1"}, 1, []string{"--max-mutating-requests-inflight -1 must not be negative"}},
		{"zero request timeout", []string{"--request-timeout", "0s"}, 1, []string{"--request-timeout 0s must be positive"}},
		{"negative shutdown delay", []string{"--shutdown-delay-duration", "-1s"}, 1, []string{"--shutdown-delay-duration -1s must not be negative"}},
		{"contention profiling without profiling", []string{"--profiling=false", "--contention-profiling"}, 1, []string{"--contention-profiling needs --profiling"}},
		{"signing certificate without key", []string{"--cluster-signing-cert-file", "ca.crt"}, 1, []string{"--cluster-signing-cert-file and --cluster-signing-key-file must be given together"}},
		{"zero signing duration", []string{"--cluster-signing-duration", "0s"}, 1, []string{"--cluster-signing-duration 0s must be positive"}},
		{"signing files missing", []string{"--cluster-signing-cert-file", "missing.crt", "--cluster-signing-key-file", "missing.key"}, 1, []string{"--cluster-signing-cert-file/--cluster-signing-key-file", "missing.crt"}},
		{"service account keys missing", []string{"--service-account-issuer", "https://orch.example", "--service-account-signing-key-file", "missing.key", "--service-account-key-file", "missing.key"}, 1,
			[]string{"--service-account-key-file missing.key"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The flag under test comes last: pflag keeps the last value of a repeated flag.
			args := append([]string{"--data-dir", t.TempDir(), "--bind-address", "127.0.0.1", "--secure-port", strconv.Itoa(freeport.For(t))}, tc.args...)
			stdout, stderr, code := run(t, args...)
			if code != tc.wantCode {
				t.Fatalf("exit status %d, want %d; stdout %q stderr:\n%s", code, tc.wantCode, stdout, stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr does not name %q:\n%s", w, stderr)
				}
			}
		})
	}

	t.Run("every problem is reported at once", func(t *testing.T) {
		_, stderr, code := run(t, "--data-dir", t.TempDir(), "--secure-port", "0", "--authorization-mode", "Nope", "--tls-cert-file", "server.crt")
		if code != 1 {
			t.Fatalf("exit status %d, want 1; stderr:\n%s", code, stderr)
		}
		for _, w := range []string{"--secure-port", "--authorization-mode", "--tls-cert-file"} {
			if !strings.Contains(stderr, w) {
				t.Errorf("stderr does not name %s:\n%s", w, stderr)
			}
		}
	})
}

func TestVersion(t *testing.T) {
	stdout, stderr, code := run(t, "--version")
	if code != 0 {
		t.Fatalf("--version exited %d; stderr:\n%s", code, stderr)
	}
	want := "orch-apiserver " + app.Version.GitVersion + "\n"
	if app.Version.GitVersion == "" || stdout != want {
		t.Fatalf("--version printed %q, want %q", stdout, want)
	}
}

func TestHelp(t *testing.T) {
	_, stderr, code := run(t, "--help")
	if code != 0 {
		t.Fatalf("--help exited %d", code)
	}
	for _, flag := range []string{"--secure-port", "--data-dir", "--etcd-servers", "--authorization-mode", "--version", "--cluster-signing-cert-file", "--cluster-signing-duration",
		"--service-account-issuer", "--service-account-signing-key-file", "--service-account-key-file", "--service-account-max-token-expiration", "--service-account-lookup", "--api-audiences"} {
		if !strings.Contains(stderr, flag) {
			t.Errorf("--help does not describe %s:\n%s", flag, stderr)
		}
	}
}
