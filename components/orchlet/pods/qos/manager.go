package qos

import (
	"fmt"
	"path"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"orch.io/orch/components/apis/orchlet/v1beta1"
)

// Host is what the Manager knows of the machine.
type Host struct {
	// CgroupV2 says the unified hierarchy is mounted, where the kubelet asks for memory.oom.group.
	CgroupV2 bool
	// MemoryCapacity is the machine's memory in bytes, for Burstable containers' OOM score.
	MemoryCapacity int64
	// HugePageSizes are the host's huge page sizes as Kubernetes names them ("2MB", "1GB").
	HugePageSizes []string
	// Cgroups makes and removes pod cgroups on a real host; nil leaves them to the runtime.
	Cgroups PodCgroups
}

// Manager sizes the resources of pods and containers and makes their cgroups, from the cgroup and
// resource options read once.
type Manager struct {
	perQOS, systemd bool
	root            []string // the --cgroup-root's components
	cfsQuota        bool
	cfsPeriod       int64 // microseconds
	pidsLimit       int64
	cgroupV2        bool
	memoryCapacity  int64
	hugePageSizes   []string
	host            PodCgroups
}

// New reads --cgroups-per-qos, --cgroup-driver, --cgroup-root, --cpu-cfs-quota,
// --cpu-cfs-quota-period and --pod-max-pids as the kubelet does, refusing what it refuses.
func New(c *v1beta1.OrchletConfiguration, h Host) (*Manager, error) {
	m := &Manager{
		perQOS: c.CgroupsPerQOS, cfsQuota: c.CPUCFSQuota, pidsLimit: c.PodPidsLimit,
		cgroupV2: h.CgroupV2, memoryCapacity: h.MemoryCapacity, hugePageSizes: h.HugePageSizes,
		cfsPeriod: quotaPeriod, host: h.Cgroups,
	}
	switch c.CgroupDriver {
	case "", "cgroupfs":
	case "systemd":
		m.systemd = true
	default:
		return nil, fmt.Errorf("pods: --cgroup-driver (cgroupDriver) %q: must be cgroupfs or systemd", c.CgroupDriver)
	}
	if p := c.CPUCFSQuotaPeriod.Duration; p != 0 {
		if p < time.Millisecond || p > time.Second {
			return nil, fmt.Errorf("pods: --cpu-cfs-quota-period (cpuCFSQuotaPeriod) %v: must be between 1ms and 1s", p)
		}
		m.cfsPeriod = int64(p / time.Microsecond)
	}
	// The kubelet defaults the root to / when --cgroups-per-qos is on and none is given.
	root := c.CgroupRoot
	if root != "" && !strings.HasPrefix(root, "/") {
		return nil, fmt.Errorf("pods: --cgroup-root (cgroupRoot) %q: must be an absolute path", root)
	}
	for _, p := range strings.Split(root, "/") {
		if p != "" {
			m.root = append(m.root, p)
		}
	}
	if m.systemd && len(m.root) > 0 {
		// ParseCgroupfsToCgroupName keeps a slice path's components whole, which ToSystemd then
		// cannot expand into the slice the user meant.
		return nil, fmt.Errorf("pods: --cgroup-root (cgroupRoot) %q: with --cgroup-driver=systemd only / is supported", root)
	}
	return m, nil
}

// PodCgroupParent is the sandbox's CgroupParent: the pod's cgroup, "" without --cgroups-per-qos.
func (m *Manager) PodCgroupParent(pod *corev1.Pod) string {
	return m.cgroupParent(m.podCgroupName(pod))
}

// EnsurePod makes the pod's cgroup on the host, after sizing the QoS cgroups for the pods live
// (admitted, not being removed) with it, as the pod container manager's EnsureExists does. Without
// --cgroups-per-qos or a host's cgroups, the runtime makes them and EnsurePod does nothing.
func (m *Manager) EnsurePod(pod *corev1.Pod, live func() []*corev1.Pod) error {
	name := m.podCgroupName(pod)
	if name == nil || m.host == nil {
		return nil
	}
	if err := m.updateQOSCgroups(live()); err != nil {
		return err
	}
	return m.host.Ensure(m.cgroupParent(name), m.podCgroupConfig(pod))
}

