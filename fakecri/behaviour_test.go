package fakecri

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"orch.io/orch/fakecri/calllog"
	"orch.io/orch/fakecri/fakecritest/fixture"
	"orch.io/orch/fakecri/script"
)

func TestScriptedExitCrashAndStartError(t *testing.T) {
	f := newFixture(t, &script.Script{Containers: []script.ContainerRule{
		{Match: script.ContainerMatch{Name: "job"}, Exit: &script.ExitSpec{After: script.Duration(30 * time.Second), Code: 0}},
		{Match: script.ContainerMatch{Name: "crashy", MaxAttempt: u32(1)}, Exit: &script.ExitSpec{Code: 2, Message: "boom"}},
		{Match: script.ContainerMatch{Image: "*/broken:*"}, StartError: `exec: "nope": executable file not found in $PATH`},
	}})
	_, job := f.Run("p1", "job", "busybox", 0)
	p2, crashy := f.Run("p2", "crashy", "busybox", 0)
	f.Pull("example.com/team/broken:v1")
	p3 := f.RunPod("p3", nil)
	broken := f.Create(p3, "b", "example.com/team/broken:v1", 0)
	_, err := f.RT.StartContainer(f.Ctx, &runtimeapi.StartContainerRequest{ContainerId: broken})
	wantCode(t, err, codes.Unknown)
	if st := f.Status(broken); st.State != runtimeapi.ContainerState_CONTAINER_EXITED || st.ExitCode != 128 ||
		st.Reason != "StartError" || !strings.Contains(st.Message, "executable file not found") {
		t.Fatalf("broken %v", st)
	}
	if st := f.Status(crashy); st.State != runtimeapi.ContainerState_CONTAINER_EXITED || st.ExitCode != 2 ||
		st.Reason != "Error" || st.Message != "boom" || st.FinishedAt != st.StartedAt {
		t.Fatalf("crashy %v", st)
	}
	// attempts 0 and 1 crash, attempt 2 runs: a crash loop that recovers
	for attempt := uint32(1); attempt <= 2; attempt++ {
		cfg := fixture.ContainerConfig("crashy", "busybox", 0)
		cfg.Metadata.Attempt = attempt
		r, err := f.RT.CreateContainer(f.Ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: p2, Config: cfg})
		if err != nil {
			t.Fatal(err)
		}
		f.Start(r.ContainerId)
		want := runtimeapi.ContainerState_CONTAINER_EXITED
		if attempt == 2 {
			want = runtimeapi.ContainerState_CONTAINER_RUNNING
		}
		if st := f.Status(r.ContainerId); st.State != want {
			t.Fatalf("attempt %d: %v", attempt, st.State)
		}
	}
	f.Advance(29 * time.Second)
	if st := f.Status(job); st.State != runtimeapi.ContainerState_CONTAINER_RUNNING {
		t.Fatalf("job ended early")
	}
	f.Advance(time.Hour)
	st := f.Status(job)
	if st.State != runtimeapi.ContainerState_CONTAINER_EXITED || st.ExitCode != 0 || st.Reason != "Completed" ||
		st.FinishedAt != st.StartedAt+int64(30*time.Second) {
		t.Fatalf("job %v", st)
	}
}

func TestOOMKillWhenMemoryReachesLimit(t *testing.T) {
	f := newFixture(t, &script.Script{Containers: []script.ContainerRule{{
		Match: script.ContainerMatch{PodLabels: map[string]string{"app": "leak*"}},
		Usage: &script.Usage{Memory: &script.Curve{Ramp: &script.Ramp{From: script.Q("10Mi"), PerSecond: ptrQ("1Mi")}}},
	}}})
	f.Pull("leaker")
	pod := f.RunPod("leaky", map[string]string{"app": "leaky"})
	c := f.Create(pod, "c", "leaker", 100*mi)
	f.Start(c)
	f.Advance(45 * time.Second)
	s, err := f.RT.ContainerStats(f.Ctx, &runtimeapi.ContainerStatsRequest{ContainerId: c})
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Stats.Memory.WorkingSetBytes.Value; got != 55*mi {
		t.Fatalf("working set at 45s = %d, want %d", got, 55*mi)
	}
	if got := s.Stats.Memory.AvailableBytes.Value; got != 45*mi {
		t.Fatalf("available = %d", got)
	}
	f.Advance(time.Minute)
	st := f.Status(c)
	if st.State != runtimeapi.ContainerState_CONTAINER_EXITED || st.Reason != "OOMKilled" || st.ExitCode != 137 ||
		st.FinishedAt != st.StartedAt+int64(90*time.Second) {
		t.Fatalf("want OOM kill at 90s: %v", st)
	}
	// raising the limit of a new container postpones it; lowering one kills at once
	c2 := f.Create(pod, "c2", "leaker", 0)
	f.Start(c2)
	f.Advance(20 * time.Second)
	if _, err := f.RT.UpdateContainerResources(f.Ctx, &runtimeapi.UpdateContainerResourcesRequest{
		ContainerId: c2, Linux: &runtimeapi.LinuxContainerResources{MemoryLimitInBytes: 20 * mi},
	}); err != nil {
		t.Fatal(err)
	}
	st = f.Status(c2)
	if st.Reason != "OOMKilled" || st.FinishedAt != fixture.Epoch.Add(125*time.Second).UnixNano() {
		t.Fatalf("lowered limit: %v", st)
	}
	if st.Resources.Linux.MemoryLimitInBytes != 20*mi {
		t.Fatalf("resources not updated: %v", st.Resources)
	}
}

