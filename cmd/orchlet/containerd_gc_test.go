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

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"orch.io/orch/components/orchlet/pods"
)

// e2eUnusedImage is an image no pod uses: a config of its own, so an image id of its own.
const e2eUnusedImage = "orch.local/unused:1"

// TestStandaloneGCOnContainerd: image garbage collection deletes a real unused image from
// containerd and keeps the ones in use, and dead containers are collected down to
// --maximum-dead-containers-per-container. Both collectors run once at start, then every 5m and
// 1m: a first agent runs the crash-looping pod, keeping every dead instance; a second one adopts
// it with thresholds every disk crosses, so its collections at start do the work.
func TestStandaloneGCOnContainerd(t *testing.T) {
	ctd := startContainerd(t)
	archive := filepath.Join(ctd.dir, "unused.tar")
	if err := writeBusyboxImages(archive, map[string][]string{e2eUnusedImage: {"Cmd", "true"}}); err != nil {
		t.Fatal(err)
	}
	ctd.ctr(t, "images", "import", archive)
	endpoint := "unix://" + ctd.sock
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rs, is, err := pods.Connect(ctx, endpoint, "", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { removeAllSandboxes(rs) })
	podName := e2ePodName + "-" + e2eNode
	_, statErr := os.Stat(e2ePodsDir)
	t.Cleanup(func() {
		removePodLogs(podName)
		if os.IsNotExist(statErr) {
			_ = os.Remove(e2ePodsDir)
		}
	})
	manifests := t.TempDir()
	if err := os.WriteFile(filepath.Join(manifests, "e2e.yaml"), []byte(e2eManifest), 0o644); err != nil {
		t.Fatal(err)
	}
	common := []string{"--container-runtime-endpoint", endpoint, "--pod-manifest-path", manifests,
		"--file-check-frequency=1s", "--hostname-override=" + e2eNode, "--fail-swap-on=false", "--cgroup-driver=cgroupfs"}
	eventually := func(what string, within time.Duration, cond func() (bool, error)) {
		t.Helper()
		deadline := time.Now().Add(within)
		var last error
		for time.Now().Before(deadline) {
			ok, err := cond()
			if ok {
				return
			}
			last = err
			time.Sleep(50 * time.Millisecond)
		}
		t.Fatalf("%s: not within %v (last error %v)", what, within, last)
	}
	dead := func() (n int, err error) {
		_, ctrs := listPod(t, rs, podName)
		for _, c := range ctrs {
			if c.Metadata.Name == "crasher" && c.State == runtimeapi.ContainerState_CONTAINER_EXITED {
				n++
			}
		}
		return n, fmt.Errorf("%d dead crasher instances", n)
	}

	// The first agent: no image collection, every dead instance kept; three dead crashers.
	first := startServing(t, append(common, "--cert-dir="+t.TempDir(), "--image-gc-high-threshold=100",
		"--maximum-dead-containers-per-container=-1")...)
	eventually("three dead crasher instances", 40*time.Second, func() (bool, error) {
		n, err := dead()
		return n >= 3, err
	})
	if err := first.stop(t); err != nil {
		t.Fatalf("the first orchlet after SIGTERM: %v", err)
	}
	if !imagePresent(ctx, t, is, e2eUnusedImage) {
		t.Fatal("the unused image went while image collection was off")
	}

	// The second agent adopts the pod. Usage of 1% or more (any real disk) crosses the high
	// threshold; everything unused is old enough at once.
	second := startServing(t, append(common, "--cert-dir="+t.TempDir(), "--image-gc-high-threshold=1",
		"--image-gc-low-threshold=0", "--minimum-image-ttl-duration=0s", "--pod-infra-container-image="+e2ePauseImage)...)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("orchlet stderr:\n%s", second.stderr.String())
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
		return hasEvent(second.stderr.String(), e2eNode, "", "FreeDiskSpaceFailed"), fmt.Errorf("no event yet")
	})
	eventually("dead crasher instances cut to the per-container cap of 1", 20*time.Second, func() (bool, error) {
		n, err := dead()
		return n <= 1, err
	})
	list, err := getPods(&http.Client{Timeout: 2 * time.Second}, "http://127.0.0.1:"+second.readOnly+"/pods")
	if err != nil {
		t.Fatal(err)
	}
	if s, ok := containerStatus(list, podName, "sleeper"); !ok || s.State.Running == nil {
		t.Errorf("the sleeper after the collections: %+v", s.State)
	}
	if err := second.stop(t); err != nil {
		t.Fatalf("the second orchlet after SIGTERM: %v", err)
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
