package app

import (
	"errors"
	"path/filepath"
	"slices"

	corev1 "k8s.io/api/core/v1"
	cri "k8s.io/cri-api/pkg/apis"
	"k8s.io/klog/v2"

	"orch.io/orch/components/featuregates"
	"orch.io/orch/components/orchlet/cm"
	"orch.io/orch/components/orchlet/eviction"
	"orch.io/orch/components/orchlet/host"
	"orch.io/orch/components/orchlet/options"
)

// criStats is the runtime's stats and image filesystem calls, for the eviction observer.
type criStats struct {
	cri.RuntimeService
	cri.ImageManagerService
}

// newObserver observes this machine for the eviction manager: the root memory cgroup (v2, or v1's
// memory controller) under the host's sysfs, its procfs, statfs of --root-dir, and the runtime's
// pod stats and image filesystem; a simulated machine's are not observed. With node allocatable
// enforced on pods, the pods' memory is watched against their cgroup's limit: capacity less the
// reservations.
func newObserver(o *options.Options, h host.Host, res cm.Resources, rs cri.RuntimeService, is cri.ImageManagerService) eviction.Observer {
	c := o.Config
	var node eviction.NodeSource = unobserved{}
	if sys := h.Sysfs(); sys != "" {
		node = eviction.HostNode{CgroupRoot: filepath.Join(sys, "fs", "cgroup"), ProcRoot: h.Procfs()}
	}
	obs := &eviction.CRIObserver{
		Node: node, CRI: criStats{rs, is},
		RootDir: o.Flags.RootDir, SeparateDiskGC: o.Gates.Enabled(featuregates.OrchletSeparateDiskGC),
	}
	if slices.Contains(c.EnforceNodeAllocatable, "pods") {
		limit := res.PodsLimits[corev1.ResourceMemory]
		obs.AllocatableMemory = uint64(max(limit.Value(), 0))
	}
	return obs
}

// hostMemcg is --kernel-memcg-notification on this machine: cgroup v1's memory controller arms
// the memory thresholds, the allocatable one on the pods' cgroup (orchpods under --cgroup-root,
// or its systemd slice); elsewhere the reason there is none.
func hostMemcg(o *options.Options, h host.Host) (*eviction.MemcgNotifications, string) {
	c := o.Config
	if !c.KernelMemcgNotification {
		return nil, ""
	}
	if h.Sysfs() == "" {
		return nil, errSimulated.Error()
	}
	pods := ""
	if c.CgroupsPerQOS {
		pods = cm.PodsCgroup(c)
	}
	return eviction.HostMemcg(filepath.Join(h.Sysfs(), "fs", "cgroup"), filepath.Join(h.Procfs(), "mounts"), pods, eviction.LinuxNotifierFactory{Logger: klog.Background()})
}

var errSimulated = errors.New("a simulated machine has no procfs or sysfs")

// unobserved is a simulated machine to the eviction manager: nothing of the real one is read, so
// its rounds decide on what the runtime reports of the pods alone.
type unobserved struct{}

func (unobserved) Memory() (capacity, usage, workingSet uint64, err error) {
	return 0, 0, 0, errSimulated
}
func (unobserved) Statfs(string) (eviction.FsStats, error) { return eviction.FsStats{}, errSimulated }
func (unobserved) Pids() (max, running uint64, err error)  { return 0, 0, errSimulated }