func TestUsageCurvesAndCPUCoherence(t *testing.T) {
	f := newFixture(t, &script.Script{Containers: []script.ContainerRule{{
		Match: script.ContainerMatch{Name: "w"},
		Usage: &script.Usage{
			CPU:    &script.Curve{Steps: []script.Step{{At: 0, Value: script.Q("100m")}, {At: script.Duration(10 * time.Second), Value: script.Q("2")}}},
			Disk:   &script.Curve{Ramp: &script.Ramp{From: script.Q("0"), To: ptrQ("1Gi"), Over: script.Duration(100 * time.Second)}},
			Inodes: script.ConstantCurve(script.N(500)),
			PIDs:   script.ConstantCurve(script.N(7)),
		},
	}}})
	pod, c := f.Run("p", "w", "busybox", 0) // quota 0.5 cores
	f.Advance(20 * time.Second)
	s, err := f.RT.ContainerStats(f.Ctx, &runtimeapi.ContainerStatsRequest{ContainerId: c})
	if err != nil {
		t.Fatal(err)
	}
	// capped at the 0.5-core quota after 10s: 10*0.1 + 10*0.5 = 6 core-seconds
	if got := s.Stats.Cpu.UsageCoreNanoSeconds.Value; got != 6e9 {
		t.Fatalf("cpu total %d", got)
	}
	if got := s.Stats.Cpu.UsageNanoCores.Value; got != 5e8 {
		t.Fatalf("cpu rate %d", got)
	}
	if got := s.Stats.WritableLayer.UsedBytes.Value; got != uint64(gi/5) {
		t.Fatalf("disk %d", got)
	}
	if s.Stats.WritableLayer.InodesUsed.Value != 500 {
		t.Fatal("inodes")
	}
	ps, err := f.RT.PodSandboxStats(f.Ctx, &runtimeapi.PodSandboxStatsRequest{PodSandboxId: pod})
	if err != nil {
		t.Fatal(err)
	}
	if ps.Stats.Linux.Process.ProcessCount.Value != 8 || len(ps.Stats.Linux.Containers) != 1 ||
		ps.Stats.Linux.Network.DefaultInterface.RxBytes.Value == 0 {
		t.Fatalf("pod stats %v", ps.Stats.Linux)
	}
	// the image filesystem holds the image, the pause image and the writable layer
	fs, err := f.RT.ImageFsInfo(f.Ctx, &runtimeapi.ImageFsInfoRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var imgs uint64
	st := f.RT.State()
	for _, im := range st.Images {
		imgs += im.Size
	}
	if got := fs.ImageFilesystems[0].UsedBytes.Value; got != imgs+uint64(gi/5) {
		t.Fatalf("imagefs used %d, want %d", got, imgs+uint64(gi/5))
	}
	// after exit, the layer stays until the container is removed
	if _, err := f.RT.StopContainer(f.Ctx, &runtimeapi.StopContainerRequest{ContainerId: c}); err != nil {
		t.Fatal(err)
	}
	f.Advance(time.Minute)
	s, _ = f.RT.ContainerStats(f.Ctx, &runtimeapi.ContainerStatsRequest{ContainerId: c})
	if s.Stats.WritableLayer.UsedBytes.Value != uint64(gi/5) || s.Stats.Cpu.UsageCoreNanoSeconds.Value != 0 || s.Stats.Memory.WorkingSetBytes.Value != 0 {
		t.Fatalf("exited stats %v", s.Stats)
	}
	if _, err := f.RT.RemoveContainer(f.Ctx, &runtimeapi.RemoveContainerRequest{ContainerId: c}); err != nil {
		t.Fatal(err)
	}
	fs, _ = f.RT.ImageFsInfo(f.Ctx, &runtimeapi.ImageFsInfoRequest{})
	if got := fs.ImageFilesystems[0].UsedBytes.Value; got != imgs {
		t.Fatalf("imagefs after removal %d, want %d", got, imgs)
	}
}

func TestFilesystemsFillUp(t *testing.T) {
	f := newFixture(t, &script.Script{
		Node: script.NodeScript{
			ImageFs:     &script.Filesystem{Capacity: ptrQ("1Gi"), Inodes: ptrQ("100000")},
			RootFs:      &script.Filesystem{Mountpoint: "/", Capacity: ptrQ("2Gi"), Used: ptrQ("1Gi"), Inodes: ptrQ("100000")},
			ContainerFs: "rootfs",
		},
		Images: []script.ImageRule{{Match: "big/*", Size: ptrQ("600Mi")}},
		Containers: []script.ContainerRule{{Match: script.ContainerMatch{Name: "writer"},
			Usage: &script.Usage{Disk: &script.Curve{Ramp: &script.Ramp{From: script.Q("0"), PerSecond: ptrQ("10Mi")}}}}},
	})
	f.Pull("big/one")
	_, err := f.RT.PullImage(f.Ctx, &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: "big/two"}})
	wantCode(t, err, codes.Unknown)
	if !strings.Contains(err.Error(), "no space left on device") {
		t.Fatal(err)
	}
	pod := f.RunPod("p", nil)
	c := f.Create(pod, "writer", "big/one", 0)
	f.Start(c)
	f.Advance(50 * time.Second) // 500Mi written to the root fs
	fs := f.RT.Filesystems()
	if fs[1].UsedBytes != gi+500*mi || fs[1].AvailableBytes != 2*gi-(gi+500*mi) || !fs[1].HoldsContainers {
		t.Fatalf("rootfs %+v", fs[1])
	}
	resp, _ := f.RT.ImageFsInfo(f.Ctx, &runtimeapi.ImageFsInfoRequest{})
	if resp.ContainerFilesystems[0].FsId.Mountpoint != "/" || resp.ContainerFilesystems[0].UsedBytes.Value != gi+500*mi {
		t.Fatalf("container fs %v", resp.ContainerFilesystems)
	}
	f.Advance(time.Hour) // full: usage is capped and new containers fail
	fs = f.RT.Filesystems()
	if fs[1].AvailableBytes != 0 {
		t.Fatalf("rootfs not full: %+v", fs[1])
	}
	_, err = f.RT.CreateContainer(f.Ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: pod, Config: fixture.ContainerConfig("x", "big/one", 0)})
	wantCode(t, err, codes.Unknown)
}

