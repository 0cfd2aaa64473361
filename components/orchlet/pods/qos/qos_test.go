package qos

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"orch.io/orch/components/apis/orchlet/v1beta1"
	"orch.io/orch/components/orchlet/sources"
)

// rl is a resource list of name, quantity pairs.
func rl(pairs ...string) corev1.ResourceList {
	out := corev1.ResourceList{}
	for ; len(pairs) > 1; pairs = pairs[2:] {
		out[corev1.ResourceName(pairs[0])] = resource.MustParse(pairs[1])
	}
	return out
}

func withResources(c corev1.Container, req, lim corev1.ResourceList) corev1.Container {
	c.Resources.Requests, c.Resources.Limits = req, lim
	return c
}

func ctr(name, image string) corev1.Container { return corev1.Container{Name: name, Image: image} }

func newPod(name string, containers ...corev1.Container) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name)},
		Spec:       corev1.PodSpec{Containers: containers},
	}
}

func config(mod func(*v1beta1.OrchletConfiguration)) *v1beta1.OrchletConfiguration {
	c := &v1beta1.OrchletConfiguration{}
	if mod != nil {
		mod(c)
	}
	return c
}

// From cm.MilliCPUToShares and kuberuntime's milliCPUToQuota.
func TestCPUFormulas(t *testing.T) {
	for _, c := range []struct{ milli, shares int64 }{{0, 2}, {1, 2}, {5, 5}, {100, 102}, {250, 256}, {1000, 1024}, {300000, 262144}} {
		if got := MilliCPUToShares(c.milli); got != c.shares {
			t.Errorf("MilliCPUToShares(%d) = %d, want %d", c.milli, got, c.shares)
		}
	}
	for _, c := range []struct{ milli, period, quota int64 }{{0, 100000, 0}, {1, 100000, 1000}, {250, 100000, 25000}, {1500, 50000, 75000}, {2000, 100000, 200000}} {
		if got := milliCPUToQuota(c.milli, c.period); got != c.quota {
			t.Errorf("milliCPUToQuota(%d, %d) = %d, want %d", c.milli, c.period, got, c.quota)
		}
	}
	// cm.CpuSharesToCPUWeight.
	for _, c := range []struct{ shares, weight uint64 }{{2, 1}, {1024, 39}, {262144, 10000}} {
		if got := sharesToWeight(c.shares); got != c.weight {
			t.Errorf("sharesToWeight(%d) = %d, want %d", c.shares, got, c.weight)
		}
	}
}

// From ComputePodQOS (pkg/apis/core/v1/helper/qos) and its tests.
func TestPodQOS(t *testing.T) {
	for _, c := range []struct {
		name string
		ctrs []corev1.Container
		init []corev1.Container
		want corev1.PodQOSClass
	}{
		{"nothing", []corev1.Container{ctr("a", "i")}, nil, corev1.PodQOSBestEffort},
		{"zero requests", []corev1.Container{withResources(ctr("a", "i"), rl("cpu", "0"), nil)}, nil, corev1.PodQOSBestEffort},
		{"limits equal requests", []corev1.Container{withResources(ctr("a", "i"), rl("cpu", "1", "memory", "1Gi"), rl("cpu", "1", "memory", "1Gi"))}, nil, corev1.PodQOSGuaranteed},
		// Undefaulted (the API server would copy limits to requests): no requests is not Guaranteed.
		{"limits only", []corev1.Container{withResources(ctr("a", "i"), nil, rl("cpu", "1", "memory", "1Gi"))}, nil, corev1.PodQOSBurstable},
		{"cpu limit only", []corev1.Container{withResources(ctr("a", "i"), rl("cpu", "1"), rl("cpu", "1"))}, nil, corev1.PodQOSBurstable},
		{"request below limit", []corev1.Container{withResources(ctr("a", "i"), rl("cpu", "500m", "memory", "1Gi"), rl("cpu", "1", "memory", "1Gi"))}, nil, corev1.PodQOSBurstable},
		{"one container without", []corev1.Container{withResources(ctr("a", "i"), rl("cpu", "1", "memory", "1Gi"), rl("cpu", "1", "memory", "1Gi")), ctr("b", "i")}, nil, corev1.PodQOSBurstable},
		{"init container counts", []corev1.Container{withResources(ctr("a", "i"), rl("cpu", "1", "memory", "1Gi"), rl("cpu", "1", "memory", "1Gi"))}, []corev1.Container{ctr("init", "i")}, corev1.PodQOSBurstable},
		{"hugepages ignored", []corev1.Container{withResources(ctr("a", "i"), rl("hugepages-2Mi", "2Mi"), rl("hugepages-2Mi", "2Mi"))}, nil, corev1.PodQOSBestEffort},
	} {
		pod := newPod("p", c.ctrs...)
		pod.Spec.InitContainers = c.init
		if got := podQOS(pod); got != c.want {
			t.Errorf("%s: %s, want %s", c.name, got, c.want)
		}
	}
}

