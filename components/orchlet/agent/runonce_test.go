package agent

import (
	"context"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/benbjohnson/clock"
	"k8s.io/klog/v2"

	"orch.io/orch/components/apis/orchlet/v1beta1"
	"orch.io/orch/components/orchlet/events"
	"orch.io/orch/components/orchlet/pods"
	"orch.io/orch/components/syncbuf"
	"orch.io/orch/fakecri"
	"orch.io/orch/fakecri/fakecritest"
	"orch.io/orch/fakecri/script"
)

// --runonce starts the static pods and reports each: a pod whose containers run succeeds, one that
// crashes on every start is reported failed after the checks run out.
func TestRunOnce(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	script := &script.Script{Containers: []script.ContainerRule{{Match: script.ContainerMatch{Name: "crasher"}, StartError: "exec: no such file"}}}
	_, sock := fakecritest.Start(t, fakecri.Options{Seed: 1, Script: script})
	rs, is, err := pods.Connect(ctx, sock, "", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	cfg := v1beta1.NewDefault()
	cfg.StaticPodPath = "/m"
	crash := strings.NewReplacer("name: web", "name: broken", "name: app", "name: crasher").Replace(webManifest)
	fsys := fstest.MapFS{"m/web.yaml": {Data: []byte(webManifest)}, "m/broken.yaml": {Data: []byte(crash)}}
	a, err := New(cfg, Deps{Clock: clock.New(), NodeName: "node-a", Runtime: rs, Images: is, Sink: events.NewLogSink(&syncbuf.Buffer{}),
		FS: fsys, Cores: 2, PodLogsDir: t.TempDir(), Logger: klog.Background(), Gates: gatesOf(t, cfg)})
	if err != nil {
		t.Fatal(err)
	}
	results, err := a.RunOnce(ctx, 4, 20*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if len(results) != 2 || results[0].Name != "broken-node-a" || results[1].Name != "web-node-a" {
		t.Fatalf("results = %+v", results)
	}
	if results[0].Err == nil || !strings.Contains(results[0].Err.Error(), "not running after 4 checks") {
		t.Errorf("crashing pod: %v, want not running after 4 checks", results[0].Err)
	}
	if results[1].Err != nil {
		t.Errorf("running pod: %v", results[1].Err)
	}
}
