package qos

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	resourcehelper "k8s.io/component-helpers/resource"
)

// PodCgroups makes the pod-level cgroups Kubernetes' pod container manager makes on the host:
// the runtime puts the sandbox and containers under them (the sandbox's CgroupParent), and the
// pod's pids limit is enforced only there, the CRI having no field for it.
type PodCgroups interface {
	// Ensure creates the cgroup named by path (from the hierarchy's root), with its parents,
	// and sets its limits.
	Ensure(path string, cfg PodCgroupConfig) error
	// Children names the cgroups directly under the one named by path, in any hierarchy; a
	// missing one has none.
	Children(path string) ([]string, error)
	// Destroy kills every process in the cgroup and the cgroups below it, then removes them all,
	// in every hierarchy; a missing one is not an error.
	Destroy(path string) error
}

// PodCgroupConfig is cm.ResourceConfig for a pod: nil fields are left as the kernel has them.
type PodCgroupConfig struct {
	CPUShares *uint64
	CPUQuota  *int64 // -1: no limit
	CPUPeriod *uint64
	Memory    *int64
	PidsLimit *int64
	// HugePageLimit is bytes by page size in bytes.
	HugePageLimit map[int64]int64
}

// podCgroupConfig is cm.ResourceConfigForPod plus the pod container manager's pids limit:
// Guaranteed pods get shares, quota and a memory limit; Burstable ones shares, and quota and
// memory only when every container declares those limits; BestEffort the minimum shares.
func (m *Manager) podCgroupConfig(pod *corev1.Pod) PodCgroupConfig {
	reqs := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
	lims := resourcehelper.PodLimits(pod, resourcehelper.PodResourcesOptions{})
	// A limit counts for the pod only when every container declares it.
	cpuDeclared, memDeclared := true, true
	for _, cs := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for _, c := range cs {
			cpuDeclared = cpuDeclared && !c.Resources.Limits.Cpu().IsZero()
			memDeclared = memDeclared && !c.Resources.Limits.Memory().IsZero()
		}
	}
	period := uint64(m.cfsPeriod)
	shares := uint64(MilliCPUToShares(reqs.Cpu().MilliValue()))
	quota := milliCPUToQuota(lims.Cpu().MilliValue(), int64(period))
	if !m.cfsQuota {
		quota = -1
	}
	memory := lims.Memory().Value()
	cfg := PodCgroupConfig{HugePageLimit: map[int64]int64{}}
	switch podQOS(pod) {
	case corev1.PodQOSGuaranteed:
		cfg.CPUShares, cfg.CPUQuota, cfg.CPUPeriod, cfg.Memory = &shares, &quota, &period, &memory
	case corev1.PodQOSBurstable:
		cfg.CPUShares = &shares
		if cpuDeclared {
			cfg.CPUQuota, cfg.CPUPeriod = &quota, &period
		}
		if memDeclared {
			cfg.Memory = &memory
		}
	default:
		least := uint64(minShares)
		cfg.CPUShares = &least
	}
	// cm.HugePageLimits: the requests of each huge page size.
	for name, q := range reqs {
		if size, ok := hugePageSize(name); ok {
			cfg.HugePageLimit[size] += q.Value()
		}
	}
	if m.pidsLimit > 0 {
		pids := m.pidsLimit
		cfg.PidsLimit = &pids
	}
	return cfg
}

func hugePageSize(name corev1.ResourceName) (int64, bool) {
	s := string(name)
	if len(s) <= len(corev1.ResourceHugePagesPrefix) || s[:len(corev1.ResourceHugePagesPrefix)] != corev1.ResourceHugePagesPrefix {
		return 0, false
	}
	q, err := resource.ParseQuantity(s[len(corev1.ResourceHugePagesPrefix):])
	if err != nil {
		return 0, false
	}
	return q.Value(), true
}

// CgroupV2 makes pod cgroups in a unified hierarchy mounted at Root (/sys/fs/cgroup on a host),
// writing what runc's fs2 manager writes for a cm.ResourceConfig.
type CgroupV2 struct {
	Root string
}

