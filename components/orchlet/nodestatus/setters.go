package nodestatus

import (
	"fmt"
	"net"
	goruntime "runtime"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"orch.io/orch/components/apis/orchlet/v1beta1"
	"orch.io/orch/components/orchlet/eviction"
	"orch.io/orch/components/orchlet/pods"
)

// Labels are the labels the agent registers its Node with: Kubernetes' well-known three,
// renamed, then --node-labels (checked against the allowed orch.io keys at start).
func Labels(node string, extra map[string]string) map[string]string {
	labels := map[string]string{
		"orch.io/hostname": node,
		"orch.io/os":       goruntime.GOOS,
		"orch.io/arch":     goruntime.GOARCH,
	}
	for k, v := range extra {
		labels[k] = v
	}
	return labels
}

// Addresses are --node-ip's addresses, or the host's default one (IPv4 when it has one, else
// IPv6), then the hostname.
func Addresses(nodeIP, hostname string) ([]corev1.NodeAddress, error) {
	var addrs []corev1.NodeAddress
	if nodeIP != "" && nodeIP != "0.0.0.0" && nodeIP != "::" {
		for _, s := range strings.Split(nodeIP, ",") {
			ip := net.ParseIP(strings.TrimSpace(s))
			if ip == nil {
				return nil, fmt.Errorf("--node-ip %s: %q is not an IP address", nodeIP, s)
			}
			addrs = append(addrs, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: ip.String()})
		}
	} else if ip := defaultIP(nodeIP == "::"); ip != "" {
		addrs = append(addrs, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: ip})
	}
	return append(addrs, corev1.NodeAddress{Type: corev1.NodeHostName, Address: hostname}), nil
}

// defaultIP is the first global unicast address of the host, of the preferred family first.
func defaultIP(preferIPv6 bool) string {
	ifaces, err := net.InterfaceAddrs()
	if err != nil {
		return ""
	}
	var v4, v6 string
	for _, a := range ifaces {
		ipnet, ok := a.(*net.IPNet)
		if !ok || !ipnet.IP.IsGlobalUnicast() {
			continue
		}
		if ipnet.IP.To4() != nil && v4 == "" {
			v4 = ipnet.IP.String()
		} else if ipnet.IP.To4() == nil && v6 == "" {
			v6 = ipnet.IP.String()
		}
	}
	if preferIPv6 && v6 != "" || v4 == "" {
		return v6
	}
	return v4
}

// CapacityAndAllocatable are the node's resources and what pods may use of them: capacity less
// --kube-reserved and --system-reserved (cpu and memory; the rest is refused at start), and less
// the hard eviction threshold on memory.available unless ignoreEviction
// (--experimental-allocatable-ignore-eviction).
func CapacityAndAllocatable(c *v1beta1.OrchletConfiguration, ignoreEviction bool, cores int, memory int64) (corev1.ResourceList, corev1.ResourceList, error) {
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:    *resource.NewQuantity(int64(cores), resource.DecimalSI),
		corev1.ResourceMemory: *resource.NewQuantity(memory, resource.BinarySI),
		corev1.ResourcePods:   *resource.NewQuantity(int64(pods.Capacity(c.MaxPods, c.PodsPerCore, cores)), resource.DecimalSI),
	}
	allocatable := capacity.DeepCopy()
	reserve := func(name corev1.ResourceName, q resource.Quantity) {
		left := allocatable[name]
		left.Sub(q)
		if left.Sign() < 0 {
			left = *resource.NewQuantity(0, left.Format)
		}
		allocatable[name] = left
	}
	for _, reserved := range []map[string]string{c.KubeReserved, c.SystemReserved} {
		for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			if v, ok := reserved[string(name)]; ok {
				q, err := resource.ParseQuantity(v)
				if err != nil {
					return nil, nil, fmt.Errorf("reserved %s=%s: %w", name, v, err)
				}
				reserve(name, q)
			}
		}
	}
	if !ignoreEviction {
		// The hard memory.available threshold as the eviction manager reads it, defaults included.
		v, err := eviction.HardMemoryThreshold(c, memory)
		if err != nil {
			return nil, nil, err
		}
		reserve(corev1.ResourceMemory, *resource.NewQuantity(v, resource.BinarySI))
	}
	return capacity, allocatable, nil
}
