package agent

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"orch.io/orch/components/apis/orchlet/v1beta1"
	"orch.io/orch/fakecri/script"
)

func TestEnableGC(t *testing.T) {
	script, err := script.Parse([]byte(`node: {imageFs: {mountpoint: /images, capacity: 1Gi, used: 900Mi}, preloadImages: ["free:1"]}`))
	if err != nil {
		t.Fatal(err)
	}
	w := newWorld(t, script)
	cfg := v1beta1.NewDefault()
	cfg.ImageMinimumGCAge.Duration = 0
	if err := w.agent.EnableGC(cfg, GCSettings{FsInfo: w.rt, MaxDeadPerContainer: 1, MaxDead: -1}); err != nil {
		t.Fatal(err)
	}
	w.runUntil(time.Second) // the web pod runs
	w.agent.GC.Images.Step(w.ctx)
	imgs, err := w.rt.ListImages(w.ctx, &runtimeapi.ListImagesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, img := range imgs.Images {
		for _, tag := range img.RepoTags {
			if tag == "docker.io/library/free:1" {
				t.Fatal("over the high threshold, the unused image stayed")
			}
		}
	}
	// The pods the workers have are not garbage; a pod they do not know is.
	web, ok := findPod(w, "web-node-a")
	if !ok {
		t.Fatal("web not running")
	}
	if (podState{w.agent}).ShouldPodContentBeRemoved(web) || !(podState{w.agent}).ShouldPodContentBeRemoved("gone") {
		t.Fatal("podState: a running pod's content is garbage, or a gone pod's is not")
	}

	// imageMaximumGCAge acts only with its gate: with a high threshold of 100 it alone keeps the
	// periodic collection on.
	cfg.ImageGCHighThresholdPercent, cfg.ImageMaximumGCAge.Duration = 100, time.Hour
	for _, gate := range []bool{false, true} {
		if err := w.agent.EnableGC(cfg, GCSettings{FsInfo: w.rt, MaxImageAge: gate}); err != nil {
			t.Fatal(err)
		}
		if on := w.agent.GC.Images.Collecting(); on != gate {
			t.Errorf("gate %t: periodic image collection on = %t", gate, on)
		}
	}
	cfg.ImageGCHighThresholdPercent = 101
	if err := w.agent.EnableGC(cfg, GCSettings{FsInfo: w.rt}); err == nil {
		t.Error("an invalid policy was accepted")
	}
}

func findPod(w *world, name string) (types.UID, bool) {
	for _, p := range w.agent.Pods.Pods() {
		if p.Name == name {
			return p.UID, true
		}
	}
	return "", false
}
