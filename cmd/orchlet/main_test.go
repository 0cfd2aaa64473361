package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"orch.io/orch/cmd/internal/linkcheck"
	"orch.io/orch/components/orchlet/app/apptest"
)

// binary is the orchlet built once for this test binary.
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "orchlet-bin")
	if err != nil {
		panic(err)
	}
	binary = filepath.Join(dir, "orchlet")
	out, err := exec.Command("go", "build", "-o", binary, ".").CombinedOutput()
	if err != nil {
		os.RemoveAll(dir)
		panic("building orchlet: " + err.Error() + "\n" + string(out))
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func runBinary(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(binary, args...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	return o.String(), e.String(), code
}

// The agent links client-go's REST client with core/v1 alone: the clientset, with every API group
// and its discovery and openapi, doubled its binary and its idle memory (issue 13).
func TestBinaryLinksNoClientset(t *testing.T) {
	linkcheck.NoHeavyDeps(t, "orchlet")
}

func TestBinaryHelpAndVersion(t *testing.T) {
	out, _, code := runBinary(t, "--help")
	if code != 0 {
		t.Fatalf("--help exit %d", code)
	}
	for _, want := range []string{"--max-pods int32", "(default 110)", "QOSReserved=true|false (ALPHA - default=false)", "--pod-infra-container-image", "Will be removed in 1.35"} {
		if !strings.Contains(out, want) {
			t.Errorf("--help lacks %q", want)
		}
	}
	if out, _, code := runBinary(t, "--version"); code != 0 || out != "orch v0.1.0\n" {
		t.Errorf("--version: %q exit %d", out, code)
	}
	if out, _, code := runBinary(t, "--version=raw"); code != 0 || !strings.HasPrefix(out, "version.Info{") {
		t.Errorf("--version=raw: %q exit %d", out, code)
	}
}

func TestBinaryRefusesBadValues(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--oom-score-adj=2000"}, "--oom-score-adj (oomScoreAdj): 2000 is out of range [-1000, 1000]"},
		{[]string{"--max-pods=lots"}, `invalid argument "lots" for "--max-pods" flag`},
		{[]string{"--feature-gates=Nope=true"}, `unrecognized feature gate "Nope"`},
	}
	for _, tt := range tests {
		_, errOut, code := runBinary(t, tt.args...)
		if code == 0 || !strings.Contains(errOut, tt.want) {
			t.Errorf("%q: exit %d, stderr %q; want non-zero and %q", tt.args, code, errOut, tt.want)
		}
	}
}

func TestBinaryPrintsEffectiveConfigurationAtV2(t *testing.T) {
	dir := t.TempDir()
	head := "apiVersion: orchlet.config.orch.io/v1beta1\nkind: OrchletConfiguration\n"
	file := filepath.Join(dir, "orchlet.yaml")
	os.WriteFile(file, []byte(head+"runOnce: true\nenableServer: false\nfailSwapOn: false\nmaxPods: 7\n"), 0o644)
	os.Mkdir(filepath.Join(dir, "conf.d"), 0o755)
	os.WriteFile(filepath.Join(dir, "conf.d", "10.conf"), []byte(head+"maxPods: 42\nclusterDomain: cluster.example\n"), 0o644)

	_, errOut, code := runBinary(t, "--config", file, "--config-dir", filepath.Join(dir, "conf.d"), "-v=2", "--max-pods=43", "--max-pods=44")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"Effective configuration", "maxPods: 44", "clusterDomain: cluster.example", "runOnce: true", "start-up checks passed"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
	if n := strings.Count(errOut, "Flag --max-pods has been deprecated"); n != 1 {
		t.Errorf("%d deprecation warnings for --max-pods, want 1", n)
	}
	if _, errOut, _ := runBinary(t, "--config", file); strings.Contains(errOut, "Effective configuration") {
		t.Error("effective configuration printed below -v=2")
	}
}

// --hairpin-mode is accepted and left, as the kubelet leaves it with a CRI runtime, to the
// runtime's network plugin: the agent says so once at start.
func TestBinarySaysWhoSetsUpHairpinTraffic(t *testing.T) {
	_, errOut, code := runBinary(t, "--runonce", "--enable-server=false", "--fail-swap-on=false", "--hairpin-mode=hairpin-veth")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	want := `"Hairpin traffic is set up by the container runtime's network plugin, not by this agent" hairpinMode="hairpin-veth"`
	if strings.Count(errOut, want) != 1 {
		t.Errorf("stderr does not say once %s:\n%s", want, errOut)
	}
}

// --experimental-mounter-path serves the kubelet only for nfs, glusterfs, ceph and cifs mounts,
// which this agent does not run: accepted, and said so once at start.
func TestBinarySaysTheMounterPathIsUnused(t *testing.T) {
	_, errOut, code := runBinary(t, "--runonce", "--enable-server=false", "--fail-swap-on=false", "--experimental-mounter-path=/usr/local/bin/mount")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	want := `experimentalMounterPath="/usr/local/bin/mount"`
	if strings.Count(errOut, want) != 1 || !strings.Contains(errOut, "volume types this agent does not run") {
		t.Errorf("stderr does not say once why %s is unused:\n%s", want, errOut)
	}
}

func TestBinaryRunsUntilSIGTERM(t *testing.T) {
	cmd := startRunning(t, apptest.WithRuntime(t, "--fail-swap-on=false", "--lock-file", filepath.Join(t.TempDir(), "lock"))...)
	cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("after SIGTERM: %v", err)
	}
}

