package eviction

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/klog/v2"
)

// memcgHelperEnv makes the test binary the child TestLinuxCgroupNotifier places in its cgroup.
const memcgHelperEnv = "ORCH_MEMCG_HELPER_PROCS"

// TestMemcgHelperProcess is that child: it joins the cgroup, says so, waits for a line, touches
// 64Mi and says so, then waits for stdin to close.
func TestMemcgHelperProcess(t *testing.T) {
	procs := os.Getenv(memcgHelperEnv)
	if procs == "" {
		return // run as a test: nothing to do
	}
	if err := os.WriteFile(procs, []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	fmt.Println("joined")
	in := bufio.NewReader(os.Stdin)
	in.ReadString('\n')
	mem := make([]byte, 64<<20)
	for i := 0; i < len(mem); i += 4096 {
		mem[i] = 1
	}
	fmt.Println("allocated")
	io.Copy(io.Discard, in)
	mem[0]++
	os.Exit(0)
}

// TestLinuxCgroupNotifier arms two thresholds on memory.usage_in_bytes of a fresh memory cgroup,
// 16Mi and 1Gi above its usage, has a child process in it touch 64Mi, and sees the kernel
// notify the first crossing only.
func TestLinuxCgroupNotifier(t *testing.T) {
	memcg, why := HostMemcg("/sys/fs/cgroup", "/proc/mounts", "", LinuxNotifierFactory{Logger: klog.Background()})
	if memcg == nil {
		t.Skipf("no cgroup v1 memory controller to test against: %s", why)
	}
	dir := filepath.Join(memcg.MemoryRoot, fmt.Sprintf("orch-eviction-test-%d", os.Getpid()))
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Skipf("cannot create a memory cgroup (%v): the test needs root", err)
	}
	t.Cleanup(func() {
		for i := 0; i < 50; i++ { // the child's exit leaves the cgroup empty a moment later
			if err := os.Remove(dir); err == nil || os.IsNotExist(err) {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
		t.Errorf("removing %s: still busy", dir)
	})
	data, err := os.ReadFile(filepath.Join(dir, memoryUsageAttribute))
	if err != nil {
		t.Fatal(err)
	}
	usage, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	near, far := make(chan struct{}, 1), make(chan struct{}, 1)
	for _, arm := range []struct {
		above int64
		ch    chan struct{}
	}{{16 << 20, near}, {1 << 30, far}} {
		n, err := memcg.Factory.NewCgroupNotifier(dir, memoryUsageAttribute, usage+arm.above)
		if err != nil {
			t.Fatal(err)
		}
		n.Start(arm.ch)
		t.Cleanup(n.Stop)
	}

	cmd := exec.Command(os.Args[0], "-test.run=^TestMemcgHelperProcess$")
	cmd.Env = append(os.Environ(), memcgHelperEnv+"="+filepath.Join(dir, "cgroup.procs"))
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stdin.Close(); cmd.Wait() })
	out := bufio.NewReader(stdout)
	expect := func(want string) {
		t.Helper()
		line, err := out.ReadString('\n')
		if strings.TrimSpace(line) != want {
			t.Fatalf("the child said %q (%v), want %q", line, err, want)
		}
	}
	expect("joined")
	select {
	case <-near:
		t.Fatal("notified before the child allocated anything")
	case <-time.After(200 * time.Millisecond):
	}
	fmt.Fprintln(stdin)
	expect("allocated")
	select {
	case <-near:
	case <-time.After(10 * time.Second):
		t.Fatal("no notification 10s after usage crossed the threshold 16Mi above it")
	}
	select {
	case <-far:
		t.Fatal("notified of a threshold 1Gi above the usage, which 64Mi does not reach")
	case <-time.After(200 * time.Millisecond):
	}
}

func TestHostMemcg(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ name, mounts, root, why string }{
		{"v1", "cgroup /sys/fs/cgroup/cpu cgroup rw,cpu 0 0\ncgroup /sys/fs/cgroup/memory cgroup rw,relatime,memory 0 0\n", "/sys/fs/cgroup/memory", ""},
		{"v2", "cgroup2 /sys/fs/cgroup cgroup2 rw,nsdelegate 0 0\n", "", "cgroup v2 has no memcg threshold notifications"},
		{"hybrid without memory", "cgroup /sys/fs/cgroup/cpu cgroup rw,cpu 0 0\ncgroup2 /sys/fs/cgroup/unified cgroup2 rw 0 0\n", "", "no cgroup v1 memory controller is mounted under /sys/fs/cgroup"},
		{"elsewhere", "cgroup /sys/fs/cgroupfoo/memory cgroup rw,memory 0 0\n", "", "no cgroup v1 memory controller is mounted under /sys/fs/cgroup"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mounts := filepath.Join(dir, tc.name)
			write(t, mounts, tc.mounts)
			m, why := HostMemcg("/sys/fs/cgroup", mounts, "/orchpods", nil)
			if why != tc.why || (m == nil) != (tc.root == "") || (m != nil && (m.MemoryRoot != tc.root || m.PodsCgroup != "/orchpods")) {
				t.Fatalf("HostMemcg = %+v, %q; want root %q, %q", m, why, tc.root, tc.why)
			}
		})
	}
}