func ptrQ(s string) *script.Quantity {
	q := script.Q(s)
	return &q
}

func TestPullsOnTheClock(t *testing.T) {
	f := newFixture(t, &script.Script{Images: []script.ImageRule{
		{Match: "docker.io/library/nginx:*", PullDuration: script.Duration(30 * time.Second), Size: ptrQ("150Mi")},
		{Match: "flaky/*", PullError: &script.PullError{Times: 2, Message: "connection reset by peer"}},
		{Match: "private.io/*", Auth: &script.Auth{Username: "u", Password: "p"}},
		{Match: "missing/*", PullError: &script.PullError{Code: "NotFound"}},
	}})
	done := make(chan error, 1)
	go func() {
		_, err := f.RT.PullImage(f.Ctx, &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: "nginx"}})
		done <- err
	}()
	waitFor(t, func() bool { return f.RT.InFlight() == 1 && f.RT.Idle() })
	if r, _ := f.RT.ImageStatus(f.Ctx, &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: "nginx"}}); r.Image != nil {
		t.Fatal("image present before the pull finished")
	}
	f.Advance(29 * time.Second)
	select {
	case err := <-done:
		t.Fatalf("pull finished early: %v", err)
	default:
	}
	f.Advance(time.Second)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	r, _ := f.RT.ImageStatus(f.Ctx, &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: "nginx:latest"}, Verbose: true})
	if r.Image == nil || r.Image.Size != 150*mi || r.Image.RepoTags[0] != "docker.io/library/nginx:latest" || r.Info["info"] == "" {
		t.Fatalf("nginx %v", r)
	}
	// present: a second pull is only a manifest check
	f.Pull("nginx")

	for i := 0; i < 2; i++ {
		_, err := f.RT.PullImage(f.Ctx, &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: "flaky/app"}})
		if err == nil || !strings.Contains(err.Error(), "connection reset by peer") {
			t.Fatalf("pull %d of flaky: %v", i, err)
		}
	}
	f.Pull("flaky/app")

	_, err := f.RT.PullImage(f.Ctx, &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: "private.io/x"}})
	if err == nil || !strings.Contains(err.Error(), "authorization") {
		t.Fatal(err)
	}
	if _, err := f.RT.PullImage(f.Ctx, &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: "private.io/x"},
		Auth: &runtimeapi.AuthConfig{Auth: "dTpw"}}); err != nil { // base64("u:p")
		t.Fatal(err)
	}
	_, err = f.RT.PullImage(f.Ctx, &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: "missing/x"}})
	wantCode(t, err, codes.NotFound)
	_, err = f.RT.PullImage(f.Ctx, &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: "Bad Name"}})
	wantCode(t, err, codes.InvalidArgument)

	// digests are stable and derived from the name; removal by tag removes the image
	other := newFixture(t, nil)
	if a, b := f.RT.State().Images[0].RepoDigests, other.RT.State().Images; len(b) != 0 || len(a) != 1 {
		t.Fatalf("%v %v", a, b)
	}
	id1 := other.Pull("nginx")
	id2 := newFixture(t, nil).Pull("docker.io/library/nginx:latest")
	if id1 != id2 {
		t.Fatal("digest not stable")
	}
	if _, err := other.RT.RemoveImage(other.Ctx, &runtimeapi.RemoveImageRequest{Image: &runtimeapi.ImageSpec{Image: "nginx"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := other.RT.RemoveImage(other.Ctx, &runtimeapi.RemoveImageRequest{Image: &runtimeapi.ImageSpec{Image: "nginx"}}); err != nil {
		t.Fatal(err)
	}
	if l, _ := other.RT.ListImages(other.Ctx, &runtimeapi.ListImagesRequest{}); len(l.Images) != 0 {
		t.Fatal("image not removed")
	}
}

func TestSharedDigestMakesOneImage(t *testing.T) {
	d := "sha256:" + strings.Repeat("ab", 32)
	f := newFixture(t, &script.Script{Images: []script.ImageRule{{Match: "app:*", Digest: d}}})
	a := f.Pull("app:v1")
	b := f.Pull("app:stable")
	if a != b {
		t.Fatal("same digest, different images")
	}
	l, _ := f.RT.ListImages(f.Ctx, &runtimeapi.ListImagesRequest{})
	if len(l.Images) != 1 || len(l.Images[0].RepoTags) != 2 || l.Images[0].RepoDigests[0] != "docker.io/library/app@"+d {
		t.Fatalf("%v", l.Images)
	}
	// pulling by digest finds it too; a truncated id resolves
	if r, _ := f.RT.ImageStatus(f.Ctx, &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: "app@" + d}}); r.Image == nil {
		t.Fatal("digest ref")
	}
	if r, _ := f.RT.ImageStatus(f.Ctx, &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: a[7:20]}}); r.Image == nil {
		t.Fatal("short id")
	}
	if _, err := f.RT.RemoveImage(f.Ctx, &runtimeapi.RemoveImageRequest{Image: &runtimeapi.ImageSpec{Image: "app:v1"}}); err != nil {
		t.Fatal(err)
	}
	if r, _ := f.RT.ImageStatus(f.Ctx, &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: "app:stable"}}); r.Image != nil {
		t.Fatal("removing one tag must remove the image")
	}
}

