package cm

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/cpuset"

	"orch.io/orch/components/apis/orchlet/v1beta1"
	"orch.io/orch/components/orchlet/eviction"
	"orch.io/orch/components/orchlet/pods/qos"
)

// ResourcePID is the process ids a reservation may name ("pid"): a resource of the node's
// internal capacity (kernel.pid_max), enforced on cgroups but never reported in the Node.
const ResourcePID corev1.ResourceName = "pid"

// Machine is what the node's capacity is read from, as cadvisor's machine info gives it to the
// kubelet.
type Machine struct {
	// Cores are the online CPUs.
	Cores int
	// Memory is MemTotal in bytes.
	Memory int64
	// HugePages are the huge pages the kernel holds, by page size in bytes.
	HugePages map[int64]int64
	// EphemeralStorage is the size in bytes of --root-dir's filesystem; 0 leaves it out of the
	// capacity, as the kubelet does without local storage capacity isolation.
	EphemeralStorage int64
	// PidMax is kernel.pid_max; 0 when unknown.
	PidMax int64
}

// Resources are the node's capacity and allocatable as the kubelet's container manager and node
// status compute them, and the limits it puts on the pods' cgroup.
type Resources struct {
	// Capacity is cpu, memory, hugepages-<size> and ephemeral-storage (when measured).
	Capacity corev1.ResourceList
	// Reservation is --kube-reserved + --system-reserved + the hard eviction thresholds, per
	// resource (GetNodeAllocatableReservation).
	Reservation corev1.ResourceList
	// Allocatable is capacity less the reservation and, for memory, less the huge pages: what
	// admission fits pods into and the Node reports.
	Allocatable corev1.ResourceList
	// PodsLimits are the pods' cgroup's limits: the internal capacity (pid included), less
	// --kube-reserved and --system-reserved when "pods" is enforced; never the eviction thresholds.
	PodsLimits corev1.ResourceList
	// KubeReserved and SystemReserved are the reservations as resource lists, cpu replaced by
	// --reserved-cpus's count when it is given.
	KubeReserved, SystemReserved corev1.ResourceList
}

// ReservedList reads a --kube-reserved or --system-reserved map.
func ReservedList(option string, m map[string]string) (corev1.ResourceList, error) {
	out := corev1.ResourceList{}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		q, err := resource.ParseQuantity(m[k])
		if err != nil {
			return nil, fmt.Errorf("--%s %s=%s: %w", option, k, m[k], err)
		}
		out[corev1.ResourceName(k)] = q
	}
	return out, nil
}

// Capacity is cadvisor's CapacityFromMachineInfo and the container manager's ephemeral storage.
func Capacity(m Machine) corev1.ResourceList {
	c := corev1.ResourceList{
		corev1.ResourceCPU:    *resource.NewMilliQuantity(int64(m.Cores)*1000, resource.DecimalSI),
		corev1.ResourceMemory: *resource.NewQuantity(m.Memory, resource.BinarySI),
	}
	for size, pages := range m.HugePages {
		c[HugePageResource(size)] = *resource.NewQuantity(size*pages, resource.BinarySI)
	}
	if m.EphemeralStorage > 0 {
		c[corev1.ResourceEphemeralStorage] = *resource.NewQuantity(m.EphemeralStorage, resource.BinarySI)
	}
	return c
}

// HugePageResource names the huge pages of a size: 2097152 is hugepages-2Mi.
func HugePageResource(size int64) corev1.ResourceName {
	return corev1.ResourceName(corev1.ResourceHugePagesPrefix + resource.NewQuantity(size, resource.BinarySI).String())
}

