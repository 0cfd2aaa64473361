package conformance

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
)

// nodeAllocatableSteps check what the agent does to this host outside its pods: its own process
// settings and the cgroups node allocatable sizes. They read the
// host's procfs and cgroup filesystem (/proc, /sys/fs/cgroup), as an operator would.
func nodeAllocatableSteps() []StepDef {
	return []StepDef{
		{`^the host has the cgroup "([^"]*)"$`, func(w *World) any { return w.hostMakesCgroup }},
		{`^the host's cgroup "([^"]*)" has the memory limit "([^"]*)"$`, func(w *World) any { return w.cgroupMemoryLimit }},
		{`^the host's cgroup "([^"]*)" has the cpu shares of "([^"]*)"$`, func(w *World) any { return w.cgroupCPUShares }},
		{`^the running agent's process has the OOM score adjustment (-?\d+)$`, func(w *World) any { return w.agentOOMScoreAdj }},
		{`^the running agent's process has the open-files limit (\d+)$`, func(w *World) any { return w.agentOpenFiles }},
		{`^the agent run with "([^"]*)" exits naming "([^"]*)"$`, func(w *World) any { return w.agentRunExits }},
	}
}

const cgroupRoot = "/sys/fs/cgroup"

func cgroupV2() bool {
	_, err := os.Stat(filepath.Join(cgroupRoot, "cgroup.controllers"))
	return err == nil
}

// cgroupDir is the cgroup's directory in the controller's hierarchy (v1) or the unified one (v2).
func cgroupDir(controller, name string) string {
	if cgroupV2() {
		return filepath.Join(cgroupRoot, name)
	}
	return filepath.Join(cgroupRoot, controller, name)
}

// hostMakesCgroup makes a cgroup as an operator makes a reserved one before the agent starts: in
// every v1 hierarchy, or in the unified one; it is removed when the scenario ends, with the
// cgroups the agent made under it.
func (w *World) hostMakesCgroup(name string) error {
	var dirs []string
	if cgroupV2() {
		dirs = []string{filepath.Join(cgroupRoot, name)}
	} else {
		entries, err := os.ReadDir(cgroupRoot)
		if err != nil {
			return err
		}
		for _, e := range entries {
			if e.IsDir() && e.Name() != "unified" {
				dirs = append(dirs, filepath.Join(cgroupRoot, e.Name(), name))
			}
		}
	}
	for _, d := range dirs {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return fmt.Errorf("making the cgroup %s: %w", name, err)
		}
		w.cleanup = append(w.cleanup, func() { removeCgroup(d) })
	}
	return nil
}

// removeCgroup removes a cgroup directory and the cgroups below it, deepest first: a cgroup's
// files go with its directory.
func removeCgroup(dir string) {
	var dirs []string
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			dirs = append(dirs, p)
		}
		return nil
	})
	for i := len(dirs) - 1; i >= 0; i-- {
		_ = os.Remove(dirs[i])
	}
}

// hostQuantity reads "{memory}" as the host's MemTotal and "{cpus}" as its CPUs, less what follows
// a "-": "{memory}-1536Mi"; a plain quantity is itself.
func hostQuantity(expr string) (resource.Quantity, error) {
	base, less, _ := strings.Cut(expr, "-")
	var q resource.Quantity
	switch base {
	case "{memory}":
		total, err := memTotal()
		if err != nil {
			return q, err
		}
		q = *resource.NewQuantity(total, resource.BinarySI)
	case "{cpus}":
		q = *resource.NewQuantity(int64(runtime.NumCPU()), resource.DecimalSI)
	default:
		return resource.ParseQuantity(expr)
	}
	if less != "" {
		l, err := resource.ParseQuantity(less)
		if err != nil {
			return q, err
		}
		q.Sub(l)
	}
	return q, nil
}

func memTotal() (int64, error) {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if fields := strings.Fields(sc.Text()); len(fields) >= 2 && fields[0] == "MemTotal:" {
			kb, err := strconv.ParseInt(fields[1], 10, 64)
			return kb * 1024, err
		}
	}
	return 0, fmt.Errorf("/proc/meminfo has no MemTotal")
}

func readTrimmed(path string) (string, error) {
	data, err := os.ReadFile(path)
	return strings.TrimSpace(string(data)), err
}

