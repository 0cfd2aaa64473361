package fakecri

import (
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// SandboxStats answers what ListPodSandboxStats does, without a line in the call log.
func TestSandboxStatsWithoutACall(t *testing.T) {
	f := newFixture(t, nil)
	f.runPod("web", nil)
	f.run("api", "app", "busybox", 0)
	f.advance(time.Minute)
	f.rt.ResetCalls()
	got := f.rt.SandboxStats()
	if n := len(f.rt.Calls(CallFilter{})); n != 0 {
		t.Fatalf("SandboxStats made %d calls", n)
	}
	want, err := f.rt.ListPodSandboxStats(f.ctx, &runtimeapi.ListPodSandboxStatsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) == 0 || len(got) != len(want.Stats) {
		t.Fatalf("SandboxStats has %d sandboxes, ListPodSandboxStats %d", len(got), len(want.Stats))
	}
	for i := range got {
		if !proto.Equal(got[i], want.Stats[i]) {
			t.Fatalf("sandbox %d: SandboxStats %v\nListPodSandboxStats %v", i, got[i], want.Stats[i])
		}
	}
}
