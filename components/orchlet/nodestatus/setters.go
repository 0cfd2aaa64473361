package nodestatus

import (
	"fmt"
	"net"
	goruntime "runtime"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"orch.io/orch/components/apis/orchlet/v1beta1"
	"orch.io/orch/components/orchlet/cm"
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

// The uninitialized taint of a Node registered for an external cloud provider, and the
// annotation giving that provider --node-ip (Kubernetes' cloud-provider API, renamed).
const (
	TaintExternalCloudProvider = "node.cloudprovider.orch.io/uninitialized"
	AnnotationProvidedNodeIP   = "alpha.orch.io/provided-node-ip"
)

// CloudAddresses are the addresses a Node registers with under --cloud-provider=external, as the
// kubelet's NodeAddress setter gives them: the hostname alone when --node-ip is not given (the
// cloud controller sets the rest), Addresses otherwise; and the provided-node-ip annotation's
// value, --node-ip's addresses when they are specified ("" otherwise).
func CloudAddresses(nodeIP, hostname string) ([]corev1.NodeAddress, string, error) {
	if nodeIP == "" {
		return []corev1.NodeAddress{{Type: corev1.NodeHostName, Address: hostname}}, "", nil
	}
	addrs, err := Addresses(nodeIP, hostname)
	if err != nil || nodeIP == "0.0.0.0" || nodeIP == "::" {
		return addrs, "", err
	}
	var provided []string
	for _, a := range addrs {
		if a.Type == corev1.NodeInternalIP {
			provided = append(provided, a.Address)
		}
	}
	return addrs, strings.Join(provided, ","), nil
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

// CapacityAndAllocatable are the Node's resources and what pods may use of them: the container
// manager's capacity and allocatable (cm.NodeResources), with the pods the node takes
// (--max-pods, --pods-per-core) in both.
func CapacityAndAllocatable(c *v1beta1.OrchletConfiguration, cores int, r cm.Resources) (corev1.ResourceList, corev1.ResourceList) {
	capacity, allocatable := r.Capacity.DeepCopy(), r.Allocatable.DeepCopy()
	n := *resource.NewQuantity(int64(pods.Capacity(c.MaxPods, c.PodsPerCore, cores)), resource.DecimalSI)
	capacity[corev1.ResourcePods], allocatable[corev1.ResourcePods] = n, n
	return capacity, allocatable
}
