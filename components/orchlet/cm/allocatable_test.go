package cm

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"orch.io/orch/components/apis/orchlet/v1beta1"
)

const gib = int64(1) << 30

func config(mod func(*v1beta1.OrchletConfiguration)) *v1beta1.OrchletConfiguration {
	c := v1beta1.NewDefault()
	if mod != nil {
		mod(c)
	}
	return c
}

func quantity(l corev1.ResourceList, name corev1.ResourceName) string {
	q, ok := l[name]
	if !ok {
		return "-"
	}
	return q.String()
}

// As the kubelet's container manager computes them (node_container_manager_linux.go,
// GetNodeAllocatableReservation): allocatable holds back the reservations and the hard eviction
// thresholds, the pods' cgroup only the reservations, and only when "pods" is enforced.
func TestNodeResources(t *testing.T) {
	machine := Machine{Cores: 4, Memory: 8 * gib, PidMax: 4194304}
	for _, tc := range []struct {
		name           string
		mod            func(*v1beta1.OrchletConfiguration)
		ignoreEviction bool
		machine        *Machine
		// want: allocatable cpu, memory; the pods' cgroup cpu, memory, pid
		allocCPU, allocMem, podsCPU, podsMem, podsPid string
	}{
		{name: "defaults: the 100Mi hard threshold", allocCPU: "4", allocMem: "8092Mi", podsCPU: "4", podsMem: "8Gi", podsPid: "4194304"},
		{name: "ignore eviction", ignoreEviction: true, allocCPU: "4", allocMem: "8Gi", podsCPU: "4", podsMem: "8Gi", podsPid: "4194304"},
		{name: "reservations", mod: func(c *v1beta1.OrchletConfiguration) {
			c.KubeReserved = map[string]string{"cpu": "500m", "memory": "1Gi", "pid": "1000"}
			c.SystemReserved = map[string]string{"memory": "512Mi", "pid": "194304"}
			c.EvictionHard = map[string]string{"memory.available": "1Gi"}
		}, allocCPU: "3500m", allocMem: "5632Mi", podsCPU: "3500m", podsMem: "6656Mi", podsPid: "3999k"},
		{name: "--reserved-cpus replaces the reserved cpu", mod: func(c *v1beta1.OrchletConfiguration) {
			c.KubeReserved = map[string]string{"cpu": "500m"}
			c.ReservedSystemCPUs = "0-1"
		}, allocCPU: "2", allocMem: "8092Mi", podsCPU: "2", podsMem: "8Gi", podsPid: "4194304"},
		{name: "pods not enforced: the cgroup gets capacity", mod: func(c *v1beta1.OrchletConfiguration) {
			c.KubeReserved = map[string]string{"memory": "1Gi"}
			c.EnforceNodeAllocatable = []string{"kube-reserved"}
			c.KubeReservedCgroup = "/orch-reserved"
		}, allocCPU: "4", allocMem: "7068Mi", podsCPU: "4", podsMem: "8Gi", podsPid: "4194304"},
		{name: "huge pages are not memory", machine: &Machine{Cores: 4, Memory: 8 * gib, HugePages: map[int64]int64{2 << 20: 512}},
			allocCPU: "4", allocMem: "7068Mi", podsCPU: "4", podsMem: "8Gi", podsPid: "-"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := machine
			if tc.machine != nil {
				m = *tc.machine
			}
			r, err := NodeResources(config(tc.mod), tc.ignoreEviction, m)
			if err != nil {
				t.Fatal(err)
			}
			if got := quantity(r.Allocatable, corev1.ResourceCPU); got != tc.allocCPU {
				t.Errorf("allocatable cpu %s, want %s", got, tc.allocCPU)
			}
			if got := quantity(r.Allocatable, corev1.ResourceMemory); got != tc.allocMem {
				t.Errorf("allocatable memory %s, want %s", got, tc.allocMem)
			}
			if got := quantity(r.PodsLimits, corev1.ResourceCPU); got != tc.podsCPU {
				t.Errorf("pods' cgroup cpu %s, want %s", got, tc.podsCPU)
			}
			if got := quantity(r.PodsLimits, corev1.ResourceMemory); got != tc.podsMem {
				t.Errorf("pods' cgroup memory %s, want %s", got, tc.podsMem)
			}
			if got := quantity(r.PodsLimits, ResourcePID); got != tc.podsPid {
				t.Errorf("pods' cgroup pid %s, want %s", got, tc.podsPid)
			}
			if _, ok := r.Allocatable[ResourcePID]; ok {
				t.Errorf("pid is in allocatable: %v", r.Allocatable)
			}
		})
	}
}