func TestExecSync(t *testing.T) {
	f := newFixture(t, &script.Script{Exec: []script.ExecRule{
		{Command: "cat /tmp/healthy", Until: script.Duration(30 * time.Second), ExitCode: 1, Stderr: "cat: /tmp/healthy: No such file"},
		{Command: "cat /tmp/healthy", Stdout: "ok"},
		{Match: script.ContainerMatch{Name: "slow"}, Command: "*", Delay: script.Duration(5 * time.Second), Stdout: "late"},
	}})
	_, c := f.Run("p", "app", "busybox", 0)
	exec := func(id string, timeout int64, cmd ...string) (*runtimeapi.ExecSyncResponse, error) {
		return f.RT.ExecSync(f.Ctx, &runtimeapi.ExecSyncRequest{ContainerId: id, Cmd: cmd, Timeout: timeout})
	}
	r, err := exec(c, 1, "cat", "/tmp/healthy")
	if err != nil || r.ExitCode != 1 || string(r.Stderr) == "" {
		t.Fatalf("%v %v", r, err)
	}
	f.Advance(30 * time.Second)
	if r, err = exec(c, 1, "cat", "/tmp/healthy"); err != nil || r.ExitCode != 0 || string(r.Stdout) != "ok" {
		t.Fatalf("%v %v", r, err)
	}
	if r, err = exec(c, 0, "echo", "hello", "world"); err != nil || string(r.Stdout) != "hello world\n" {
		t.Fatalf("%v %v", r, err)
	}
	if r, _ = exec(c, 0, "false"); r.ExitCode != 1 {
		t.Fatal("false")
	}
	pod := f.RunPod("q", nil)
	slow := f.Create(pod, "slow", "busybox", 0)
	f.Start(slow)
	results := make(chan error, 2)
	go func() { _, err := exec(slow, 10, "check"); results <- err }()
	go func() { _, err := exec(slow, 2, "check"); results <- err }()
	waitFor(t, func() bool { return f.RT.InFlight() == 2 && f.RT.Idle() })
	f.Advance(2 * time.Second)
	wantCode(t, <-results, codes.DeadlineExceeded)
	f.Advance(3 * time.Second)
	if err := <-results; err != nil {
		t.Fatal(err)
	}
	// a command running when its container dies fails
	go func() { _, err := exec(slow, 0, "check"); results <- err }()
	waitFor(t, func() bool { return f.RT.InFlight() == 1 && f.RT.Idle() })
	if err := f.RT.KillContainer(slow, 137, "OOMKilled", ""); err != nil {
		t.Fatal(err)
	}
	wantCode(t, <-results, codes.Unknown)
	if _, err := f.RT.StopContainer(f.Ctx, &runtimeapi.StopContainerRequest{ContainerId: c}); err != nil {
		t.Fatal(err)
	}
	_, err = exec(c, 1, "true")
	wantCode(t, err, codes.FailedPrecondition)
}

