package pods

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/google/go-cmp/cmp"

	"orch.io/orch/components/apis/orchlet/v1beta1"
	"orch.io/orch/components/orchlet/pods/podsync"
	"orch.io/orch/components/orchlet/pods/qos"
)

func rl(pairs ...string) corev1.ResourceList {
	out := corev1.ResourceList{}
	for i := 0; i < len(pairs); i += 2 {
		out[corev1.ResourceName(pairs[i])] = resource.MustParse(pairs[i+1])
	}
	return out
}

func withResources(c corev1.Container, req, lim corev1.ResourceList) corev1.Container {
	c.Resources = corev1.ResourceRequirements{Requests: req, Limits: lim}
	return c
}

// sent returns the requests of method the runtime received, in order.
func sent[T proto.Message](h *harness, method string) []T {
	var out []T
	for _, c := range h.calls(method, "") {
		out = append(out, c.Message.(T))
	}
	return out
}

func diffProto(t *testing.T, what string, want, got proto.Message) {
	t.Helper()
	if d := cmp.Diff(want, got, protocmp.Transform()); d != "" {
		t.Errorf("%s (-want +got):\n%s", what, d)
	}
}

// The sandbox and container requests for each QoS class, from kuberuntime's
// generatePodSandboxLinuxConfig (calculateSandboxResources, convertOverheadToLinuxResources,
// GetPodCgroupParent) and generateLinuxContainerResources (calculateLinuxResources,
// GetContainerOOMScoreAdjust, GetHugepageLimitsFromResources).
func TestResourcesOnTheWire(t *testing.T) {
	cfg := config(func(c *v1beta1.OrchletConfiguration) {
		c.CgroupsPerQOS, c.CgroupRoot, c.CgroupDriver = true, "/", "systemd"
		c.CPUCFSQuota, c.CPUCFSQuotaPeriod.Duration = true, 50*time.Millisecond
	})
	node := Node{MemoryCapacity: 8 << 30, CgroupV2: true, HugePageSizes: []string{"1GB", "2MB"}}
	h := newHarness(t, nil, cfg, func(o *Options) { o.Node = node })
	pod := newPod("web",
		withResources(ctr("app", "nginx"), rl("cpu", "250m", "memory", "2Gi"), rl("cpu", "1", "memory", "4Gi", "hugepages-2Mi", "4Mi")),
		withResources(ctr("log", "busybox"), nil, rl("cpu", "500m")))
	pod.Spec.Overhead = rl("cpu", "100m", "memory", "64Mi")
	h.add(pod)
	h.runUntil(time.Second)

	sbs := sent[*runtimeapi.RunPodSandboxRequest](h, "RunPodSandbox")
	if len(sbs) != 1 {
		t.Fatalf("%d sandboxes", len(sbs))
	}
	oomGroup := map[string]string{"memory.oom.group": "1"}
	linux := sbs[0].Config.Linux
	if want := "/orchpods.slice/orchpods-burstable.slice/orchpods-burstable-poduid_web.slice"; linux.CgroupParent != want {
		t.Errorf("cgroup parent %q, want %q", linux.CgroupParent, want)
	}
	// Requests 250m (the log container has none: PodRequests does not default it); limits 1.5 CPU, 4Gi.
	diffProto(t, "sandbox resources", &runtimeapi.LinuxContainerResources{
		CpuShares: 256, CpuPeriod: 50000, CpuQuota: 75000, MemoryLimitInBytes: 4 << 30, Unified: oomGroup,
	}, linux.Resources)
	diffProto(t, "sandbox overhead", &runtimeapi.LinuxContainerResources{
		CpuShares: 102, CpuPeriod: 50000, CpuQuota: 5000, MemoryLimitInBytes: 64 << 20, Unified: oomGroup,
	}, linux.Overhead)

	ctrs := sent[*runtimeapi.CreateContainerRequest](h, "CreateContainer")
	if len(ctrs) != 2 {
		t.Fatalf("%d containers", len(ctrs))
	}
	diffProto(t, "app resources", &runtimeapi.LinuxContainerResources{
		CpuShares: 256, CpuPeriod: 50000, CpuQuota: 50000, MemoryLimitInBytes: 4 << 30,
		OomScoreAdj: 1000 - 1000*(2<<30)/(8<<30), Unified: oomGroup,
		HugepageLimits: []*runtimeapi.HugepageLimit{{PageSize: "1GB"}, {PageSize: "2MB", Limit: 4 << 20}},
	}, ctrs[0].Config.Linux.Resources)
	diffProto(t, "log resources", &runtimeapi.LinuxContainerResources{
		CpuShares: 512, CpuPeriod: 50000, CpuQuota: 25000, OomScoreAdj: 999, Unified: oomGroup,
		HugepageLimits: []*runtimeapi.HugepageLimit{{PageSize: "1GB"}, {PageSize: "2MB"}},
	}, ctrs[1].Config.Linux.Resources)
	// The sandbox config sent with CreateContainer is the one RunPodSandbox got, attempt and all.
	diffProto(t, "sandbox config with CreateContainer", sbs[0].Config, ctrs[0].SandboxConfig)
}