// NodeResources computes the node's resources from the configuration and the machine as the
// kubelet does: --reserved-cpus replaces the cpu of the reservations with its count (in
// system-reserved), the hard eviction thresholds are held back unless ignoreEviction
// (--experimental-allocatable-ignore-eviction), and a reservation beyond capacity is refused.
func NodeResources(c *v1beta1.OrchletConfiguration, ignoreEviction bool, m Machine) (Resources, error) {
	kube, err := ReservedList("kube-reserved", c.KubeReserved)
	if err != nil {
		return Resources{}, err
	}
	system, err := ReservedList("system-reserved", c.SystemReserved)
	if err != nil {
		return Resources{}, err
	}
	if c.ReservedSystemCPUs != "" {
		set, err := cpuset.Parse(c.ReservedSystemCPUs)
		if err != nil {
			return Resources{}, fmt.Errorf("--reserved-cpus (reservedSystemCPUs): %q: %w", c.ReservedSystemCPUs, err)
		}
		if set.Size() > 0 {
			delete(kube, corev1.ResourceCPU)
			system[corev1.ResourceCPU] = *resource.NewQuantity(int64(set.Size()), resource.DecimalSI)
		}
	}
	capacity := Capacity(m)
	hard := corev1.ResourceList{}
	if !ignoreEviction {
		if hard, err = eviction.HardReservation(c, capacity); err != nil {
			return Resources{}, err
		}
	}
	r := Resources{Capacity: capacity, KubeReserved: kube, SystemReserved: system, Reservation: corev1.ResourceList{}, Allocatable: corev1.ResourceList{}}
	for name := range capacity {
		sum := resource.NewQuantity(0, resource.DecimalSI)
		for _, l := range []corev1.ResourceList{system, kube, hard} {
			if q, ok := l[name]; ok {
				sum.Add(q)
			}
		}
		if !sum.IsZero() {
			r.Reservation[name] = *sum
		}
	}
	if err := validateReservation(capacity, r.Reservation); err != nil {
		return Resources{}, err
	}
	for name, q := range capacity {
		left := q.DeepCopy()
		if res, ok := r.Reservation[name]; ok {
			left.Sub(res)
		}
		r.Allocatable[name] = nonNegative(left)
	}
	// Huge pages are memory the pods cannot have as memory.
	for name, q := range capacity {
		if strings.HasPrefix(string(name), corev1.ResourceHugePagesPrefix) {
			left := r.Allocatable[corev1.ResourceMemory]
			left.Sub(q)
			r.Allocatable[corev1.ResourceMemory] = nonNegative(left)
		}
	}
	internal := capacity.DeepCopy()
	if m.PidMax > 0 {
		internal[ResourcePID] = *resource.NewQuantity(m.PidMax, resource.DecimalSI)
	}
	r.PodsLimits = internal
	if c.CgroupsPerQOS && slices.Contains(c.EnforceNodeAllocatable, "pods") {
		r.PodsLimits = corev1.ResourceList{}
		for name, q := range internal {
			left := q.DeepCopy()
			for _, l := range []corev1.ResourceList{system, kube} {
				if res, ok := l[name]; ok {
					left.Sub(res)
				}
			}
			r.PodsLimits[name] = nonNegative(left)
		}
	}
	return r, nil
}

// validateReservation is the container manager's validateNodeAllocatable.
func validateReservation(capacity, reservation corev1.ResourceList) error {
	var problems []string
	for _, name := range slices.Sorted(maps.Keys(reservation)) {
		v, c := reservation[name], capacity[name]
		left := c.DeepCopy()
		left.Sub(v)
		if left.Sign() < 0 {
			problems = append(problems, fmt.Sprintf("Resource %q has a reservation of %v but capacity of %v. Expected capacity >= reservation.", name, v.String(), c.String()))
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("invalid Node Allocatable configuration. %s", strings.Join(problems, " "))
	}
	return nil
}

func nonNegative(q resource.Quantity) resource.Quantity {
	if q.Sign() < 0 {
		q.Set(0)
	}
	return q
}

// CgroupConfig is the container manager's getCgroupConfig for a resource list: cpu shares from
// cpu, and unless compressibleOnly the memory limit, the pids limit and a huge page limit for
// every size given (0 for those the list does not name; none named without the size), as
// libcontainer is asked to write them.
func CgroupConfig(rl corev1.ResourceList, compressibleOnly bool, hugePageSizes []int64) qos.PodCgroupConfig {
	var cfg qos.PodCgroupConfig
	if q, ok := rl[corev1.ResourceCPU]; ok {
		shares := uint64(qos.MilliCPUToShares(q.MilliValue()))
		cfg.CPUShares = &shares
	}
	if compressibleOnly {
		return cfg
	}
	if q, ok := rl[corev1.ResourceMemory]; ok {
		v := q.Value()
		cfg.Memory = &v
	}
	if q, ok := rl[ResourcePID]; ok {
		v := q.Value()
		cfg.PidsLimit = &v
	}
	cfg.HugePageLimit = map[int64]int64{}
	for _, size := range hugePageSizes {
		q := rl[HugePageResource(size)]
		cfg.HugePageLimit[size] = q.Value()
	}
	return cfg
}