// RemovePod deletes the pod's cgroup and sizes the QoS cgroups again for the pods live without it.
// Like the kubelet's pod container manager's Destroy, it first kills what still runs in the pod's
// cgroups: a process the runtime lost track of (a task containerd stranded, whose container it
// reports exited) would keep them, and the pod, forever.
func (m *Manager) RemovePod(pod *corev1.Pod, live func() []*corev1.Pod) error {
	name := m.podCgroupName(pod)
	if name == nil || m.host == nil {
		return nil
	}
	if err := m.host.Destroy(m.cgroupParent(name)); err != nil {
		return fmt.Errorf("removing the pod cgroup: %w", err)
	}
	return m.updateQOSCgroups(live())
}

// MakesPodCgroups says the agent makes pod cgroups on the host (--cgroups-per-qos, a host's
// cgroups), and so finds and removes the orphaned ones.
func (m *Manager) MakesPodCgroups() bool { return m.perQOS && m.host != nil }

// PodCgroups lists the pod cgroups under the QoS cgroups in any hierarchy, as the pod container
// manager's GetAllPodsFromCgroups: a cgroup named pod<uid> (escaped in the systemd driver's slice
// name) directly under orchpods, its burstable or its besteffort cgroup.
func (m *Manager) PodCgroups() ([]PodCgroup, error) {
	if !m.MakesPodCgroups() {
		return nil, nil
	}
	base := append(append([]string{}, m.root...), nodeAllocatableCgroup)
	// Capped, so that the two QoS paths appended below never share base's spare room (the
	// compiler may give a small slice more capacity than its length: the burstable path was
	// overwritten by the besteffort one and Burstable orphans never found).
	base = base[:len(base):len(base)]
	var out []PodCgroup
	for _, name := range [][]string{base, append(base, burstableCgroup), append(base, bestEffortCgroup)} {
		parent := m.cgroupParent(name)
		children, err := m.host.Children(parent)
		if err != nil {
			return nil, err
		}
		for _, child := range children {
			if uid, ok := m.podUID(parent, child); ok {
				out = append(out, PodCgroup{UID: uid, Path: path.Join(parent, child)})
			}
		}
	}
	return out, nil
}

// podUID reads the pod's UID from the name of a cgroup under parent: pod<uid> for cgroupfs,
// <parent's slice>-pod<uid>.slice with "-" in the UID escaped to "_" for systemd.
func (m *Manager) podUID(parent, child string) (types.UID, bool) {
	if !m.systemd {
		uid, ok := strings.CutPrefix(child, "pod")
		return types.UID(uid), ok && uid != ""
	}
	// A "-" left in the escaped UID would name a slice below the pod's.
	name, ok := strings.CutSuffix(child, ".slice")
	uid, found := strings.CutPrefix(name, strings.TrimSuffix(path.Base(parent), ".slice")+"-pod")
	if !ok || !found || uid == "" || strings.Contains(uid, "-") {
		return "", false
	}
	return types.UID(strings.ReplaceAll(uid, "_", "-")), true
}

// DestroyPodCgroup kills the processes of an orphaned pod cgroup and removes it.
func (m *Manager) DestroyPodCgroup(c PodCgroup) error { return m.host.Destroy(c.Path) }

// ReducePodCgroup gives an orphaned pod cgroup the minimum CPU shares, as the cgroup manager's
// ReduceCPULimits, while its pod's volumes are unmounted.
func (m *Manager) ReducePodCgroup(c PodCgroup) error {
	least := uint64(minShares)
	return m.host.Ensure(c.Path, PodCgroupConfig{CPUShares: &least})
}
