package app

import (
	"errors"
	"fmt"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"

	"orch.io/orch/components/orchlet/host"
	"orch.io/orch/components/orchlet/mount"
	"orch.io/orch/components/orchlet/nodestatus"
	"orch.io/orch/components/orchlet/options"
	"orch.io/orch/components/orchlet/pods"
	"orch.io/orch/components/orchlet/pods/flexvolume"
	"orch.io/orch/components/orchlet/pods/qos"
)

// podNodeOf is what the pod workers need to know of this machine: its addresses, memory, cgroup
// version, huge page sizes and SELinux, and where pod cgroups and volumes go. A simulated machine
// (a test's host, without sysfs) has none of these: nothing of the real one is read or written,
// and the workers keep volumes in a temporary directory. Pod cgroups are made, on cgroup v1 or
// v2, with --cgroups-per-qos; --pod-max-pids, which only a pod cgroup enforces, is refused without.
func podNodeOf(o *options.Options, h host.Host, nodeName string) (pods.Node, error) {
	c := o.Config
	addrs, err := nodestatus.Addresses(o.Flags.NodeIP, nodeName)
	if err != nil {
		return pods.Node{}, err
	}
	n := pods.Node{Name: nodeName, SeccompDefault: o.Flags.SeccompDefault}
	for _, a := range addrs {
		if a.Type == corev1.NodeInternalIP {
			n.HostIPs = append(n.HostIPs, a.Address)
		}
	}
	if sys := h.Sysfs(); sys != "" {
		if n.MemoryCapacity, err = h.Memory(); err != nil {
			return n, fmt.Errorf("reading the node's memory: %w", err)
		}
		version, err := h.CgroupVersion()
		if err != nil {
			return n, err
		}
		n.RootDir, n.CgroupV2, n.SELinux = o.Flags.RootDir, version == 2, h.SELinux()
		if mount.Permitted() {
			n.Tmpfs, n.SubPaths = mount.Tmpfs{}, mount.SubPaths{}
		}
		for _, size := range h.HugePageSizes() {
			n.HugePageSizes = append(n.HugePageSizes, qos.HugePageUnitSize(size))
		}
		n.ThermalThrottlePaths = h.ThermalThrottlePaths()
		n.Flex = flexvolume.New(c.VolumePluginDir)
		if c.CgroupsPerQOS {
			root := filepath.Join(sys, "fs", "cgroup")
			n.Cgroups = qos.CgroupV1{Root: root}
			if n.CgroupV2 {
				n.Cgroups = qos.CgroupV2{Root: root}
			}
		}
	}
	if c.PodPidsLimit > 0 && n.Cgroups == nil {
		return n, errors.New("--pod-max-pids (podPidsLimit): enforced on the pod cgroup, which is made only with --cgroups-per-qos")
	}
	return n, nil
}