// Without --cpu-cfs-quota no quota or period is sent (calculateLinuxResources), and on cgroup v1
// no unified fields.
func TestNoCFSQuota(t *testing.T) {
	h := newHarness(t, nil, config(func(c *v1beta1.OrchletConfiguration) { c.CPUCFSQuota = false }), nil)
	h.add(newPod("p", withResources(ctr("a", "i"), rl("cpu", "1", "memory", "1Gi"), rl("cpu", "1", "memory", "1Gi"))))
	h.runUntil(time.Second)
	ctrs := sent[*runtimeapi.CreateContainerRequest](h, "CreateContainer")
	if len(ctrs) != 1 {
		t.Fatalf("%d containers", len(ctrs))
	}
	diffProto(t, "resources", &runtimeapi.LinuxContainerResources{CpuShares: 1024, MemoryLimitInBytes: 1 << 30, OomScoreAdj: -997}, ctrs[0].Config.Linux.Resources)
}

// The pod cgroup on a host, as ResourceConfigForPod and the pod container manager's pids limit
// make it, written as runc's fs2 manager writes it, and removed with the pod.
func TestPodCgroupOnHost(t *testing.T) {
	root := t.TempDir()
	// The root cgroup has no hugetlb controller: it is not enabled for the children.
	if err := os.WriteFile(filepath.Join(root, "cgroup.controllers"), []byte("cpuset cpu io memory pids"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := config(func(c *v1beta1.OrchletConfiguration) {
		c.CgroupsPerQOS, c.CgroupRoot, c.CgroupDriver = true, "/", "cgroupfs"
		c.CPUCFSQuota, c.CPUCFSQuotaPeriod.Duration, c.PodPidsLimit = true, 100*time.Millisecond, 256
	})
	h := newHarness(t, nil, cfg, func(o *Options) { o.Node = Node{Cgroups: qos.CgroupV2{Root: root}, MemoryCapacity: 1 << 30} })
	guaranteed := newPod("g", withResources(ctr("a", "i"), rl("cpu", "500m", "memory", "256Mi"), rl("cpu", "500m", "memory", "256Mi")))
	burstable := newPod("b", withResources(ctr("a", "i"), rl("cpu", "100m"), rl("memory", "128Mi")), ctr("b", "i"))
	besteffort := newPod("e", ctr("a", "i"))
	h.add(guaranteed, burstable, besteffort)
	h.runUntil(time.Second)
	for _, c := range []struct {
		dir   string
		files map[string]string
	}{
		{"orchpods/poduid-g", map[string]string{"cpu.weight": "20", "cpu.max": "50000 100000", "memory.max": "268435456", "pids.max": "256"}},
		// One container declares no CPU limit, one no memory limit: neither limit is set.
		{"orchpods/burstable/poduid-b", map[string]string{"cpu.weight": "4", "pids.max": "256"}},
		{"orchpods/besteffort/poduid-e", map[string]string{"cpu.weight": "1", "pids.max": "256"}},
	} {
		entries, err := os.ReadDir(filepath.Join(root, c.dir))
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		for _, e := range entries {
			data, _ := os.ReadFile(filepath.Join(root, c.dir, e.Name()))
			got[e.Name()] = string(data)
		}
		if d := cmp.Diff(c.files, got); d != "" {
			t.Errorf("%s (-want +got):\n%s", c.dir, d)
		}
	}
	if data, err := os.ReadFile(filepath.Join(root, "orchpods", "cgroup.subtree_control")); err != nil || !strings.Contains(string(data), "+pids") {
		t.Errorf("controllers not delegated: %q %v", data, err)
	}
	if data, err := os.ReadFile(filepath.Join(root, "cgroup.subtree_control")); err != nil || string(data) != "+cpu +memory +pids" {
		t.Errorf("root delegates %q %v, want the pod controllers it has", data, err)
	}
	// The QoS cgroups (qos_container_manager's setCPUCgroupConfig): Burstable shares for the sum
	// of the Burstable pods' CPU requests (100m: 102 shares, weight 4), BestEffort the minimum.
	weight := func(qos string) string {
		data, _ := os.ReadFile(filepath.Join(root, "orchpods", qos, "cpu.weight"))
		return string(data)
	}
	if weight("burstable") != "4" || weight("besteffort") != "1" {
		t.Errorf("QoS weights burstable %q besteffort %q, want 4 and 1", weight("burstable"), weight("besteffort"))
	}
	h.remove(burstable)
	h.runUntil(2 * time.Minute)
	if _, err := os.Stat(filepath.Join(root, "orchpods/burstable/poduid-b")); !os.IsNotExist(err) {
		t.Errorf("the pod cgroup outlived the pod: %v", err)
	}
	if weight("burstable") != "1" {
		t.Errorf("burstable weight %q once its only pod is gone, want 1", weight("burstable"))
	}
}

type failingCgroups struct{}

func (failingCgroups) Ensure(string, qos.PodCgroupConfig) error { return os.ErrPermission }
func (failingCgroups) Children(string) ([]string, error)        { return nil, nil }
func (failingCgroups) Destroy(string) error                     { return nil }

// A pod cgroup that cannot be made is the kubelet's FailedCreatePodContainer, and no sandbox runs.
func TestPodCgroupFailure(t *testing.T) {
	cfg := config(func(c *v1beta1.OrchletConfiguration) { c.CgroupsPerQOS, c.CgroupRoot = true, "/" })
	h := newHarness(t, nil, cfg, func(o *Options) { o.Node = Node{Cgroups: failingCgroups{}} })
	h.add(newPod("p", ctr("c", "i")))
	h.runUntil(time.Second)
	evs := h.rec.reasons(podsync.ReasonFailedCreatePodContainer)
	if len(evs) == 0 || !strings.HasPrefix(evs[0].note, "unable to ensure pod container exists: ") {
		t.Errorf("events %+v", evs)
	}
	if n := len(h.calls("RunPodSandbox", "")); n != 0 {
		t.Errorf("%d sandboxes without a pod cgroup", n)
	}
}
