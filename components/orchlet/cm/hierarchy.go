package cm

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"orch.io/orch/components/orchlet/pods/qos"
)

// Hierarchy is the host's cgroup filesystem mounted at Root (/sys/fs/cgroup on a host): one
// directory per subsystem on cgroup v1, the unified tree on v2. Names are cgroupfs paths from the
// hierarchy's root, "/orchpods" or "/orchpods.slice".
type Hierarchy struct {
	Root string
	V2   bool
}

// validated are the v1 subsystems a cgroup must exist in to be used, as the kubelet's cgroup
// manager's Validate requires them (hugetlb only where mounted).
var validated = []string{"cpu", "cpuacct", "cpuset", "memory", "pids", "hugetlb"}

// unifiedNeeded are the v2 controllers a cgroup must have enabled, of those the root offers
// (the kubelet's getSupportedUnifiedControllers).
var unifiedNeeded = []string{"cpu", "cpuset", "memory", "pids", "hugetlb"}

// Validate says whether the cgroup exists as the kubelet's cgroup manager requires: in every
// mounted subsystem it uses on v1, with the controllers it needs on v2.
func (h Hierarchy) Validate(name string) error {
	if h.V2 {
		dir := h.dir("", name)
		have, err := readControllers(filepath.Join(dir, "cgroup.controllers"))
		if err != nil {
			return fmt.Errorf("could not read controllers for cgroup %q: %w", name, err)
		}
		offered, err := readControllers(filepath.Join(h.Root, "cgroup.controllers"))
		if err != nil {
			return fmt.Errorf("could not read the root's controllers: %w", err)
		}
		var missing []string
		for _, c := range unifiedNeeded {
			if slices.Contains(offered, c) && !slices.Contains(have, c) {
				missing = append(missing, c)
			}
		}
		if len(missing) > 0 {
			return fmt.Errorf("cgroup %q has some missing controllers: %s", name, strings.Join(missing, ", "))
		}
		return nil
	}
	var missing []string
	for _, s := range validated {
		if _, err := os.Stat(filepath.Join(h.Root, s)); err != nil {
			continue // not mounted on this host
		}
		if p := h.dir(s, name); !exists(p) {
			missing = append(missing, p)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("cgroup %q has some missing paths: %s", name, strings.Join(missing, ", "))
	}
	return nil
}

// HugeTLB says whether the hierarchy has the hugetlb controller: a huge page limit is written
// only where it does (a kernel may offer huge pages with the controller unmounted).
func (h Hierarchy) HugeTLB() bool {
	if h.V2 {
		offered, err := readControllers(filepath.Join(h.Root, "cgroup.controllers"))
		return err == nil && slices.Contains(offered, "hugetlb")
	}
	return exists(filepath.Join(h.Root, "hugetlb"))
}

// Set writes the cgroup's limits as runc's fs managers write a cm.ResourceConfig, making the
// cgroup (and on v2 enabling its parents' controllers) where it is missing.
func (h Hierarchy) Set(name string, cfg qos.PodCgroupConfig) error {
	if h.V2 {
		return qos.CgroupV2{Root: h.Root}.Ensure(name, cfg)
	}
	return qos.CgroupV1{Root: h.Root}.Ensure(name, cfg)
}

// Join makes the cgroup in every hierarchy mounted (v1) or the unified one (v2) and moves pid
// into it, as libcontainer's fs manager applies a process: a new v1 cpuset cgroup gets its
// parent's CPUs and memory nodes first, without which it takes no process.
func (h Hierarchy) Join(name string, pid int) error {
	subsystems := []string{""}
	if !h.V2 {
		var err error
		if subsystems, err = h.mounted(); err != nil {
			return err
		}
	}
	var errs []error
	for _, s := range subsystems {
		dir := h.dir(s, name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			errs = append(errs, fmt.Errorf("cgroup %s: %w", name, err))
			continue
		}
		if s == "cpuset" {
			if err := inheritCpuset(filepath.Join(h.Root, s), dir); err != nil {
				errs = append(errs, fmt.Errorf("cgroup %s: %w", name, err))
				continue
			}
		}
		if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0o644); err != nil {
			errs = append(errs, fmt.Errorf("moving process %d into cgroup %s: %w", pid, dir, err))
		}
	}
	return errors.Join(errs...)
}

// Pids lists the processes of the cgroup (v1: of its devices subsystem, as the kubelet's GetPids
// reads it, else cpu's).
func (h Hierarchy) Pids(name string) ([]int, error) {
	dir := h.dir("", name)
	if !h.V2 {
		dir = h.dir("devices", name)
		if !exists(filepath.Join(h.Root, "devices")) {
			dir = h.dir("cpu", name)
		}
	}
	data, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	if err != nil {
		return nil, err
	}
	var pids []int
	for _, f := range strings.Fields(string(data)) {
		pid, err := strconv.Atoi(f)
		if err != nil {
			return nil, fmt.Errorf("%s: %q is not a process id", dir, f)
		}
		pids = append(pids, pid)
	}
	return pids, nil
}

// File reads one interface file of the cgroup, in subsystem on v1 (ignored on v2).
func (h Hierarchy) File(subsystem, name, file string) (string, error) {
	if h.V2 {
		subsystem = ""
	}
	data, err := os.ReadFile(filepath.Join(h.dir(subsystem, name), file))
	return strings.TrimSpace(string(data)), err
}

func (h Hierarchy) dir(subsystem, name string) string {
	return filepath.Join(h.Root, subsystem, filepath.FromSlash(path.Clean("/"+name)))
}

// mounted are the v1 hierarchies under Root: each directory but cgroup v2's; a symlink (cpu to
// cpu,cpuacct) is skipped, its target being listed.
func (h Hierarchy) mounted() ([]string, error) {
	entries, err := os.ReadDir(h.Root)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		if e.IsDir() && e.Name() != "unified" {
			out = append(out, e.Name())
		}
	}
	return out, nil
}

func inheritCpuset(root, dir string) error {
	// Fill each level from the top down: a cpuset cgroup copies nothing from its parent itself.
	var levels []string
	for p := dir; len(p) > len(root); p = filepath.Dir(p) {
		levels = append([]string{p}, levels...)
	}
	for _, p := range levels {
		for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
			mine, err := os.ReadFile(filepath.Join(p, f))
			if err == nil && strings.TrimSpace(string(mine)) != "" {
				continue
			}
			parent, err := os.ReadFile(filepath.Join(filepath.Dir(p), f))
			if err != nil {
				if errors.Is(err, fs.ErrNotExist) {
					continue // a directory standing in for a cgroup, without the files
				}
				return err
			}
			if err := os.WriteFile(filepath.Join(p, f), parent, 0o644); err != nil {
				return err
			}
		}
	}
	return nil
}

func readControllers(path string) ([]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return strings.Fields(string(data)), nil
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
