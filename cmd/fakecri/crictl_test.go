package main

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"orch.io/orch/fakecri/fakecritest"
	"sigs.k8s.io/yaml"
)

// crictl is not installable here; this test makes the calls crictl makes
// for each command of the walkthrough in fakecri/README.md, with the
// example config files read as crictl reads them, and checks what crictl
// needs from each answer.
func TestCrictlWalkthrough(t *testing.T) {
	s := startServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rs, is := fakecritest.Clients(t, s.endpoint)

	load := func(path string, into any) {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := yaml.Unmarshal(b, into); err != nil {
			t.Fatal(err)
		}
	}
	var podCfg runtimeapi.PodSandboxConfig
	var ctrCfg runtimeapi.ContainerConfig
	load("../../fakecri/examples/pod-config.json", &podCfg)
	load("../../fakecri/examples/container-config.json", &ctrCfg)
	if podCfg.LogDirectory == "" || ctrCfg.Linux.GetResources().GetMemoryLimitInBytes() == 0 {
		t.Fatal("example configs did not load")
	}
	// crictl info: every info value that looks like an object must be one
	jsonInfo := func(info map[string]string) {
		t.Helper()
		for k, v := range info {
			if strings.HasPrefix(v, "{") {
				var m map[string]any
				if err := json.Unmarshal([]byte(v), &m); err != nil {
					t.Fatalf("info[%s] is not JSON: %v", k, err)
				}
			}
		}
	}

	// crictl version
	if v, err := rs.Version(ctx, ""); err != nil || v.RuntimeName == "" {
		t.Fatal(v, err)
	}
	// crictl info
	st, err := rs.Status(ctx, true)
	if err != nil {
		t.Fatal(err)
	}
	jsonInfo(st.Info)
	if _, err := protojson.Marshal(st.Status); err != nil {
		t.Fatal(err)
	}
	// crictl pull nginx:1.27 ; crictl images
	ref, err := is.PullImage(ctx, &runtimeapi.ImageSpec{Image: "nginx:1.27"}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	imgs, err := is.ListImages(ctx, nil)
	if err != nil || len(imgs) != 1 || imgs[0].Id != ref || imgs[0].Size == 0 || len(imgs[0].RepoDigests) != 1 {
		t.Fatal(imgs, err)
	}
	// crictl runp pod-config.json
	pod, err := rs.RunPodSandbox(ctx, &podCfg, "")
	if err != nil {
		t.Fatal(err)
	}
	// crictl inspectp
	ps, err := rs.PodSandboxStatus(ctx, pod, true)
	if err != nil || ps.Status.Network.Ip == "" {
		t.Fatal(ps, err)
	}
	jsonInfo(ps.Info)
	// crictl create POD container-config.json pod-config.json ; crictl start
	cid, err := rs.CreateContainer(ctx, pod, &ctrCfg, &podCfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := rs.StartContainer(ctx, cid); err != nil {
		t.Fatal(err)
	}
	// crictl ps -a
	list, err := rs.ListContainers(ctx, &runtimeapi.ContainerFilter{})
	if err != nil || len(list) != 1 || list[0].Image.Image != "nginx:1.27" || list[0].CreatedAt == 0 || list[0].PodSandboxId != pod {
		t.Fatal(list, err)
	}
	// crictl inspect
	cs, err := rs.ContainerStatus(ctx, cid, true)
	if err != nil || cs.Status.Annotations["note"] == "" || cs.Status.Labels["tier"] != "web" ||
		cs.Status.LogPath != "/tmp/fakecri-logs/nginx.0.log" {
		t.Fatal(cs, err)
	}
	jsonInfo(cs.Info)
	// crictl stats: two samples; the CPU timestamp must move and the counter grow
	a, err := rs.ListContainerStats(ctx, &runtimeapi.ContainerStatsFilter{})
	if err != nil || len(a) != 1 {
		t.Fatal(a, err)
	}
	time.Sleep(20 * time.Millisecond)
	b, _ := rs.ListContainerStats(ctx, &runtimeapi.ContainerStatsFilter{})
	if b[0].Cpu.Timestamp <= a[0].Cpu.Timestamp || b[0].Cpu.UsageCoreNanoSeconds.Value <= a[0].Cpu.UsageCoreNanoSeconds.Value ||
		b[0].Memory.WorkingSetBytes.Value == 0 || b[0].WritableLayer.InodesUsed == nil {
		t.Fatal(a, b)
	}
	// crictl exec -s ID echo hello
	out, _, err := rs.ExecSync(ctx, cid, []string{"echo", "hello"}, 0)
	if err != nil || string(out) != "hello\n" {
		t.Fatal(string(out), err)
	}
	// crictl imagefsinfo
	if fs, err := is.ImageFsInfo(ctx); err != nil || fs.ImageFilesystems[0].FsId.Mountpoint == "" {
		t.Fatal(fs, err)
	}
	// crictl rm (running): stopped first, as the CRI asks; then crictl stop of the gone
	// container succeeds, and so does crictl rm again
	if err := rs.RemoveContainer(ctx, cid); err != nil {
		t.Fatal(err)
	}
	if err := rs.StopContainer(ctx, cid, 0); err != nil {
		t.Fatal(err)
	}
	if err := rs.RemoveContainer(ctx, cid); err != nil {
		t.Fatal(err)
	}
	// crictl stopp ; crictl rmp
	if err := rs.StopPodSandbox(ctx, pod); err != nil {
		t.Fatal(err)
	}
	if err := rs.RemovePodSandbox(ctx, pod); err != nil {
		t.Fatal(err)
	}
	// crictl rmi nginx:1.27
	if err := is.RemoveImage(ctx, &runtimeapi.ImageSpec{Image: "nginx:1.27"}); err != nil {
		t.Fatal(err)
	}
	if st, _ := is.ImageStatus(ctx, &runtimeapi.ImageSpec{Image: "nginx:1.27"}, false); st.Image != nil {
		t.Fatal("image still there")
	}
}