// From qos.GetContainerOOMScoreAdjust and its tests (memory capacity 4000 bytes as there).
func TestOOMScoreAdjust(t *testing.T) {
	const capacity = 4000
	always := corev1.ContainerRestartPolicyAlways
	critical := int32(systemCriticalPriority)
	for _, c := range []struct {
		name string
		pod  func() *corev1.Pod
		want int64
	}{
		{"best effort", func() *corev1.Pod { return newPod("p", ctr("a", "i")) }, 1000},
		{"guaranteed", func() *corev1.Pod {
			return newPod("p", withResources(ctr("a", "i"), rl("cpu", "1", "memory", "4000"), rl("cpu", "1", "memory", "4000")))
		}, -997},
		{"burstable half", func() *corev1.Pod {
			return newPod("p", withResources(ctr("a", "i"), rl("memory", "2000"), nil))
		}, 500},
		{"burstable tiny request", func() *corev1.Pod {
			return newPod("p", withResources(ctr("a", "i"), rl("cpu", "1m"), nil))
		}, 999},
		{"burstable over capacity", func() *corev1.Pod {
			return newPod("p", withResources(ctr("a", "i"), rl("memory", "8000"), nil))
		}, 3},
		{"node critical static pod", func() *corev1.Pod {
			p := newPod("p", ctr("a", "i"))
			p.Annotations = map[string]string{sources.ConfigSourceAnnotation: "file"}
			p.Spec.PriorityClassName = "system-node-critical"
			return p
		}, -997},
		{"critical priority, not node critical", func() *corev1.Pod {
			p := newPod("p", ctr("a", "i"))
			p.Spec.Priority = &critical
			return p
		}, 1000},
		{"sidecar no higher than the smallest app container", func() *corev1.Pod {
			p := newPod("p", withResources(ctr("a", "i"), rl("memory", "2000"), nil))
			sc := withResources(ctr("side", "i"), rl("memory", "400"), nil)
			sc.RestartPolicy = &always
			p.Spec.InitContainers = []corev1.Container{sc}
			return p
		}, 500},
	} {
		pod := c.pod()
		target := &pod.Spec.Containers[0]
		if len(pod.Spec.InitContainers) > 0 {
			target = &pod.Spec.InitContainers[0]
		}
		if got := oomScoreAdjust(pod, target, capacity); got != c.want {
			t.Errorf("%s: %d, want %d", c.name, got, c.want)
		}
	}
}

// From pod_container_manager's GetPodContainerName with CgroupName.ToCgroupfs / ToSystemd.
func TestCgroupParent(t *testing.T) {
	guaranteed := newPod("g", withResources(ctr("a", "i"), rl("cpu", "1", "memory", "1Gi"), rl("cpu", "1", "memory", "1Gi")))
	burstable := newPod("b", withResources(ctr("a", "i"), rl("cpu", "100m"), nil))
	besteffort := newPod("e", ctr("a", "i"))
	burstable.UID = "0c5a-77"
	for _, c := range []struct {
		name   string
		mod    func(*v1beta1.OrchletConfiguration)
		pod    *corev1.Pod
		parent string
	}{
		{"no QoS cgroups", func(c *v1beta1.OrchletConfiguration) { c.CgroupsPerQOS = false }, burstable, ""},
		{"cgroupfs guaranteed", nil, guaranteed, "/orchpods/poduid-g"},
		{"cgroupfs burstable", nil, burstable, "/orchpods/burstable/pod0c5a-77"},
		{"cgroupfs besteffort under a root", func(c *v1beta1.OrchletConfiguration) { c.CgroupRoot = "/custom/root" }, besteffort, "/custom/root/orchpods/besteffort/poduid-e"},
		{"systemd guaranteed", func(c *v1beta1.OrchletConfiguration) { c.CgroupDriver = "systemd" }, guaranteed, "/orchpods.slice/orchpods-poduid_g.slice"},
		{"systemd burstable", func(c *v1beta1.OrchletConfiguration) { c.CgroupDriver = "systemd" }, burstable, "/orchpods.slice/orchpods-burstable.slice/orchpods-burstable-pod0c5a_77.slice"},
	} {
		cfg := config(func(c *v1beta1.OrchletConfiguration) {
			c.CgroupsPerQOS, c.CgroupRoot, c.CgroupDriver = true, "/", "cgroupfs"
		})
		if c.mod != nil {
			c.mod(cfg)
		}
		m, err := New(cfg, Host{})
		if err != nil {
			t.Fatal(err)
		}
		if got := m.PodCgroupParent(c.pod); got != c.parent {
			t.Errorf("%s: %q, want %q", c.name, got, c.parent)
		}
	}
}

func TestResourceSettingsRefused(t *testing.T) {
	for _, c := range []struct {
		mod  func(*v1beta1.OrchletConfiguration)
		want string
	}{
		{func(c *v1beta1.OrchletConfiguration) { c.CgroupDriver = "other" }, "--cgroup-driver (cgroupDriver)"},
		{func(c *v1beta1.OrchletConfiguration) { c.CgroupRoot = "relative" }, "--cgroup-root (cgroupRoot)"},
		{func(c *v1beta1.OrchletConfiguration) { c.CgroupDriver, c.CgroupRoot = "systemd", "/foo.slice" }, "only / is supported"},
		{func(c *v1beta1.OrchletConfiguration) { c.CPUCFSQuotaPeriod.Duration = 2 * time.Second }, "--cpu-cfs-quota-period (cpuCFSQuotaPeriod)"},
	} {
		_, err := New(config(c.mod), Host{})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("error %v, want one naming %q", err, c.want)
		}
	}
}
