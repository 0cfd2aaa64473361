package exhaust

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// On one machine the exhaustion campaign's attackers (this process: 2,400 client TLS handshakes
// and 2,000 HTTP/2 watch connections at the attack's start) take the cores the server needs,
// which attackers on other machines would not. As root, the campaign gives them a CPU weight 16
// times below the server's and the bystanders', in cgroups it makes under its own and removes at
// the end.

// The weights: the attackers a process's default (1024 shares; cgroup v2's 100), so that they
// take the CPU the server leaves as any other process does (at the least weight, 2, every other
// tenant's build came before them, and the watch storm took 17 s to open instead of 1-3 s), the
// server and the bystanders 16 times that. cgroup v2's server weight is Kubernetes' conversion of
// the same shares (1 + (shares-2) x 9999 / 262142, pkg/kubelet/cm).
const (
	serverShares    = 16384
	attackersShares = 1024
	serverWeight    = 625
	attackersWeight = 100
)

// cpuPlan is where the campaign's processes go and at what CPU weight; with no version, nowhere
// (why says why), and every process shares the CPU as any other does.
type cpuPlan struct {
	version   int    // cgroup v1 or v2
	parent    string // this process's cgroup directory, where it returns at the end
	file      string // cpu.shares or cpu.weight
	server    string // the server's and the bystanders' group
	who       string // the server's processes, for the cpu line: orch-apiserver when empty
	attackers string // the attackers' group; empty with --attackers-share-cpu: the server's
	serverW   int
	attackW   int
	why       string
	pid       int
	made      []string // the groups made, to remove
}

// planCPU chooses, from the cgroup filesystem under root and this process's /proc/self/cgroup,
// the groups the campaign makes: under the current cgroup of the cpu controller, v1's where a v1
// hierarchy has it, else the unified hierarchy's when it offers cpu to the current group.
func planCPU(root, procSelfCgroup string, pid, euid int, share bool) cpuPlan {
	if euid != 0 {
		return cpuPlan{why: "not root"}
	}
	var p cpuPlan
	var v2Path string
	for line := range strings.Lines(procSelfCgroup) {
		fields := strings.SplitN(strings.TrimSpace(line), ":", 3)
		if len(fields) != 3 {
			continue
		}
		if fields[0] == "0" && fields[1] == "" {
			v2Path = fields[2]
		} else if slices.Contains(strings.Split(fields[1], ","), "cpu") {
			p = cpuPlan{version: 1, parent: filepath.Join(root, "cpu", fields[2]), file: "cpu.shares", serverW: serverShares, attackW: attackersShares}
		}
	}
	switch {
	case p.version == 1:
		if _, err := os.Stat(filepath.Join(p.parent, "cpu.shares")); err != nil {
			return cpuPlan{why: "the cpu controller's group is not at " + p.parent}
		}
	case v2Path != "":
		mount := root
		if _, err := os.Stat(filepath.Join(root, "cgroup.controllers")); err != nil {
			mount = filepath.Join(root, "unified") // a hybrid host's unified hierarchy
		}
		p = cpuPlan{version: 2, parent: filepath.Join(mount, v2Path), file: "cpu.weight", serverW: serverWeight, attackW: attackersWeight}
		data, err := os.ReadFile(filepath.Join(p.parent, "cgroup.controllers"))
		if err != nil || !slices.Contains(strings.Fields(string(data)), "cpu") {
			return cpuPlan{why: "no cpu controller in " + p.parent}
		}
	default:
		return cpuPlan{why: "no cpu controller in /proc/self/cgroup"}
	}
	p.pid = pid
	name := "orchchaos-" + strconv.Itoa(pid)
	if share {
		p.server = filepath.Join(p.parent, name)
	} else {
		p.server = filepath.Join(p.parent, name+"-server")
		p.attackers = filepath.Join(p.parent, name+"-attackers")
	}
	return p
}

// String is the campaign's first line: what it did with the CPU.
func (p cpuPlan) String() string {
	who := p.who
	if who == "" {
		who = "orch-apiserver"
	}
	switch {
	case p.version == 0:
		return "no CPU weights (" + p.why + "): the attackers share the CPU with the server, as every process does"
	case p.attackers == "":
		return fmt.Sprintf("cgroup v%d: the attackers, %s and the bystanders in %s at %s %d (--attackers-share-cpu: one weight, the attackers' CPU the server's)", p.version, who, p.server, p.file, p.serverW)
	}
	return fmt.Sprintf("cgroup v%d: %s and the bystanders (the /readyz probe, the well-behaved client) in %s at %s %d, the attackers (this process) in %s at %d, as if the attackers were other machines",
		p.version, who, p.server, p.file, p.serverW, p.attackers, p.attackW)
}

// apply makes the groups, weights them and moves this process into the server's, where the
// server and the bystanders it starts next begin; on an error it undoes what it made.
func (p *cpuPlan) apply() error {
	if p.version == 0 {
		return nil
	}
	if p.version == 2 {
		// The children get the cpu controller from their parent; a parent other than the
		// hierarchy's root that holds processes cannot give it (EBUSY).
		if err := os.WriteFile(filepath.Join(p.parent, "cgroup.subtree_control"), []byte("+cpu"), 0o644); err != nil {
			return fmt.Errorf("enabling cpu for the groups under %s: %w", p.parent, err)
		}
	}
	for _, g := range []struct {
		dir    string
		weight int
	}{{p.server, p.serverW}, {p.attackers, p.attackW}} {
		if g.dir == "" {
			continue
		}
		if err := os.Mkdir(g.dir, 0o755); err != nil {
			p.remove()
			return err
		}
		p.made = append(p.made, g.dir)
		if err := os.WriteFile(filepath.Join(g.dir, p.file), []byte(strconv.Itoa(g.weight)), 0o644); err != nil {
			p.remove()
			return err
		}
	}
	if err := p.move(p.server); err != nil {
		p.remove()
		return err
	}
	return nil
}

// failed is the plan when apply could not weight the processes: none, and why.
func (p cpuPlan) failed(err error) cpuPlan {
	return cpuPlan{why: fmt.Sprintf("cgroup v%d: %v", p.version, err)}
}

// toAttackers moves this process into the attackers' group, its children left in the server's.
func (p *cpuPlan) toAttackers() error {
	if p.attackers == "" {
		return nil
	}
	return p.move(p.attackers)
}

// undo moves this process back and removes the groups, once the server and the bystanders have
// ended.
func (p *cpuPlan) undo() error {
	if len(p.made) == 0 {
		return nil
	}
	return errors.Join(p.move(p.parent), p.remove())
}

func (p *cpuPlan) move(dir string) error {
	return os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(p.pid)), 0o644)
}

// remove removes the groups made (a cgroup directory is removed whole, its files with it).
func (p *cpuPlan) remove() error {
	var errs []error
	for _, dir := range p.made {
		if err := os.Remove(dir); err != nil {
			errs = append(errs, err)
		}
	}
	p.made = nil
	return errors.Join(errs...)
}
