package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"orch.io/orch/components/orchlet/host"
	"orch.io/orch/components/orchlet/options"
	"orch.io/orch/components/orchlet/pods"
	"orch.io/orch/components/orchlet/pods/qos"
)

// podNodeOf is what the pod workers need to know of this machine: its addresses, memory, cgroup
// version, huge page sizes and SELinux, and where pod cgroups and volumes go. A host that is not
// the real one (a test's) is a simulated machine: nothing of the real one is read or written, and
// the workers keep volumes in a temporary directory. Pod cgroups are made, on cgroup v1 or v2, with
// --cgroups-per-qos; --pod-max-pids, which only a pod cgroup enforces, is refused without.
func podNodeOf(o *options.Options, h host.Host, nodeName string) (pods.Node, error) {
	c := o.Config
	addrs, err := nodeAddresses(o.Flags.NodeIP, nodeName)
	if err != nil {
		return pods.Node{}, err
	}
	n := pods.Node{Name: nodeName, SeccompDefault: o.Flags.SeccompDefault}
	for _, a := range addrs {
		if a.Type == corev1.NodeInternalIP {
			n.HostIPs = append(n.HostIPs, a.Address)
		}
	}
	if real, ok := h.(*host.Real); ok {
		if n.MemoryCapacity, err = memoryBytes(); err != nil {
			return n, fmt.Errorf("reading the node's memory: %w", err)
		}
		version, err := real.CgroupVersion()
		if err != nil {
			return n, err
		}
		_, selinuxErr := os.Stat(filepath.Join(real.SysRoot, "fs", "selinux", "enforce"))
		n.RootDir, n.CgroupV2, n.SELinux, n.Tmpfs, n.SubPaths = o.Flags.RootDir, version == 2, selinuxErr == nil, hostTmpfs(), hostSubPaths()
		n.HugePageSizes = hugePageSizes(filepath.Join(real.SysRoot, "kernel", "mm", "hugepages"))
		n.ThermalThrottlePaths = thermalThrottlePaths(real.SysRoot)
		if c.CgroupsPerQOS {
			root := filepath.Join(real.SysRoot, "fs", "cgroup")
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

// hugePageSizes lists the host's huge page sizes as libcontainer's HugePageSizes names them
// (hugepages-2048kB is "2MB"), in the directory's order as there.
func hugePageSizes(dir string) []string {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range entries {
		kb, ok := strings.CutPrefix(e.Name(), "hugepages-")
		if !ok {
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSuffix(kb, "kB"), 10, 64)
		if err != nil {
			continue
		}
		out = append(out, qos.HugePageUnitSize(n*1024))
	}
	return out
}

// thermalThrottlePaths are the possible CPUs' thermal_throttle directories that exist, which
// the kubelet masks in containers (pkg/securitycontext, after moby).
func thermalThrottlePaths(sys string) []string {
	data, err := os.ReadFile(filepath.Join(sys, "devices", "system", "cpu", "possible"))
	if err != nil {
		return nil
	}
	var out []string
	for _, r := range strings.Split(strings.TrimSpace(string(data)), ",") {
		first, last, ranged := strings.Cut(r, "-")
		if !ranged {
			last = first
		}
		lo, err1 := strconv.Atoi(first)
		hi, err2 := strconv.Atoi(last)
		if err1 != nil || err2 != nil {
			return nil
		}
		for cpu := lo; cpu <= hi; cpu++ {
			p := fmt.Sprintf("/sys/devices/system/cpu/cpu%d/thermal_throttle", cpu)
			if _, err := os.Stat(filepath.Join(sys, strings.TrimPrefix(p, "/sys/"))); err == nil {
				out = append(out, p)
			}
		}
	}
	return out
}