// Ensure creates the cgroup, enabling the controllers it needs in each parent, and writes its limits.
func (c CgroupV2) Ensure(path string, cfg PodCgroupConfig) error {
	dir := filepath.Join(c.Root, filepath.FromSlash(path))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("cgroup %s: %w", path, err)
	}
	// Each level from the root delegates to its children the controllers pods need, of those it
	// has (a host may lack hugetlb); a directory standing in for a cgroup lists none and gets all.
	for p := filepath.Dir(dir); len(p) >= len(c.Root); p = filepath.Dir(p) {
		if err := os.WriteFile(filepath.Join(p, "cgroup.subtree_control"), []byte(enableControllers(p)), 0o644); err != nil {
			return fmt.Errorf("cgroup %s: enabling controllers: %w", path, err)
		}
		if p == c.Root {
			break
		}
	}
	files := map[string]string{}
	if cfg.CPUShares != nil {
		files["cpu.weight"] = strconv.FormatUint(sharesToWeight(*cfg.CPUShares), 10)
	}
	if cfg.CPUQuota != nil || cfg.CPUPeriod != nil {
		v := "max"
		if cfg.CPUQuota != nil && *cfg.CPUQuota > 0 {
			v = strconv.FormatInt(*cfg.CPUQuota, 10)
		}
		if cfg.CPUPeriod != nil {
			v += " " + strconv.FormatUint(*cfg.CPUPeriod, 10)
		}
		files["cpu.max"] = v
	}
	if cfg.Memory != nil && *cfg.Memory > 0 {
		files["memory.max"] = strconv.FormatInt(*cfg.Memory, 10)
	}
	if cfg.PidsLimit != nil {
		files["pids.max"] = strconv.FormatInt(*cfg.PidsLimit, 10)
	}
	for size, limit := range cfg.HugePageLimit {
		files["hugetlb."+HugePageUnitSize(size)+".max"] = strconv.FormatInt(limit, 10)
	}
	for name, v := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(v), 0o644); err != nil {
			return fmt.Errorf("cgroup %s: %w", path, err)
		}
	}
	return nil
}

// enableControllers is the cgroup.subtree_control line that enables, in the cgroup at dir, the
// controllers pod cgroups use.
func enableControllers(dir string) string {
	wanted := []string{"cpu", "memory", "pids", "hugetlb"}
	have := map[string]bool{}
	if data, err := os.ReadFile(filepath.Join(dir, "cgroup.controllers")); err == nil {
		for _, c := range strings.Fields(string(data)) {
			have[c] = true
		}
	}
	var out []string
	for _, c := range wanted {
		if len(have) == 0 || have[c] {
			out = append(out, "+"+c)
		}
	}
	return strings.Join(out, " ")
}

func allRegular(entries []os.DirEntry) bool {
	for _, e := range entries {
		if e.IsDir() {
			return false
		}
	}
	return true
}

// sharesToWeight is cm.CpuSharesToCPUWeight (libcontainer's ConvertCPUSharesToCgroupV2Value).
func sharesToWeight(shares uint64) uint64 {
	if shares == 0 {
		return 0
	}
	return 1 + ((shares-2)*9999)/262142
}

// updateQOSCgroups is the QoS container manager's UpdateCgroups: BestEffort pods share the
// minimum CPU shares, Burstable ones shares for the sum of their CPU requests.
func (m *Manager) updateQOSCgroups(live []*corev1.Pod) error {
	var burstable int64
	for _, pod := range live {
		if podQOS(pod) != corev1.PodQOSBurstable {
			continue
		}
		reqs := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
		burstable += reqs.Cpu().MilliValue()
	}
	root := append(append([]string{}, m.root...), nodeAllocatableCgroup)
	for _, q := range []struct {
		name   string
		shares uint64
	}{{burstableCgroup, uint64(MilliCPUToShares(burstable))}, {bestEffortCgroup, minShares}} {
		shares := q.shares
		if err := m.host.Ensure(m.cgroupParent(append(root, q.name)), PodCgroupConfig{CPUShares: &shares}); err != nil {
			return fmt.Errorf("QoS cgroup %s: %w", q.name, err)
		}
	}
	return nil
}

// podCgroupName is the pod's cgroup as pod_container_manager's GetPodContainerName names it,
// one component per level: Guaranteed pods directly under orchpods, the others under their QoS
// class's cgroup, each as pod<uid>. Nil without --cgroups-per-qos.
func (m *Manager) podCgroupName(pod *corev1.Pod) []string {
	if !m.perQOS {
		return nil
	}
	name := append([]string{}, m.root...)
	name = append(name, nodeAllocatableCgroup)
	switch podQOS(pod) {
	case corev1.PodQOSBurstable:
		name = append(name, burstableCgroup)
	case corev1.PodQOSBestEffort:
		name = append(name, bestEffortCgroup)
	}
	return append(name, "pod"+string(pod.UID))
}

// cgroupParent is the sandbox's CgroupParent as the kubelet's cgroup manager writes a cgroup
// name: a path for cgroupfs (CgroupName.ToCgroupfs), the expanded slice for systemd
// (CgroupName.ToSystemd: "-" in a component escaped to "_", components joined by "-").
func (m *Manager) cgroupParent(name []string) string {
	if name == nil {
		return ""
	}
	return CgroupPath(name, m.systemd)
}

// CgroupPath is a cgroup name, one component per level, as the cgroupfs or systemd driver writes
// it: a path from the hierarchy's root for either.
func CgroupPath(name []string, systemd bool) string {
	if !systemd {
		return "/" + path.Join(name...)
	}
	if len(name) == 0 {
		return "/"
	}
	parts := make([]string, len(name))
	for i, p := range name {
		parts[i] = strings.ReplaceAll(p, "-", "_")
	}
	// ExpandSlice: every prefix of the dash-joined name is a slice of its own.
	out := ""
	for i := range parts {
		out += "/" + strings.Join(parts[:i+1], "-") + ".slice"
	}
	return out
}
