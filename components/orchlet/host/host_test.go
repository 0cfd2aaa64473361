package host

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
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

// The facts the agent reads of the machine: memory, what it tells of itself, huge page sizes,
// SELinux and the CPUs' thermal throttle directories, each read under the roots given.
func TestRealReadsMachineFacts(t *testing.T) {
	dir := t.TempDir()
	r := &Real{ProcRoot: filepath.Join(dir, "proc"), SysRoot: filepath.Join(dir, "sys"), EtcRoot: filepath.Join(dir, "etc")}
	if r.Procfs() != r.ProcRoot || r.Sysfs() != r.SysRoot {
		t.Errorf("roots %q %q", r.Procfs(), r.Sysfs())
	}

	if _, err := r.Memory(); err == nil {
		t.Error("no meminfo: want an error")
	}
	write(t, filepath.Join(r.ProcRoot, "meminfo"), "MemFree: 10 kB\n")
	if _, err := r.Memory(); err == nil || !strings.Contains(err.Error(), "has no MemTotal") {
		t.Errorf("meminfo without MemTotal: %v", err)
	}
	write(t, filepath.Join(r.ProcRoot, "meminfo"), "MemTotal:       8048576 kB\nMemFree: 10 kB\n")
	if m, err := r.Memory(); err != nil || m != 8048576*1024 {
		t.Errorf("Memory = %d, %v", m, err)
	}

	if got := r.SystemInfo(); got.OSImage != "Linux" || got.MachineID != "" || got.KernelVersion != "" {
		t.Errorf("nothing to read: %+v, want only the OS image Linux", got)
	}
	write(t, filepath.Join(r.EtcRoot, "machine-id"), "abc\n")
	write(t, filepath.Join(r.EtcRoot, "os-release"), "NAME=Debian\nPRETTY_NAME=\"Debian GNU/Linux 13 (trixie)\"\n")
	write(t, filepath.Join(r.SysRoot, "class", "dmi", "id", "product_uuid"), "uuid-1\n")
	write(t, filepath.Join(r.ProcRoot, "sys", "kernel", "random", "boot_id"), "boot-1\n")
	write(t, filepath.Join(r.ProcRoot, "sys", "kernel", "osrelease"), "6.12.0\n")
	got := r.SystemInfo()
	if got.MachineID != "abc" || got.SystemUUID != "uuid-1" || got.BootID != "boot-1" || got.KernelVersion != "6.12.0" || got.OSImage != "Debian GNU/Linux 13 (trixie)" {
		t.Errorf("SystemInfo = %+v", got)
	}

	if sizes := r.HugePageSizes(); sizes != nil {
		t.Errorf("no hugepages directory: %v", sizes)
	}
	for _, d := range []string{"hugepages-2048kB", "hugepages-1048576kB", "other", "hugepages-xkB"} {
		if err := os.MkdirAll(filepath.Join(r.SysRoot, "kernel", "mm", "hugepages", d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if sizes := r.HugePageSizes(); !slices.Equal(sizes, []int64{1 << 30, 2 << 20}) {
		t.Errorf("HugePageSizes = %v", sizes)
	}
	write(t, filepath.Join(r.SysRoot, "kernel", "mm", "hugepages", "hugepages-2048kB", "nr_hugepages"), "512\n")
	if totals := r.HugePageTotals(); len(totals) != 1 || totals[2<<20] != 512 {
		t.Errorf("HugePageTotals = %v, want 512 pages of 2MiB (the 1GiB size has no count)", totals)
	}

	if r.SELinux() {
		t.Error("SELinux without its enforce file")
	}
	write(t, filepath.Join(r.SysRoot, "fs", "selinux", "enforce"), "1\n")
	if !r.SELinux() {
		t.Error("SELinux not seen")
	}

	if paths := r.ThermalThrottlePaths(); paths != nil {
		t.Errorf("no possible CPUs: %v", paths)
	}
	write(t, filepath.Join(r.SysRoot, "devices", "system", "cpu", "possible"), "0-2,5\n")
	for _, cpu := range []string{"cpu0", "cpu2", "cpu5"} {
		if err := os.MkdirAll(filepath.Join(r.SysRoot, "devices", "system", "cpu", cpu, "thermal_throttle"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{"/sys/devices/system/cpu/cpu0/thermal_throttle", "/sys/devices/system/cpu/cpu2/thermal_throttle", "/sys/devices/system/cpu/cpu5/thermal_throttle"}
	if paths := r.ThermalThrottlePaths(); !slices.Equal(paths, want) {
		t.Errorf("ThermalThrottlePaths = %v, want %v", paths, want)
	}
	write(t, filepath.Join(r.SysRoot, "devices", "system", "cpu", "possible"), "0-x\n")
	if paths := r.ThermalThrottlePaths(); paths != nil {
		t.Errorf("unreadable range: %v", paths)
	}
}

// A Fake is a simulated machine unless given roots, and answers the facts from its fields.
func TestFakeFacts(t *testing.T) {
	f := NewFake()
	if f.Procfs() != "" || f.Sysfs() != "" {
		t.Errorf("roots %q %q, want none", f.Procfs(), f.Sysfs())
	}
	if m, err := f.Memory(); err != nil || m != 8<<30 {
		t.Errorf("Memory = %d, %v", m, err)
	}
	if info := f.SystemInfo(); info.KernelVersion == "" || info.OSImage == "" {
		t.Errorf("SystemInfo = %+v, want a kernel and an OS image", info)
	}
	f.MemoryErr = errors.New("boom")
	if _, err := f.Memory(); err == nil {
		t.Error("MemoryErr not returned")
	}
}