// TestExecSyncBuiltins: an unscripted ExecSync runs the built-in command set (critest's execSync,
// timeout, volume, hostname, DNS, sysctl and user checks among them): output collected, a sleep
// past the timeout ended with DeadlineExceeded on the runtime's clock, pgrep finding the main
// process only, ls and cat of a bind mount reading the host, the sandbox's resolv.conf and sysctls,
// the security context's ids, /proc/1/cmdline; a command the set lacks still succeeds with no
// output, in sh -c too.
func TestExecSyncBuiltins(t *testing.T) {
	f := newFixture(t, nil)
	f.Pull("busybox")
	host := t.TempDir()
	if err := os.WriteFile(filepath.Join(host, "flag"), []byte("on\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(host, ".hidden"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	pod := fixture.PodConfig("p", nil)
	pod.Hostname = "web-0"
	pod.DnsConfig = &runtimeapi.DNSConfig{Servers: []string{"10.10.10.10"}, Searches: []string{"google.com"}, Options: []string{"ndots:5"}}
	pod.Linux = &runtimeapi.LinuxPodSandboxConfig{Sysctls: map[string]string{"kernel.shm_rmid_forced": "1"}}
	sb, err := f.RT.RunPodSandbox(f.Ctx, &runtimeapi.RunPodSandboxRequest{Config: pod})
	if err != nil {
		t.Fatal(err)
	}
	cfg := fixture.ContainerConfig("app", "busybox", 0)
	cfg.Command = []string{"top"}
	cfg.Mounts = []*runtimeapi.Mount{{ContainerPath: "/data", HostPath: host}}
	cfg.Linux = &runtimeapi.LinuxContainerConfig{SecurityContext: &runtimeapi.LinuxContainerSecurityContext{
		RunAsUser: &runtimeapi.Int64Value{Value: 1001}, RunAsGroup: &runtimeapi.Int64Value{Value: 2000}, SupplementalGroups: []int64{1234, 5678}}}
	created, err := f.RT.CreateContainer(f.Ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: sb.PodSandboxId, Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	c := created.ContainerId
	f.Start(c)
	exec := func(timeout int64, cmd ...string) (*runtimeapi.ExecSyncResponse, error) {
		return f.RT.ExecSync(f.Ctx, &runtimeapi.ExecSyncRequest{ContainerId: c, Cmd: cmd, Timeout: timeout})
	}
	for _, tc := range []struct {
		cmd            []string
		stdout, stderr string
		code           int32
	}{
		{[]string{"echo", "-n", "hello"}, "hello", "", 0},
		{[]string{"sh", "-c", "pgrep sleep || true"}, "", "", 0},
		{[]string{"pgrep", "top"}, "1\n", "", 0},
		{[]string{"pgrep", "sleep"}, "", "", 1},
		{[]string{"ls", "-A", "/data"}, ".hidden\nflag\n", "", 0},
		{[]string{"ls", "/data"}, "flag\n", "", 0},
		{[]string{"cat", "/data/flag"}, "on\n", "", 0},
		{[]string{"ls", "/data/absent"}, "", "ls: /data/absent: No such file or directory\n", 1},
		{[]string{"sh", "-c", "echo $HOSTNAME; exit 3"}, "web-0\n", "", 3},
		{[]string{"hostname"}, "web-0\n", "", 0},
		{[]string{"cat", "/etc/resolv.conf"}, "search google.com\nnameserver 10.10.10.10\noptions ndots:5\n", "", 0},
		{[]string{"cat", "/proc/sys/kernel/shm_rmid_forced"}, "1\n", "", 0},
		{[]string{"id", "-u"}, "1001\n", "", 0},
		{[]string{"id", "-G"}, "2000 1234 5678\n", "", 0},
		{[]string{"id", "-nu"}, "", "id: unknown ID 1001\n", 1},
		{[]string{"pg_isready"}, "", "", 0},
		{[]string{"sh", "-c", "mkdir -p /tmp/x && echo made"}, "made\n", "", 0},
		{[]string{"cat", "/proc/1/cmdline"}, "top\x00", "", 0},
		{[]string{"grep", "Seccomp:", "/proc/self/status"}, "Seccomp:\t0\n", "", 0},
		{[]string{"sh", "-c", "cat /proc/self/status | grep -q '^CapBnd:.00000000a80425fb' && echo default"}, "default\n", "", 0},
		{[]string{"grep", "-v", "on", "/data/flag"}, "", "", 1},
		{[]string{"grep", "x", "/absent"}, "", "cat: can't open '/absent': No such file or directory\n", 2},
	} {
		r, err := exec(30, tc.cmd...)
		if err != nil || string(r.Stdout) != tc.stdout || string(r.Stderr) != tc.stderr || r.ExitCode != tc.code {
			t.Errorf("%q: stdout %q stderr %q exit %d, %v; want %q %q %d", tc.cmd, r.GetStdout(), r.GetStderr(), r.GetExitCode(), err, tc.stdout, tc.stderr, tc.code)
		}
	}
	done := make(chan error, 1)
	go func() { _, err := exec(1, "sleep", "4321"); done <- err }()
	waitFor(t, func() bool { return f.RT.InFlight() == 1 && f.RT.Idle() })
	f.Advance(time.Second)
	wantCode(t, <-done, codes.DeadlineExceeded)
	if f.RT.InFlight() != 0 {
		t.Fatal("the timed-out command is still running")
	}
}

// TestExecShowsCapabilitySets: /proc/self/status in an exec shows the capability sets containerd
// makes from the security context (critest's ALL capability checks read CapBnd).
func TestExecShowsCapabilitySets(t *testing.T) {
	caps := func(add, drop []string, privileged bool) *runtimeapi.LinuxContainerSecurityContext {
		return &runtimeapi.LinuxContainerSecurityContext{Privileged: privileged, Capabilities: &runtimeapi.Capability{AddCapabilities: add, DropCapabilities: drop}}
	}
	f := newFixture(t, nil)
	f.Pull("busybox")
	cfg := fixture.ContainerConfig("app", "busybox", 0)
	cfg.Linux = &runtimeapi.LinuxContainerConfig{SecurityContext: caps(nil, []string{"ALL"}, false)}
	created, err := f.RT.CreateContainer(f.Ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: f.RunPod("p", nil), Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	f.Start(created.ContainerId)
	r, err := f.RT.ExecSync(f.Ctx, &runtimeapi.ExecSyncRequest{ContainerId: created.ContainerId, Cmd: []string{"cat", "/proc/self/status"}})
	if err != nil || !strings.Contains(string(r.Stdout), "CapBnd:\t0000000000000000\n") {
		t.Fatalf("%s %v", r.GetStdout(), err)
	}
}

// TestCreateRefusesGroupWithoutUser: as containerd, a container whose security context names a
// group but no user is refused at create (critest's RunAsGroup-without-RunAsUser check).
func TestCreateRefusesGroupWithoutUser(t *testing.T) {
	f := newFixture(t, nil)
	f.Pull("busybox")
	cfg := fixture.ContainerConfig("app", "busybox", 0)
	cfg.Linux = &runtimeapi.LinuxContainerConfig{SecurityContext: &runtimeapi.LinuxContainerSecurityContext{RunAsGroup: &runtimeapi.Int64Value{Value: 1002}}}
	_, err := f.RT.CreateContainer(f.Ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: f.RunPod("p", nil), Config: cfg})
	if wantCode(t, err, codes.Unknown); !strings.Contains(err.Error(), `user group "1002" is specified without user`) {
		t.Fatal(err)
	}
	cfg.Linux.SecurityContext.RunAsUser = &runtimeapi.Int64Value{Value: 1001}
	if _, err := f.RT.CreateContainer(f.Ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: f.RunPod("q", nil), Config: cfg}); err != nil {
		t.Fatal(err)
	}
}

func TestFaults(t *testing.T) {
	f := newFixture(t, &script.Script{Faults: []script.FaultRule{
		{Method: "Version", AfterCalls: 2, Times: 1, Error: &script.FaultError{Code: "Unavailable", Message: "down"}},
		{Method: "ListImages", Latency: script.Duration(time.Second)},
		{Method: "ImageStatus", Hang: true},
		{Method: "RuntimeConfig", Error: &script.FaultError{Code: "Unimplemented"}},
		{Method: "PullImage", Request: "*redis*", Error: &script.FaultError{Code: "ResourceExhausted"}},
	}})
	version := func() error { _, err := f.RT.Version(f.Ctx, &runtimeapi.VersionRequest{}); return err }
	for i, want := range []codes.Code{codes.OK, codes.OK, codes.Unavailable, codes.OK} {
		wantCode(t, version(), want)
		_ = i
	}
	_, err := f.RT.RuntimeConfig(f.Ctx, &runtimeapi.RuntimeConfigRequest{})
	wantCode(t, err, codes.Unimplemented)
	_, err = f.RT.PullImage(f.Ctx, &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: "redis:7"}})
	wantCode(t, err, codes.ResourceExhausted)
	f.Pull("busybox")

	done := make(chan error, 1)
	go func() { _, err := f.RT.ListImages(f.Ctx, &runtimeapi.ListImagesRequest{}); done <- err }()
	waitFor(t, func() bool { return f.RT.InFlight() == 1 && f.RT.Idle() })
	f.Advance(time.Second)
	if err := <-done; err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(f.Ctx, 50*time.Millisecond)
	defer cancel()
	_, err = f.RT.ImageStatus(ctx, &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: "x"}})
	wantCode(t, err, codes.DeadlineExceeded)

	calls := f.RT.Calls(calllog.Filter{Method: "Version"})
	if len(calls) != 4 || calls[2].Code != "Unavailable" || calls[2].Fault != "faults[0]" || calls[2].Error != "down" {
		t.Fatalf("calls %+v", calls)
	}
	li := f.RT.Calls(calllog.Filter{Method: "ListImages"})
	if len(li) != 1 || li[0].End.Sub(li[0].Start) != time.Second {
		t.Fatalf("latency not on the clock: %+v", li)
	}
}