// cgroupMemoryLimit compares the cgroup's memory limit (memory.limit_in_bytes on v1, memory.max
// on v2) with a quantity, or with "max": no limit. The pods' cgroup is named the target's way.
func (w *World) cgroupMemoryLimit(name, want string) error {
	name = w.t.Profile.Spell(name)
	file := "memory.limit_in_bytes"
	if cgroupV2() {
		file = "memory.max"
	}
	return eventually(settle, func() error {
		got, err := readTrimmed(filepath.Join(cgroupDir("memory", name), file))
		if err != nil {
			return fmt.Errorf("the host's cgroup %s: %w", name, err)
		}
		if want == "max" {
			// v1 reads an unset limit as the largest page-aligned value.
			if got == "max" || got == "9223372036854771712" {
				return nil
			}
			return fmt.Errorf("the host's cgroup %s has %s %s, want no limit", name, file, got)
		}
		q, err := hostQuantity(want)
		if err != nil {
			return errStop{err}
		}
		if got != strconv.FormatInt(q.Value(), 10) {
			return fmt.Errorf("the host's cgroup %s has %s %s, want %d (%s)", name, file, got, q.Value(), want)
		}
		return nil
	})
}

// cgroupCPUShares compares the cgroup's cpu.shares (v1), or cpu.weight (v2, converted as
// libcontainer converts shares), with what a CPU quantity is given: 1024 shares a CPU.
func (w *World) cgroupCPUShares(name, cpu string) error {
	name = w.t.Profile.Spell(name)
	q, err := hostQuantity(cpu)
	if err != nil {
		return err
	}
	shares := max(q.MilliValue()*1024/1000, 2)
	file, want := "cpu.shares", strconv.FormatInt(shares, 10)
	if cgroupV2() {
		file, want = "cpu.weight", strconv.FormatInt(1+((shares-2)*9999)/262142, 10)
	}
	return eventually(settle, func() error {
		got, err := readTrimmed(filepath.Join(cgroupDir("cpu", name), file))
		if err != nil {
			return fmt.Errorf("the host's cgroup %s: %w", name, err)
		}
		if got != want {
			return fmt.Errorf("the host's cgroup %s has %s %s, want %s (%s CPUs)", name, file, got, want, cpu)
		}
		return nil
	})
}

// agentPid is the running agent's process id.
func (w *World) agentPid() (int, error) {
	if w.n == nil || w.n.agent == nil {
		return 0, fmt.Errorf("no agent runs")
	}
	return w.n.agent.cmd.Process.Pid, nil
}

func (w *World) agentOOMScoreAdj(want string) error {
	pid, err := w.agentPid()
	if err != nil {
		return err
	}
	return eventually(settle, func() error {
		got, err := readTrimmed(fmt.Sprintf("/proc/%d/oom_score_adj", pid))
		if err != nil {
			return err
		}
		if got != want {
			return fmt.Errorf("the agent's oom_score_adj is %s, want %s", got, want)
		}
		return nil
	})
}

// agentOpenFiles compares the soft and hard "Max open files" of /proc/<pid>/limits.
func (w *World) agentOpenFiles(want string) error {
	pid, err := w.agentPid()
	if err != nil {
		return err
	}
	return eventually(settle, func() error {
		limits, err := os.ReadFile(fmt.Sprintf("/proc/%d/limits", pid))
		if err != nil {
			return err
		}
		for _, line := range strings.Split(string(limits), "\n") {
			if rest, ok := strings.CutPrefix(line, "Max open files"); ok {
				f := strings.Fields(rest)
				if len(f) >= 2 && f[0] == want && f[1] == want {
					return nil
				}
				return fmt.Errorf("the agent's open-files limit is %q, want %s (soft and hard)", strings.TrimSpace(rest), want)
			}
		}
		return fmt.Errorf("/proc/%d/limits has no open-files limit", pid)
	})
}

// agentRunExits starts the agent as "the agent runs with" does and wants it to exit instead,
// its output naming what stopped it.
func (w *World) agentRunExits(args, name string) error {
	return w.agentRunExitsWith(args, name, func(out string) bool { return strings.Contains(out, name) })
}

// agentRunExitsWith is agentRunExits with the output judged by named.
func (w *World) agentRunExitsWith(args, name string, named func(output string) bool) error {
	err := w.agentRuns(args)
	if err == nil {
		// An agent may check its node allocatable only once its runtime answers, after it says it
		// runs (the kubelet does, in its container manager's start): its exit then still counts.
		select {
		case <-w.n.agent.exited:
			err = fmt.Errorf("it exited after it said it runs")
		case <-time.After(settle):
			return fmt.Errorf("the agent runs, want it to exit naming %s", name)
		}
	}
	if w.n == nil || w.n.agent == nil || !named(w.n.agent.out.output()) {
		return fmt.Errorf("the agent did not exit naming %s: %v", name, err)
	}
	select {
	case <-w.n.agent.exited:
		return nil
	default:
		return fmt.Errorf("the agent did not exit: %v", err)
	}
}
