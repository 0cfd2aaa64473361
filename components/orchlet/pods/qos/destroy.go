package qos

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
)

// Children names the cgroups directly under path.
func (c CgroupV2) Children(path string) ([]string, error) {
	return childDirs([]string{c.Root}, path)
}

// Destroy kills the processes of the cgroup's tree and removes it, as the kubelet's pod container
// manager's Destroy does.
func (c CgroupV2) Destroy(path string) error {
	return destroy([]string{c.Root}, path)
}

// Children names the cgroups directly under path in any hierarchy: a pod cgroup may be left in
// one only (the runtime makes the pod's cgroup in every hierarchy, the agent in its subsystems').
func (c CgroupV1) Children(path string) ([]string, error) {
	hs, err := c.hierarchies()
	if err != nil {
		return nil, err
	}
	return childDirs(hs, path)
}

// Destroy kills the processes of the cgroup's tree and removes it in every hierarchy mounted,
// as libcontainer's Destroy removes every path of a cgroup.
func (c CgroupV1) Destroy(path string) error {
	hs, err := c.hierarchies()
	if err != nil {
		return err
	}
	return destroy(hs, path)
}

// hierarchies are the directories under Root, each a mounted hierarchy (a link such as cpu to
// cpu,cpuacct names one already listed).
func (c CgroupV1) hierarchies() ([]string, error) {
	entries, err := os.ReadDir(c.Root)
	if err != nil {
		return nil, fmt.Errorf("cgroup hierarchies: %w", err)
	}
	var out []string
	for _, e := range entries {
		if e.IsDir() {
			out = append(out, filepath.Join(c.Root, e.Name()))
		}
	}
	return out, nil
}

// childDirs is the sorted union of the directories under path in each hierarchy.
func childDirs(hierarchies []string, path string) ([]string, error) {
	seen := map[string]bool{}
	for _, h := range hierarchies {
		entries, err := os.ReadDir(filepath.Join(h, filepath.FromSlash(path)))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("cgroup %s: %w", path, err)
		}
		for _, e := range entries {
			if e.IsDir() {
				seen[e.Name()] = true
			}
		}
	}
	out := make([]string, 0, len(seen))
	for name := range seen {
		out = append(out, name)
	}
	slices.Sort(out)
	return out, nil
}

// destroy kills every process in the cgroup's tree in any hierarchy, then removes the tree in
// each, deepest first. A process that has not yet left its cgroup when the kill returns keeps it
// from being removed: the next housekeeping tries again, as the kubelet's does.
func destroy(hierarchies []string, path string) error {
	var dirs []string // every cgroup of the tree in every hierarchy, parents before children
	for _, h := range hierarchies {
		err := filepath.WalkDir(filepath.Join(h, filepath.FromSlash(path)), func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		})
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("cgroup %s: %w", path, err)
		}
	}
	if err := killProcs(dirs); err != nil {
		return fmt.Errorf("cgroup %s: %w", path, err)
	}
	var errs []error
	for _, dir := range slices.Backward(dirs) {
		if err := removeCgroupDir(dir); err != nil {
			errs = append(errs, fmt.Errorf("cgroup %s: %w", path, err))
		}
	}
	return errors.Join(errs...)
}

// killProcs sends SIGKILL to every process the cgroups' cgroup.procs list, each once, as the
// pod container manager's tryKillingCgroupProcesses; one already gone is killed.
func killProcs(dirs []string) error {
	killed := map[int]bool{}
	var errs []error
	for _, dir := range dirs {
		data, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return err
		}
		for _, f := range strings.Fields(string(data)) {
			pid, err := strconv.Atoi(f)
			if err != nil || pid <= 0 || killed[pid] {
				continue
			}
			killed[pid] = true
			if err := syscall.Kill(pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
				errs = append(errs, fmt.Errorf("killing process %d: %w", pid, err))
			}
		}
	}
	return errors.Join(errs...)
}

// removeCgroupDir removes one cgroup, as rmdir does (the kernel removes its interface files; a
// plain directory standing in for one holds the written files too); a missing one is removed.
func removeCgroupDir(dir string) error {
	err := os.Remove(dir)
	if err == nil || errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if entries, rerr := os.ReadDir(dir); rerr == nil && allRegular(entries) {
		return os.RemoveAll(dir)
	}
	return err
}
