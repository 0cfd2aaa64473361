package sim

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"orch.io/orch/components/orchlet/volumestats"
	"orch.io/orch/fakecri"
	"orch.io/orch/fakecri/script"
)

// TestDiskUsageOfLogsAnswersAsTheWalk: the simulated du answers for the pods' log directories
// what the walk of the real directories answers, where the runtime wrote logs and where it did
// not (skipping the kernel there), and walks anything outside them.
func TestDiskUsageOfLogsAnswersAsTheWalk(t *testing.T) {
	mock := clock.NewMock()
	mock.Set(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	rt, err := fakecri.New(fakecri.Options{Clock: mock, Seed: 1, Script: &script.Script{Containers: []script.ContainerRule{
		{Match: script.ContainerMatch{Name: "talker"}, Logs: &script.LogSpec{Lines: []string{"line {n}"}, Every: script.Duration(time.Second)}},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	dir := t.TempDir()
	logs := filepath.Join(dir, "logs", "0")
	pod := filepath.Join(logs, "default_web_uid-web")
	if _, err := rt.PullImage(ctx, &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: "app:1"}}); err != nil {
		t.Fatal(err)
	}
	sb, err := rt.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: &runtimeapi.PodSandboxConfig{
		Metadata:     &runtimeapi.PodSandboxMetadata{Name: "web", Namespace: "default", Uid: "uid-web"},
		LogDirectory: pod,
	}})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"talker", "quiet"} {
		c, err := rt.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: sb.PodSandboxId, Config: &runtimeapi.ContainerConfig{
			Metadata: &runtimeapi.ContainerMetadata{Name: name}, Image: &runtimeapi.ImageSpec{Image: "app:1"}, LogPath: name + "/0.log",
		}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := rt.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: c.ContainerId}); err != nil {
			t.Fatal(err)
		}
	}
	if err := rt.Advance(ctx, mock, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if _, err := rt.ListContainers(ctx, &runtimeapi.ListContainersRequest{}); err != nil { // writes the lines due
		t.Fatal(err)
	}
	outside := filepath.Join(dir, "root", "0", "pods", "uid-web", "volumes")
	if err := os.MkdirAll(outside, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(outside, "data"), []byte("0123456789"), 0o644); err != nil {
		t.Fatal(err)
	}
	measure := diskUsage(rt, logs)
	for _, path := range []string{
		filepath.Join(pod, "talker"), pod, filepath.Join(pod, "quiet"), filepath.Join(pod, "talker", "0.log"),
		filepath.Join(logs, "default_gone_uid-gone", "app"), outside,
	} {
		got, gotErr := measure(path)
		want, wantErr := volumestats.ApparentUsage(path)
		if got != want || (gotErr == nil) != (wantErr == nil) || gotErr != nil && gotErr.Error() != wantErr.Error() {
			t.Errorf("%s: %+v, %v; the walk: %+v, %v", path, got, gotErr, want, wantErr)
		}
		if gotErr != nil && !errors.Is(gotErr, fs.ErrNotExist) {
			t.Errorf("%s: %v is not fs.ErrNotExist", path, gotErr)
		}
	}
	if u, _ := measure(filepath.Join(pod, "talker")); u.Bytes == 0 {
		t.Errorf("the talker's log directory measured empty after 10 lines")
	}
}