func TestNodeResourcesHugePagesAndStorage(t *testing.T) {
	c := config(func(c *v1beta1.OrchletConfiguration) {
		c.EvictionHard = map[string]string{"nodefs.available": "1Gi"}
		c.SystemReserved = map[string]string{"ephemeral-storage": "10Gi"}
	})
	r, err := NodeResources(c, false, Machine{Cores: 2, Memory: 4 * gib, HugePages: map[int64]int64{2 << 20: 4}, EphemeralStorage: 100 * gib})
	if err != nil {
		t.Fatal(err)
	}
	if got := quantity(r.Capacity, "hugepages-2Mi"); got != "8Mi" {
		t.Errorf("hugepages-2Mi capacity %s, want 8Mi", got)
	}
	if got := quantity(r.Allocatable, corev1.ResourceEphemeralStorage); got != "89Gi" {
		t.Errorf("allocatable ephemeral-storage %s, want 89Gi (less 10Gi reserved and the 1Gi threshold)", got)
	}
	if got := quantity(r.PodsLimits, corev1.ResourceEphemeralStorage); got != "90Gi" {
		t.Errorf("pods' ephemeral-storage %s, want 90Gi", got)
	}
}

// validateNodeAllocatable's message, naming the resource.
func TestNodeResourcesRefusesAReservationBeyondCapacity(t *testing.T) {
	for _, tc := range []struct {
		mod  func(*v1beta1.OrchletConfiguration)
		want string
	}{
		{func(c *v1beta1.OrchletConfiguration) { c.KubeReserved = map[string]string{"memory": "16Gi"} },
			`invalid Node Allocatable configuration. Resource "memory" has a reservation of 16484Mi but capacity of 8Gi. Expected capacity >= reservation.`},
		{func(c *v1beta1.OrchletConfiguration) { c.SystemReserved = map[string]string{"cpu": "lots"} }, "--system-reserved cpu=lots"},
		{func(c *v1beta1.OrchletConfiguration) { c.ReservedSystemCPUs = "a-b" }, "--reserved-cpus (reservedSystemCPUs)"},
	} {
		_, err := NodeResources(config(tc.mod), false, Machine{Cores: 4, Memory: 8 * gib})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("err = %v, want %q", err, tc.want)
		}
	}
}

// getCgroupConfig: cpu shares from cpu; memory, pids and every huge page size of the host unless
// only the compressible resources are enforced.
func TestCgroupConfig(t *testing.T) {
	rl := corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("1Gi"),
		ResourcePID: resource.MustParse("1000"), "hugepages-2Mi": resource.MustParse("4Mi"),
	}
	sizes := []int64{2 << 20, 1 << 30}
	full := CgroupConfig(rl, false, sizes)
	if *full.CPUShares != 512 || *full.Memory != gib || *full.PidsLimit != 1000 ||
		len(full.HugePageLimit) != 2 || full.HugePageLimit[2<<20] != 4<<20 || full.HugePageLimit[1<<30] != 0 {
		t.Errorf("full: shares %d memory %d pids %d huge pages %v", *full.CPUShares, *full.Memory, *full.PidsLimit, full.HugePageLimit)
	}
	compressible := CgroupConfig(rl, true, sizes)
	if *compressible.CPUShares != 512 || compressible.Memory != nil || compressible.PidsLimit != nil || compressible.HugePageLimit != nil {
		t.Errorf("compressible: %+v", compressible)
	}
}

func TestReservedCgroupNames(t *testing.T) {
	for _, tc := range []struct {
		name    string
		systemd bool
		want    string
	}{
		{"/orch-reserved", false, "/orch-reserved"},
		{"system.slice", false, "/system.slice"},
		{"/system.slice", true, "/system.slice"},
		{"/orch.slice/orch-reserved.slice", true, "/orch.slice/orch-reserved.slice"},
		{"orch-reserved.slice", true, "/orch.slice/orch-reserved.slice"},
	} {
		if got := ReservedCgroup(tc.name, tc.systemd); got != tc.want {
			t.Errorf("ReservedCgroup(%q, %v) = %q, want %q", tc.name, tc.systemd, got, tc.want)
		}
	}
	for _, tc := range []struct {
		root, driver, want string
	}{{"/", "cgroupfs", "/orchpods"}, {"/custom", "cgroupfs", "/custom/orchpods"}, {"/", "systemd", "/orchpods.slice"}} {
		c := config(func(c *v1beta1.OrchletConfiguration) { c.CgroupRoot, c.CgroupDriver = tc.root, tc.driver })
		if got := PodsCgroup(c); got != tc.want {
			t.Errorf("PodsCgroup(%s, %s) = %q, want %q", tc.root, tc.driver, got, tc.want)
		}
	}
}
