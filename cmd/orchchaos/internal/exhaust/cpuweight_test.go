package exhaust

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The campaign's groups: under the current cgroup of the hierarchy that has the cpu controller,
// v1's where a v1 hierarchy has it (a hybrid host's unified hierarchy then has no cpu), else the
// unified one's; none, and why, when it cannot.
func TestPlanCPU(t *testing.T) {
	// A cgroupfs root with the files each case needs; a directory stands in for each cgroup.
	fake := func(t *testing.T, files map[string]string) string {
		root := t.TempDir()
		for name, content := range files {
			p := filepath.Join(root, name)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return root
	}
	hybrid := map[string]string{"cpu/cpu.shares": "1024", "cpu/user/cpu.shares": "1024", "unified/cgroup.controllers": "", "unified/user/cgroup.controllers": ""}
	unified := map[string]string{"cgroup.controllers": "cpuset cpu io memory pids", "init.scope/cgroup.controllers": "cpu memory", "user.slice/cgroup.controllers": "memory pids"}
	tests := []struct {
		name     string
		files    map[string]string
		cgroup   string
		euid     int
		share    bool
		want     cpuPlan // the root prefixed to its directories
		wantWhy  string
		wantLine string
	}{
		{name: "v1, at the root", files: hybrid, cgroup: "9:name=systemd:/\n2:cpuacct:/\n1:cpu:/\n0::/\n",
			want:     cpuPlan{version: 1, parent: "cpu", file: "cpu.shares", server: "cpu/orchchaos-42-server", attackers: "cpu/orchchaos-42-attackers", serverW: 16384, attackW: 1024},
			wantLine: "cgroup v1: orch-apiserver and the bystanders (the /readyz probe, the well-behaved client) in ROOT/cpu/orchchaos-42-server at cpu.shares 16384, the attackers (this process) in ROOT/cpu/orchchaos-42-attackers at 1024, as if the attackers were other machines"},
		{name: "v1 with cpuacct, in a group", files: hybrid, cgroup: "4:cpu,cpuacct:/user\n0::/user\n",
			want: cpuPlan{version: 1, parent: "cpu/user", file: "cpu.shares", server: "cpu/user/orchchaos-42-server", attackers: "cpu/user/orchchaos-42-attackers", serverW: 16384, attackW: 1024}},
		{name: "v1, the attackers sharing", files: hybrid, cgroup: "1:cpu:/\n", share: true,
			want:     cpuPlan{version: 1, parent: "cpu", file: "cpu.shares", server: "cpu/orchchaos-42", serverW: 16384, attackW: 1024},
			wantLine: "cgroup v1: the attackers, orch-apiserver and the bystanders in ROOT/cpu/orchchaos-42 at cpu.shares 16384 (--attackers-share-cpu: one weight, the attackers' CPU the server's)"},
		{name: "v1 named, its group missing", files: map[string]string{}, cgroup: "1:cpu:/user\n", wantWhy: "the cpu controller's group is not at ROOT/cpu/user"},
		{name: "v2, at a group with cpu", files: unified, cgroup: "0::/init.scope\n",
			want: cpuPlan{version: 2, parent: "init.scope", file: "cpu.weight", server: "init.scope/orchchaos-42-server", attackers: "init.scope/orchchaos-42-attackers", serverW: 625, attackW: 100}},
		{name: "v2, cpu not given to the group", files: unified, cgroup: "0::/user.slice\n", wantWhy: "no cpu controller in ROOT/user.slice"},
		{name: "hybrid without cpu in v1", files: hybrid, cgroup: "0::/user\n", wantWhy: "no cpu controller in ROOT/unified/user"},
		{name: "no controllers", files: unified, cgroup: "", wantWhy: "no cpu controller in /proc/self/cgroup"},
		{name: "not root", files: hybrid, cgroup: "1:cpu:/\n", euid: 1000, wantWhy: "not root",
			wantLine: "no CPU weights (not root): the attackers share the CPU with the server, as every process does"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := fake(t, tt.files)
			got := planCPU(root, tt.cgroup, 42, tt.euid, tt.share)
			if tt.wantWhy != "" {
				if got.version != 0 || strings.ReplaceAll(got.why, root, "ROOT") != tt.wantWhy {
					t.Errorf("got %+v, want none because %q", got, tt.wantWhy)
				}
			} else {
				want := tt.want
				want.pid = 42
				for _, d := range []*string{&want.parent, &want.server, &want.attackers} {
					if *d != "" {
						*d = filepath.Join(root, *d)
					}
				}
				if got.version != want.version || got.parent != want.parent || got.file != want.file || got.server != want.server || got.attackers != want.attackers || got.serverW != want.serverW || got.attackW != want.attackW || got.pid != 42 {
					t.Errorf("got  %+v\nwant %+v", got, want)
				}
			}
			if line := strings.ReplaceAll(got.String(), root, "ROOT"); tt.wantLine != "" && line != tt.wantLine {
				t.Errorf("line %q\nwant %q", line, tt.wantLine)
			}
		})
	}
}

// apply makes and weights both groups and moves the process into the server's; toAttackers moves
// it, undo back (on a fake root the groups stay: a real cgroup is removed with its files).
func TestCPUPlanApply(t *testing.T) {
	for _, version := range []int{1, 2} {
		root := t.TempDir()
		p := cpuPlan{version: version, parent: root, file: "cpu.shares", serverW: 16384, attackW: 2, pid: 42,
			server: filepath.Join(root, "s"), attackers: filepath.Join(root, "a")}
		read := func(name string) string {
			data, _ := os.ReadFile(filepath.Join(root, name))
			return string(data)
		}
		if err := p.apply(); err != nil {
			t.Fatal(err)
		}
		if read("s/cpu.shares") != "16384" || read("a/cpu.shares") != "2" || read("s/cgroup.procs") != "42" || read("a/cgroup.procs") != "" {
			t.Errorf("v%d: after apply: server %q in %q, attackers %q in %q", version, read("s/cpu.shares"), read("s/cgroup.procs"), read("a/cpu.shares"), read("a/cgroup.procs"))
		}
		if want := map[int]string{1: "", 2: "+cpu"}[version]; read("cgroup.subtree_control") != want {
			t.Errorf("v%d: subtree_control %q, want %q", version, read("cgroup.subtree_control"), want)
		}
		if err := p.toAttackers(); err != nil || read("a/cgroup.procs") != "42" {
			t.Errorf("v%d: toAttackers: %v, %q", version, err, read("a/cgroup.procs"))
		}
		err := p.undo()
		if read("cgroup.procs") != "42" || err == nil {
			t.Errorf("v%d: undo: %v, parent's procs %q", version, err, read("cgroup.procs"))
		}
	}
	// A group that cannot be made: nothing left behind, the reason in the first line.
	root := t.TempDir()
	p := cpuPlan{version: 1, parent: root, file: "cpu.shares", pid: 42, server: filepath.Join(root, "missing", "s"), attackers: filepath.Join(root, "a")}
	err := p.apply()
	if err == nil {
		t.Fatal("apply made a group under a missing directory")
	}
	if _, aerr := os.Stat(p.attackers); len(p.made) != 0 || aerr == nil {
		t.Errorf("left behind: %v, the attackers' group %v", p.made, aerr)
	}
	if line := p.failed(err).String(); !strings.HasPrefix(line, "no CPU weights (cgroup v1: mkdir ") {
		t.Errorf("line %q", line)
	}
}