func TestSeededProbabilityIsReproducible(t *testing.T) {
	pattern := func(seed int64) string {
		f := newFixture(t, &script.Script{Seed: seed, Faults: []script.FaultRule{{Method: "Status", Probability: 0.3, Error: &script.FaultError{Code: "Internal"}}}})
		var sb strings.Builder
		fails := 0
		for i := 0; i < 200; i++ {
			if _, err := f.RT.Status(f.Ctx, &runtimeapi.StatusRequest{}); err != nil {
				sb.WriteByte('x')
				fails++
			} else {
				sb.WriteByte('.')
			}
		}
		if fails < 30 || fails > 90 {
			t.Fatalf("%d of 200 failed with p=0.3", fails)
		}
		return sb.String()
	}
	a, b, c := pattern(42), pattern(42), pattern(43)
	if a != b {
		t.Fatal("same seed, different faults")
	}
	if a == c {
		t.Fatal("different seeds, same faults")
	}
}

func TestCallLogOrderAndFilters(t *testing.T) {
	f := newFixture(t, nil)
	_, c := f.Run("p", "app", "busybox", 0)
	f.Advance(time.Minute)
	f.Status(c)
	calls := f.RT.Calls(calllog.Filter{})
	var methods []string
	for _, cl := range calls {
		methods = append(methods, cl.Method)
		if cl.Code != "OK" {
			t.Fatalf("%+v", cl)
		}
	}
	want := "PullImage RunPodSandbox CreateContainer StartContainer ContainerStatus"
	if strings.Join(methods, " ") != want {
		t.Fatalf("got %v", methods)
	}
	if calls[2].Response != c || !strings.Contains(calls[2].Request, "name=app") || !calls[4].Start.Equal(fixture.Epoch.Add(time.Minute)) {
		t.Fatalf("%+v", calls)
	}
	if got := f.RT.Calls(calllog.Filter{Since: calls[2].Seq}); len(got) != 2 {
		t.Fatalf("since: %d", len(got))
	}
	if got := f.RT.Calls(calllog.Filter{Method: "*Container"}); len(got) != 2 {
		t.Fatalf("glob: %+v", got)
	}
	f.RT.ResetCalls()
	if len(f.RT.Calls(calllog.Filter{})) != 0 || f.RT.LastSeq() != 5 {
		t.Fatal("reset")
	}

	small, _ := New(Options{MaxCalls: 3})
	for i := 0; i < 5; i++ {
		small.Version(context.Background(), &runtimeapi.VersionRequest{})
	}
	if got := small.Calls(calllog.Filter{}); len(got) != 3 || got[0].Seq != 3 || small.DroppedCalls() != 2 {
		t.Fatalf("ring: %+v", got)
	}
}

