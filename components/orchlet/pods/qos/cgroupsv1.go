package qos

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
)

// v1Subsystems are the cgroup v1 hierarchies a pod cgroup is made in: those whose limits a
// cm.ResourceConfig sets (runc's fs manager writes cpu, memory, pids and hugetlb files), and
// cpuacct for its accounting. The runtime makes the containers' cgroups under the pod's in every
// hierarchy itself (cpuset included, whose CPUs it copies down).
var v1Subsystems = []string{"cpu", "cpuacct", "memory", "pids", "hugetlb"}

// CgroupV1 makes pod cgroups in the cgroup v1 hierarchies mounted under Root (/sys/fs/cgroup on a
// host, one directory per subsystem), writing what runc's fs manager writes for a
// cm.ResourceConfig. A subsystem the host does not mount is skipped, as libcontainer skips it.
type CgroupV1 struct {
	Root string
}

// Ensure creates the cgroup in each mounted subsystem, with its parents, and writes its limits.
func (c CgroupV1) Ensure(path string, cfg PodCgroupConfig) error {
	files := map[string]map[string]string{}
	set := func(subsystem, name, value string) {
		if files[subsystem] == nil {
			files[subsystem] = map[string]string{}
		}
		files[subsystem][name] = value
	}
	if cfg.CPUShares != nil {
		set("cpu", "cpu.shares", strconv.FormatUint(*cfg.CPUShares, 10))
	}
	if cfg.CPUPeriod != nil {
		set("cpu", "cpu.cfs_period_us", strconv.FormatUint(*cfg.CPUPeriod, 10))
	}
	if cfg.CPUQuota != nil {
		set("cpu", "cpu.cfs_quota_us", strconv.FormatInt(*cfg.CPUQuota, 10))
	}
	if cfg.Memory != nil && *cfg.Memory > 0 {
		set("memory", "memory.limit_in_bytes", strconv.FormatInt(*cfg.Memory, 10))
	}
	if cfg.PidsLimit != nil {
		set("pids", "pids.max", strconv.FormatInt(*cfg.PidsLimit, 10))
	}
	for size, limit := range cfg.HugePageLimit {
		set("hugetlb", "hugetlb."+HugePageUnitSize(size)+".limit_in_bytes", strconv.FormatInt(limit, 10))
	}
	for _, s := range v1Subsystems {
		mount := filepath.Join(c.Root, s)
		if _, err := os.Stat(mount); err != nil {
			if len(files[s]) > 0 {
				return fmt.Errorf("cgroup %s: the %s subsystem is not mounted at %s", path, s, mount)
			}
			continue
		}
		dir := filepath.Join(mount, filepath.FromSlash(path))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("cgroup %s: %w", path, err)
		}
		// The period before the quota: the kernel checks a quota against the period it has.
		for _, name := range []string{"cpu.cfs_period_us", "cpu.cfs_quota_us"} {
			if v, ok := files[s][name]; ok {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(v), 0o644); err != nil {
					return fmt.Errorf("cgroup %s: %w", path, err)
				}
				delete(files[s], name)
			}
		}
		for name, v := range files[s] {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(v), 0o644); err != nil {
				return fmt.Errorf("cgroup %s: %w", path, err)
			}
		}
	}
	return nil
}
