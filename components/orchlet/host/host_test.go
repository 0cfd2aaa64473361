package host

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestCheck(t *testing.T) {
	all := Requirements{FailSwapOn: true, FailCgroupV1: true, ProtectKernelDefaults: true}
	tests := []struct {
		name  string
		req   Requirements
		setup func(*Fake)
		want  []string // substrings; empty means the check passes
	}{
		{"clean host passes everything", all, func(*Fake) {}, nil},
		{"swap on refused", all, func(f *Fake) { f.Swap = true }, []string{"--fail-swap-on: swap is on"}},
		{"swap on allowed without the option", Requirements{}, func(f *Fake) { f.Swap = true }, nil},
		{"swap unreadable", all, func(f *Fake) { f.SwapErr = errors.New("boom") }, []string{"--fail-swap-on: cannot tell whether swap is on: boom"}},
		{"cgroup v1 refused", all, func(f *Fake) { f.Cgroup = 1 }, []string{"--fail-cgroupv1: the host uses cgroup v1"}},
		{"cgroup v1 allowed without the option", Requirements{FailSwapOn: true}, func(f *Fake) { f.Cgroup = 1 }, nil},
		{"each differing tunable named", all, func(f *Fake) {
			f.Sysctls["vm/overcommit_memory"] = 0
			f.Sysctls["kernel/panic"] = 0
		}, []string{
			"--protect-kernel-defaults: kernel tunable vm/overcommit_memory is 0, want 1",
			"--protect-kernel-defaults: kernel tunable kernel/panic is 0, want 10",
		}},
		{"missing tunable named", all, func(f *Fake) { delete(f.Sysctls, "kernel/keys/root_maxkeys") },
			[]string{"cannot read kernel tunable kernel/keys/root_maxkeys"}},
		{"all refusals together", all, func(f *Fake) { f.Swap = true; f.Cgroup = 1; f.Sysctls["vm/panic_on_oom"] = 1 },
			[]string{"--fail-swap-on", "--fail-cgroupv1", "vm/panic_on_oom is 1, want 0"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := NewFake()
			tt.setup(f)
			err := Check(f, tt.req)
			if len(tt.want) == 0 {
				if err != nil {
					t.Fatalf("unexpected refusal: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("host accepted")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestRealReadsProcAndSys(t *testing.T) {
	dir := t.TempDir()
	r := &Real{ProcRoot: filepath.Join(dir, "proc"), SysRoot: filepath.Join(dir, "sys")}
	const header = "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n"

	write(t, filepath.Join(r.ProcRoot, "swaps"), header)
	if on, err := r.SwapOn(); err != nil || on {
		t.Errorf("header only: SwapOn = %t, %v; want off", on, err)
	}
	write(t, filepath.Join(r.ProcRoot, "swaps"), header+"/swapfile file 1048572 0 -2\n")
	if on, err := r.SwapOn(); err != nil || !on {
		t.Errorf("one swap file: SwapOn = %t, %v; want on", on, err)
	}

	if _, err := r.CgroupVersion(); err == nil {
		t.Error("no cgroup root: want an error")
	}
	write(t, filepath.Join(r.SysRoot, "fs", "cgroup", "cpu", "tasks"), "")
	if v, err := r.CgroupVersion(); err != nil || v != 1 {
		t.Errorf("v1 tree: CgroupVersion = %d, %v", v, err)
	}
	write(t, filepath.Join(r.SysRoot, "fs", "cgroup", "cgroup.controllers"), "cpu memory\n")
	if v, err := r.CgroupVersion(); err != nil || v != 2 {
		t.Errorf("unified tree: CgroupVersion = %d, %v", v, err)
	}

	write(t, filepath.Join(r.ProcRoot, "sys", "vm", "overcommit_memory"), "1\n")
	if v, err := r.Sysctl("vm/overcommit_memory"); err != nil || v != 1 {
		t.Errorf("Sysctl = %d, %v", v, err)
	}
	if _, err := r.Sysctl("../etc/passwd"); err == nil {
		t.Error("path escape accepted")
	}
}

func TestRealLockExcludesAndSeesContention(t *testing.T) {
	path := filepath.Join(t.TempDir(), "orchlet.lock")
	r := NewReal()
	l, err := r.Lock(path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	if _, err := r.Lock(path); !errors.Is(err, ErrLocked) {
		t.Fatalf("second Lock err = %v, want ErrLocked", err)
	}
	select {
	case <-l.Contended():
	case <-time.After(5 * time.Second):
		t.Fatal("the second opener was not seen as contention")
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	l2, err := r.Lock(path)
	if err != nil {
		t.Fatalf("Lock after Release: %v", err)
	}
	l2.Release()
}

func TestFakeLock(t *testing.T) {
	f := NewFake()
	f.SetHeld("/held", true)
	if _, err := f.Lock("/held"); !errors.Is(err, ErrLocked) {
		t.Errorf("held path: err = %v", err)
	}
	l, err := f.Lock("/free")
	if err != nil {
		t.Fatal(err)
	}
	if !f.Contend("/free") {
		t.Fatal("Contend found no lock")
	}
	select {
	case <-l.Contended():
	default:
		t.Error("Contended not closed")
	}
	l.Release()
	if _, err := f.Lock("/free"); err != nil {
		t.Errorf("Lock after Release: %v", err)
	}
}