func TestStatusVersionRuntimeConfig(t *testing.T) {
	f := newFixture(t, &script.Script{Node: script.NodeScript{
		RuntimeName: "containerd", RuntimeVersion: "v1.6.36", CgroupDriver: "cgroupfs",
		NetworkReady: &script.Condition{Status: false, Reason: "NetworkPluginNotReady", Message: "cni plugin not initialized"},
	}})
	v, err := f.RT.Version(f.Ctx, &runtimeapi.VersionRequest{Version: "v1"})
	if err != nil || v.RuntimeName != "containerd" || v.RuntimeVersion != "v1.6.36" || v.RuntimeApiVersion != "v1" || v.Version == "" {
		t.Fatalf("%v %v", v, err)
	}
	s, err := f.RT.Status(f.Ctx, &runtimeapi.StatusRequest{Verbose: true})
	if err != nil || len(s.Status.Conditions) != 2 || !s.Status.Conditions[0].Status || s.Status.Conditions[1].Status ||
		s.Status.Conditions[1].Reason != "NetworkPluginNotReady" || len(s.RuntimeHandlers) != 2 || s.Info["config"] == "" {
		t.Fatalf("%v %v", s, err)
	}
	rc, err := f.RT.RuntimeConfig(f.Ctx, &runtimeapi.RuntimeConfigRequest{})
	if err != nil || rc.Linux.CgroupDriver != runtimeapi.CgroupDriver_CGROUPFS {
		t.Fatal(rc, err)
	}
	// no network: pods fail unless they use the host's
	_, err = f.RT.RunPodSandbox(f.Ctx, &runtimeapi.RunPodSandboxRequest{Config: fixture.PodConfig("p", nil)})
	wantCode(t, err, codes.Unknown)
	host := fixture.PodConfig("h", nil)
	host.Linux.SecurityContext.NamespaceOptions.Network = runtimeapi.NamespaceMode_NODE
	r, err := f.RT.RunPodSandbox(f.Ctx, &runtimeapi.RunPodSandboxRequest{Config: host})
	if err != nil {
		t.Fatal(err)
	}
	ps, _ := f.RT.PodSandboxStatus(f.Ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: r.PodSandboxId})
	if ps.Status.Network.Ip != "" {
		t.Fatal("host network pod got an IP")
	}
	// pod CIDR from UpdateRuntimeConfig
	f.RT.SetScript(nil)
	if _, err := f.RT.UpdateRuntimeConfig(f.Ctx, &runtimeapi.UpdateRuntimeConfigRequest{RuntimeConfig: &runtimeapi.RuntimeConfig{
		NetworkConfig: &runtimeapi.NetworkConfig{PodCidr: "10.244.3.0/24"}}}); err != nil {
		t.Fatal(err)
	}
	p := f.RunPod("q", nil)
	ps, _ = f.RT.PodSandboxStatus(f.Ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: p})
	if ps.Status.Network.Ip != "10.244.3.2" {
		t.Fatalf("ip %s", ps.Status.Network.Ip)
	}
	_, err = f.RT.Exec(f.Ctx, &runtimeapi.ExecRequest{ContainerId: "x"})
	wantCode(t, err, codes.Unimplemented)
}

func TestEventsInProcess(t *testing.T) {
	f := newFixture(t, &script.Script{Containers: []script.ContainerRule{{Match: script.ContainerMatch{Name: "short"}, Exit: &script.ExitSpec{After: script.Duration(10 * time.Second), Code: 3}}}})
	ctx, cancel := context.WithCancel(f.Ctx)
	defer cancel()
	evs := f.RT.Subscribe(ctx)
	f.Pull("busybox")
	pod := f.RunPod("p", nil)
	c := f.Create(pod, "short", "busybox", 0)
	f.Start(c)
	// the exit comes from the clock alone, with no call to notice it
	f.Mock.Add(10 * time.Second)
	want := []struct {
		id  string
		typ runtimeapi.ContainerEventType
		at  time.Duration
	}{
		{pod, runtimeapi.ContainerEventType_CONTAINER_CREATED_EVENT, 0},
		{pod, runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT, 0},
		{c, runtimeapi.ContainerEventType_CONTAINER_CREATED_EVENT, 0},
		{c, runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT, 0},
		{c, runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT, 10 * time.Second},
	}
	for i, w := range want {
		select {
		case ev := <-evs:
			if ev.ContainerId != w.id || ev.ContainerEventType != w.typ || ev.CreatedAt != fixture.Epoch.Add(w.at).UnixNano() {
				t.Fatalf("event %d: %v", i, ev)
			}
			if ev.PodSandboxStatus.Id != pod {
				t.Fatalf("event %d without sandbox status", i)
			}
			if i == 4 && (len(ev.ContainersStatuses) != 1 || ev.ContainersStatuses[0].ExitCode != 3) {
				t.Fatalf("stopped event statuses %v", ev.ContainersStatuses)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("event %d never came", i)
		}
	}
	if err := f.RT.WaitIdle(f.Ctx); err != nil {
		t.Fatal(err)
	}
}

func waitFor(t testing.TB, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached")
		}
		time.Sleep(200 * time.Microsecond)
	}
}

