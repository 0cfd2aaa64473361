package fakecri

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"orch.io/orch/fakecri/fakecritest/fixture"
	"orch.io/orch/fakecri/script"
)

// logFixture runs container "app" of pod "web", whose rule scripts logs, with its log directory
// in a temporary directory; it answers the container id and its log file.
func logFixture(t *testing.T, rule script.ContainerRule) (*fixture.Fixture[*Runtime], string, string) {
	t.Helper()
	rule.Match = script.ContainerMatch{Name: "app"}
	f := newFixture(t, &script.Script{Containers: []script.ContainerRule{rule}})
	f.Pull("nginx:1.27")
	cfg := fixture.PodConfig("web", nil)
	cfg.LogDirectory = t.TempDir()
	resp, err := f.RT.RunPodSandbox(f.Ctx, &runtimeapi.RunPodSandboxRequest{Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	id := f.Create(resp.PodSandboxId, "app", "nginx:1.27", 0)
	f.Start(id)
	return f, id, filepath.Join(cfg.LogDirectory, "app", "0.log")
}

func readLog(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func logLine(at time.Duration, stream, msg string) string {
	return fixture.Epoch.Add(at).Format(time.RFC3339Nano) + " " + stream + " F " + msg + "\n"
}

// TestScriptedLogs: a running container writes its lines in the CRI format at their times on the
// clock, numbered, cycling, as of the last runtime call.
func TestScriptedLogs(t *testing.T) {
	f, id, p := logFixture(t, script.ContainerRule{Logs: &script.LogSpec{Lines: []string{"hello {n}", "world"}, Every: script.Duration(time.Second)}})
	f.Advance(3500 * time.Millisecond)
	if st := f.Status(id); st.LogPath != p {
		t.Fatalf("log path %q, want %q", st.LogPath, p)
	}
	want := logLine(time.Second, "stdout", "hello 1") + logLine(2*time.Second, "stdout", "world") + logLine(3*time.Second, "stdout", "hello 3")
	if got := readLog(t, p); got != want {
		t.Fatalf("log\n%s\nwant\n%s", got, want)
	}
}

// TestScriptedLogsStopAtExitAndCount: lines stop at Count and when the container exits.
func TestScriptedLogsStopAtExitAndCount(t *testing.T) {
	f, id, p := logFixture(t, script.ContainerRule{
		Logs: &script.LogSpec{Lines: []string{"x"}, Every: script.Duration(time.Second), Stream: "stderr"},
		Exit: &script.ExitSpec{After: script.Duration(2500 * time.Millisecond), Code: 1},
	})
	f.Advance(10 * time.Second)
	if st := f.Status(id); st.State != runtimeapi.ContainerState_CONTAINER_EXITED {
		t.Fatalf("state %v", st.State)
	}
	if got, want := readLog(t, p), logLine(time.Second, "stderr", "x")+logLine(2*time.Second, "stderr", "x"); got != want {
		t.Fatalf("log after exit\n%s\nwant\n%s", got, want)
	}
	f, id, p = logFixture(t, script.ContainerRule{Logs: &script.LogSpec{Lines: []string{"x"}, Every: script.Duration(time.Second), Count: 1}})
	f.Advance(5 * time.Second)
	f.Status(id)
	if got, want := readLog(t, p), logLine(time.Second, "stdout", "x"); got != want {
		t.Fatalf("log with count 1\n%s\nwant\n%s", got, want)
	}
}

// TestReopenContainerLog: after the agent renames the log file, lines keep going to the renamed
// file until ReopenContainerLog, then to a new file at the log path, as with containerd.
func TestReopenContainerLog(t *testing.T) {
	f, id, p := logFixture(t, script.ContainerRule{Logs: &script.LogSpec{Lines: []string{"line {n}"}, Every: script.Duration(time.Second)}})
	f.Advance(time.Second)
	f.Status(id)
	if err := os.Rename(p, p+".rotated"); err != nil {
		t.Fatal(err)
	}
	f.Advance(time.Second)
	if _, err := f.RT.ReopenContainerLog(f.Ctx, &runtimeapi.ReopenContainerLogRequest{ContainerId: id}); err != nil {
		t.Fatal(err)
	}
	if got := readLog(t, p); got != "" {
		t.Fatalf("reopened log holds %q, want nothing yet", got)
	}
	f.Advance(time.Second)
	f.Status(id)
	if got, want := readLog(t, p+".rotated"), logLine(time.Second, "stdout", "line 1")+logLine(2*time.Second, "stdout", "line 2"); got != want {
		t.Fatalf("rotated file\n%s\nwant\n%s", got, want)
	}
	if got, want := readLog(t, p), logLine(3*time.Second, "stdout", "line 3"); got != want {
		t.Fatalf("new file\n%s\nwant\n%s", got, want)
	}
	if _, err := f.RT.StopContainer(f.Ctx, &runtimeapi.StopContainerRequest{ContainerId: id}); err != nil {
		t.Fatal(err)
	}
	_, err := f.RT.ReopenContainerLog(f.Ctx, &runtimeapi.ReopenContainerLogRequest{ContainerId: id})
	wantCode(t, err, codes.FailedPrecondition)
}

// TestScriptedLogsUnwritable: a log file that cannot be created fails the start, as containerd's.
func TestScriptedLogsUnwritable(t *testing.T) {
	f := newFixture(t, &script.Script{Containers: []script.ContainerRule{{Match: script.ContainerMatch{Name: "app"}, Logs: &script.LogSpec{Lines: []string{"x"}, Every: script.Duration(time.Second)}}}})
	f.Pull("nginx:1.27")
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "app"), nil, 0o600); err != nil { // a file where the directory goes
		t.Fatal(err)
	}
	cfg := fixture.PodConfig("web", nil)
	cfg.LogDirectory = dir
	resp, err := f.RT.RunPodSandbox(f.Ctx, &runtimeapi.RunPodSandboxRequest{Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	id := f.Create(resp.PodSandboxId, "app", "nginx:1.27", 0)
	_, err = f.RT.StartContainer(f.Ctx, &runtimeapi.StartContainerRequest{ContainerId: id})
	if err == nil || !strings.Contains(err.Error(), "log file") {
		t.Fatalf("start with an unwritable log: %v", err)
	}
	if st := f.Status(id); st.Reason != "StartError" {
		t.Fatalf("reason %q, want StartError", st.Reason)
	}
}

// TestCreateLogFiles: with CreateLogFiles a started container's log file exists even with no
// scripted lines, as a real runtime's does; without it nothing is written, and LogsUnder says so.
func TestCreateLogFiles(t *testing.T) {
	for _, create := range []bool{false, true} {
		f := newFixture(t, &script.Script{})
		f.RT.createLogs = create
		f.Pull("nginx:1.27")
		cfg := fixture.PodConfig("web", nil)
		cfg.LogDirectory = t.TempDir()
		resp, err := f.RT.RunPodSandbox(f.Ctx, &runtimeapi.RunPodSandboxRequest{Config: cfg})
		if err != nil {
			t.Fatal(err)
		}
		f.Start(f.Create(resp.PodSandboxId, "app", "nginx:1.27", 0))
		_, err = os.Stat(filepath.Join(cfg.LogDirectory, "app", "0.log"))
		if exists := err == nil; exists != create {
			t.Fatalf("CreateLogFiles %t: log file exists %t (%v)", create, exists, err)
		}
		// LogsUnder answers for the file, the directories above it and nothing beside them.
		for path, want := range map[string]bool{
			filepath.Join(cfg.LogDirectory, "app", "0.log"): create,
			filepath.Join(cfg.LogDirectory, "app") + "/":    create,
			cfg.LogDirectory:                                create,
			filepath.Dir(cfg.LogDirectory):                  create,
			filepath.Join(cfg.LogDirectory, "other"):        false,
			filepath.Join(cfg.LogDirectory, "app", "1.log"): false,
			filepath.Join(cfg.LogDirectory+"x", "app"):      false,
		} {
			if got := f.RT.LogsUnder(path); got != want {
				t.Errorf("CreateLogFiles %t: LogsUnder(%s) = %t, want %t", create, path, got, want)
			}
		}
	}
}
