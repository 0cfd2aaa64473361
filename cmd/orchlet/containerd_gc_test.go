//go:build e2e

package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"orch.io/orch/components/orchlet/app/apptest"
)

// e2eUnusedImage is an image no pod uses: a config of its own, so an image id of its own.
const e2eUnusedImage = "orch.local/unused:1"

// TestStandaloneGCOnContainerd: image garbage collection deletes a real unused image from
// containerd and keeps the one in use, and dead containers are collected down to
// --maximum-dead-containers-per-container (1, the default). Images are collected at start (then
// every 5m), with thresholds every disk crosses; the image in use is used from before the agent
// starts, by a container someone else runs. Dead containers are collected at start and every
// minute: the crash loop leaves four dead instances by 31s, the collection at 1m keeps the newest.
func TestStandaloneGCOnContainerd(t *testing.T) {
	ctd := startContainerd(t)
	archive := filepath.Join(ctd.dir, "unused.tar")
	if err := writeBusyboxImages(archive, map[string][]string{e2eUnusedImage: {"Cmd", "true"}}); err != nil {
		t.Fatal(err)
	}
	ctd.ctr(t, "images", "import", archive)
	endpoint := "unix://" + ctd.sock
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	rs, is := connectRuntime(ctx, t, endpoint)
	podName := e2ePodName + "-" + e2eNode
	cleanupPodLogs(t, podName)
	// Someone else's container uses the busybox image before the agent starts.
	sbCfg := &runtimeapi.PodSandboxConfig{
		Metadata: &runtimeapi.PodSandboxMetadata{Name: "foreign", Namespace: "other", Uid: "foreign-uid"},
		Linux:    &runtimeapi.LinuxPodSandboxConfig{SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{NamespaceOptions: &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_NODE}}},
	}
	sb, err := rs.RunPodSandbox(ctx, sbCfg, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rs.CreateContainer(ctx, sb, &runtimeapi.ContainerConfig{
		Metadata: &runtimeapi.ContainerMetadata{Name: "user"}, Image: &runtimeapi.ImageSpec{Image: e2eImage},
		Command: []string{"sleep", "3600"},
	}, sbCfg); err != nil {
		t.Fatal(err)
	}

	manifests := t.TempDir()
	if err := os.WriteFile(filepath.Join(manifests, "e2e.yaml"), []byte(e2eManifest), 0o644); err != nil {
		t.Fatal(err)
	}
	eventually := func(what string, within time.Duration, cond func() (bool, error)) {
		apptest.WaitWithin(t, clock.New(), what, within, cond)
	}
	// dead is the crasher's dead instances, by attempt.
	dead := func() map[uint32]bool {
		_, ctrs := listPod(t, rs, podName)
		out := map[uint32]bool{}
		for _, c := range ctrs {
			if c.Metadata.Name == "crasher" && c.State == runtimeapi.ContainerState_CONTAINER_EXITED {
				out[c.Metadata.Attempt] = true
			}
		}
		return out
	}

	// Usage of 1% or more (any real disk) crosses the high threshold; everything unused is old
	// enough at once.
	started := time.Now()
	a := startServing(t, "--container-runtime-endpoint", endpoint, "--pod-manifest-path", manifests,
		"--file-check-frequency=1s", "--hostname-override="+e2eNode, "--fail-swap-on=false", "--cgroup-driver=cgroupfs",
		"--cert-dir="+t.TempDir(), "--image-gc-high-threshold=1", "--image-gc-low-threshold=0",
		"--minimum-image-ttl-duration=0s", "--pod-infra-container-image="+e2ePauseImage)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("orchlet stderr:\n%s", a.stderr.String())
		}
	})
	eventually("the unused image deleted from containerd", 20*time.Second, func() (bool, error) {
		return !imagePresent(ctx, t, is, e2eUnusedImage), fmt.Errorf("%s still present", e2eUnusedImage)
	})
	for _, img := range []string{e2eImage, e2eLatestImage, e2ePauseImage} {
		if !imagePresent(ctx, t, is, img) {
			t.Errorf("%s, in use or the sandbox image, was deleted", img)
		}
	}
	if out := ctd.ctr(t, "images", "ls", "-q"); strings.Contains(out, e2eUnusedImage) || !strings.Contains(out, e2eImage) {
		t.Errorf("ctr images ls after the collection:\n%s", out)
	}
	// Disk usage stays above the low threshold of 0%: the collection falls short and says so.
	eventually("a FreeDiskSpaceFailed event about the node", 10*time.Second, func() (bool, error) {
		return hasEvent(a.stderr.String(), e2eNode, "", "FreeDiskSpaceFailed"), fmt.Errorf("no event yet")
	})

	// Attempts 0-3 are dead by about 31s; the collection at 1m keeps only the newest dead instance
	// (attempt 4 dies at about 71s, to be collected at 2m).
	eventually("four dead crasher instances", 50*time.Second, func() (bool, error) {
		d := dead()
		return len(d) >= 4, fmt.Errorf("dead attempts %v", d)
	})
	if since := time.Since(started); since > 55*time.Second {
		t.Fatalf("four dead instances only %v after the start: the collection at 1m may have run", since)
	}
	eventually("dead crasher instances cut to the per-container cap of 1", 30*time.Second, func() (bool, error) {
		d := dead()
		return len(d) == 1 && d[3], fmt.Errorf("dead attempts %v", d)
	})
	t.Logf("dead instances cut to one %v after the start", time.Since(started).Round(time.Millisecond))
	client := &http.Client{Timeout: 2 * time.Second}
	eventually("the sleeper Running after the collections", 10*time.Second, func() (bool, error) {
		list, err := getPods(client, "http://127.0.0.1:"+a.readOnly+"/pods")
		if err != nil {
			return false, err
		}
		s, ok := containerStatus(list, podName, "sleeper")
		return ok && s.State.Running != nil, fmt.Errorf("sleeper %+v", s.State)
	})
	if err := a.stop(t); err != nil {
		t.Fatalf("orchlet after SIGTERM: %v", err)
	}
}

// imagePresent asks the runtime whether it has the image.
func imagePresent(ctx context.Context, t *testing.T, is interface {
	ImageStatus(context.Context, *runtimeapi.ImageSpec, bool) (*runtimeapi.ImageStatusResponse, error)
}, name string) bool {
	t.Helper()
	st, err := is.ImageStatus(ctx, &runtimeapi.ImageSpec{Image: name}, false)
	if err != nil {
		t.Fatal(err)
	}
	return st.GetImage() != nil
}