// The same script, seed and calls give the same ids, states, events and call
// log, at the same clock times.
func TestDeterministicReplay(t *testing.T) {
	replay := func() (string, string) {
		s, err := script.Load("examples/scenario.yaml")
		if err != nil {
			t.Fatal(err)
		}
		f := newFixture(t, s)
		var calls []string
		for i := 0; i < 3; i++ { // each attempt takes 2s of the clock; two fail
			res := make(chan error, 1)
			go func() {
				_, err := f.RT.PullImage(f.Ctx, &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: "busybox:flaky"}})
				res <- err
			}()
			waitFor(t, func() bool { return f.RT.InFlight() == 1 && f.RT.Idle() })
			f.Advance(2 * time.Second)
			calls = append(calls, fmt.Sprint(<-res))
		}
		done := make(chan struct{})
		go func() {
			defer close(done)
			f.Pull("nginx:1.27")
		}()
		waitFor(t, func() bool { return f.RT.InFlight() == 1 && f.RT.Idle() })
		f.Advance(12 * time.Second)
		<-done
		leaky := f.RunPod("leaky", map[string]string{"app": "leaky"})
		f.Start(f.Create(leaky, "c", "nginx:1.27", 200*mi))
		for a := uint32(0); a < 4; a++ {
			cfg := fixture.ContainerConfig("crasher", "nginx:1.27", 0)
			cfg.Metadata.Attempt = a
			r, err := f.RT.CreateContainer(f.Ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: leaky, Config: cfg})
			if err != nil {
				t.Fatal(err)
			}
			f.Start(r.ContainerId)
			f.Advance(10 * time.Second)
		}
		for i := 0; i < 50; i++ {
			_, err := f.RT.Status(f.Ctx, &runtimeapi.StatusRequest{})
			calls = append(calls, fmt.Sprint(status.Code(err)))
		}
		f.Advance(2 * time.Minute)
		st, _ := json.Marshal(f.RT.State())
		for _, c := range f.RT.Calls(calllog.Filter{}) {
			calls = append(calls, fmt.Sprintf("%d %s %s %s %s %s", c.Seq, c.Method, c.Start.Format(time.RFC3339Nano), c.Request, c.Code, c.Response))
		}
		return string(st), strings.Join(calls, "\n")
	}
	s1, c1 := replay()
	s2, c2 := replay()
	if s1 != s2 {
		t.Fatalf("states differ:\n%s\n%s", s1, s2)
	}
	if c1 != c2 {
		t.Fatalf("call logs differ:\n%s\n---\n%s", c1, c2)
	}
	for _, want := range []string{`"reason":"OOMKilled"`, `"exitCode":1`, `"state":"CONTAINER_RUNNING"`} {
		if !strings.Contains(s1, want) {
			t.Errorf("state lacks %s: %s", want, s1)
		}
	}
}

// A rule that only delays delays with its chance, seeded: the same seed delays the same calls.
func TestSeededLatencyDelaysWithItsChance(t *testing.T) {
	pattern := func(seed int64) string {
		f := newFixture(t, &script.Script{Seed: seed, Faults: []script.FaultRule{{Method: "Status", Probability: 0.3, Latency: script.Duration(time.Second)}}})
		var sb strings.Builder
		for range 100 {
			start := f.Mock.Now()
			done := make(chan error, 1)
			go func() { _, err := f.RT.Status(f.Ctx, &runtimeapi.StatusRequest{}); done <- err }()
			waitFor(t, func() bool { return len(done) == 1 || (f.RT.InFlight() == 1 && f.RT.Idle()) })
			if len(done) == 0 {
				f.Advance(time.Second)
			}
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			if f.Mock.Now().Equal(start) {
				sb.WriteByte('.')
			} else {
				sb.WriteByte('d')
			}
		}
		if delayed := strings.Count(sb.String(), "d"); delayed < 15 || delayed > 50 {
			t.Fatalf("%d of 100 delayed with p=0.3", delayed)
		}
		return sb.String()
	}
	if a, b := pattern(7), pattern(7); a != b {
		t.Fatalf("same seed, different delays:\n%s\n%s", a, b)
	}
}

// Changes is one channel until the next change, closed by it, and a new open one after changes
// no one waited on.
func TestChangesOneChannelUntilAChange(t *testing.T) {
	f := newFixture(t, nil)
	a, b := f.RT.Changes(), f.RT.Changes()
	if a != b {
		t.Fatal("two reads of Changes without a change between are two channels")
	}
	for range 3 {
		if _, err := f.RT.ListPodSandbox(f.Ctx, &runtimeapi.ListPodSandboxRequest{}); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case <-a:
	default:
		t.Fatal("Changes not closed by the calls")
	}
	select {
	case <-f.RT.Changes():
		t.Fatal("Changes after the calls is closed")
	default:
	}
}

// begin skips the fault rules of a method whose bit in faulted is clear: the bits follow every
// SetScript, one a method with rules, so a rule set later fires and one dropped no longer does.
// Fails when a method's bit is wrong or left from the script before.
func TestFaultsFollowSetScript(t *testing.T) {
	f := newFixture(t, nil)
	unavailable := &script.FaultError{Code: "Unavailable"}
	version := func() error { _, err := f.RT.Version(f.Ctx, &runtimeapi.VersionRequest{}); return err }
	status := func() error { _, err := f.RT.Status(f.Ctx, &runtimeapi.StatusRequest{}); return err }
	for _, c := range []struct {
		name            string
		faults          []script.FaultRule
		version, status codes.Code
	}{
		{"none", nil, codes.OK, codes.OK},
		{"version", []script.FaultRule{{Method: "Version", Error: unavailable}}, codes.Unavailable, codes.OK},
		{"status", []script.FaultRule{{Method: "Status", Error: unavailable}}, codes.OK, codes.Unavailable},
		{"every method", []script.FaultRule{{Method: "*", Error: unavailable}}, codes.Unavailable, codes.Unavailable},
		{"none again", nil, codes.OK, codes.OK},
	} {
		if err := f.RT.SetScript(&script.Script{Faults: c.faults}); err != nil {
			t.Fatal(err)
		}
		wantCode(t, version(), c.version)
		wantCode(t, status(), c.status)
		if c.name == "every method" && f.RT.faulted.Load() != 1<<numMethods-1 {
			t.Fatalf("%s: faulted %b, want every one of the %d methods' bits", c.name, f.RT.faulted.Load(), numMethods)
		}
	}
}