// A second agent on the --root-dir a running agent holds is refused at once, naming the option and
// the holder; the kernel drops the lock of an agent killed with SIGKILL, so one started again on
// the directory runs.
func TestBinaryRefusesAHeldRootDir(t *testing.T) {
	root := t.TempDir()
	first := startRunning(t, apptest.WithRuntime(t, "--fail-swap-on=false", "--root-dir="+root)...)
	began := time.Now()
	_, errOut, code := runBinary(t, apptest.WithRuntime(t, "--fail-swap-on=false", "--root-dir="+root)...)
	want := fmt.Sprintf("--root-dir %s is in use by another orchlet (pid %d, holding %s)", root, first.Process.Pid, filepath.Join(root, "orchlet.lock"))
	if code != 1 || !strings.Contains(errOut, want) {
		t.Fatalf("second agent: exit %d, want 1 naming %q:\n%s", code, want, errOut)
	}
	t.Logf("refused after %v", time.Since(began))
	if err := first.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = first.Wait()
	again := startRunning(t, apptest.WithRuntime(t, "--fail-swap-on=false", "--root-dir="+root)...)
	again.Process.Signal(syscall.SIGTERM)
	if err := again.Wait(); err != nil {
		t.Fatalf("after SIGTERM: %v", err)
	}
}

// startRunning starts the built orchlet with args and waits for its start line; the test's end
// kills it if it still runs.
func startRunning(t *testing.T, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(binary, args...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	started := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if strings.Contains(sc.Text(), "orchlet started: configuration valid, start-up checks passed") {
				started <- true
			}
		}
		close(started)
	}()
	select {
	case ok := <-started:
		if !ok {
			t.Fatal("orchlet ended without the start line")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no start line")
	}
	return cmd
}

func TestBinarySplitsLogStreams(t *testing.T) {
	base := []string{"--runonce", "--enable-server=false", "--fail-swap-on=false", "--version=v0.1.0-test.1"}
	out, errOut, code := runBinary(t, append(base, "--feature-gates=LoggingAlphaOptions=true", "--log-text-split-stream", "--log-text-info-buffer-size=64Ki")...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !strings.Contains(out, "start-up checks passed") || strings.Contains(errOut, "start-up checks passed") {
		t.Errorf("split streams: info line not on stdout only\nstdout: %s\nstderr: %s", out, errOut)
	}
	if !strings.Contains(out, `version="v0.1.0-test.1"`) {
		t.Errorf("the reported version was not overridden: %s", out)
	}
	out, errOut, _ = runBinary(t, base...)
	if strings.Contains(out, "start-up checks passed") || !strings.Contains(errOut, "start-up checks passed") {
		t.Errorf("without splitting, info should go to stderr\nstdout: %s\nstderr: %s", out, errOut)
	}
	_, errOut, code = runBinary(t, append(base, "--log-text-split-stream")...)
	if code == 0 || !strings.Contains(errOut, "--log-text-split-stream (logging.options.text.splitStream): needs feature gate LoggingAlphaOptions") {
		t.Errorf("split stream without its gate: exit %d, %s", code, errOut)
	}
}
