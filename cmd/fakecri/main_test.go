package main

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"orch.io/orch/fakecri/fakecritest"
)

// The test binary doubles as the fakecri binary: run with FAKECRI_ARGS set,
// it is the server, so the tests drive the real main over its sockets.
func TestMain(m *testing.M) {
	if args := os.Getenv("FAKECRI_ARGS"); args != "" {
		var a []string
		if err := json.Unmarshal([]byte(args), &a); err != nil {
			panic(err)
		}
		os.Exit(run(context.Background(), a, os.Stderr))
	}
	os.Exit(m.Run())
}

type server struct {
	cmd      *exec.Cmd
	endpoint string
	control  *http.Client
	stderr   *strings.Builder
}

func startServer(t *testing.T, args ...string) *server {
	t.Helper()
	dir := t.TempDir()
	sock := filepath.Join(dir, "fakecri.sock")
	args = append([]string{"--listen", "unix://" + sock}, args...)
	a, _ := json.Marshal(args)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "FAKECRI_ARGS="+string(a))
	s := &server{cmd: cmd, endpoint: "unix://" + sock, stderr: &strings.Builder{}}
	cmd.Stderr = s.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
		}
		if t.Failed() {
			t.Logf("fakecri stderr:\n%s", s.stderr.String())
		}
	})
	s.control = &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", sock+".control")
	}}}
	deadline := time.Now().Add(20 * time.Second)
	for {
		if resp, err := s.control.Get("http://fakecri/healthz"); err == nil {
			resp.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("fakecri did not come up: %s", s.stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	return s
}

func (s *server) ctl(t *testing.T, method, path, body string, out any) {
	t.Helper()
	req, _ := http.NewRequest(method, "http://fakecri"+path, strings.NewReader(body))
	resp, err := s.control.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 300 {
		t.Fatalf("%s %s: %s %s", method, path, resp.Status, b)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s: %v", b, err)
		}
	}
}

const script = `
images:
  - match: "docker.io/library/nginx:*"
    size: 64Mi
    pullDuration: 10s
containers:
  - match: {name: web}
    usage:
      memory: {ramp: {from: 20Mi, to: 120Mi, over: 100s}}
      cpu: 250m
      disk: 5Mi
    stop: {delay: 3s, exitCode: 0}
exec:
  - match: {name: web}
    command: "cat /tmp/ready"
    stdout: "ready\n"
`

// The kubelet's own CRI client drives a whole lifecycle against the binary,
// on a manual clock moved through the control API.
func TestCRIClientLifecycle(t *testing.T) {
	dir := t.TempDir()
	scriptPath := filepath.Join(dir, "script.yaml")
	os.WriteFile(scriptPath, []byte(script), 0o644)
	s := startServer(t, "--clock", "manual", "--start-time", "2025-06-01T10:00:00Z", "--script", scriptPath)
	t0 := time.Date(2025, 6, 1, 10, 0, 0, 0, time.UTC)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	rs, is := fakecritest.Clients(t, s.endpoint)

	v, err := rs.Version(ctx, "v1")
	if err != nil || v.RuntimeName != "fakecri" || v.RuntimeApiVersion != "v1" {
		t.Fatal(v, err)
	}
	st, err := rs.Status(ctx, true)
	if err != nil || len(st.Status.Conditions) != 2 || !st.Status.Conditions[0].Status || !st.Status.Conditions[1].Status {
		t.Fatal(st, err)
	}
	if rc, err := rs.RuntimeConfig(ctx); err != nil || rc.Linux.CgroupDriver != runtimeapi.CgroupDriver_SYSTEMD {
		t.Fatal(rc, err)
	}

	events := make(chan *runtimeapi.ContainerEventResponse, 64)
	evCtx, evCancel := context.WithCancel(ctx)
	defer evCancel()
	connected := make(chan struct{})
	go rs.GetContainerEvents(evCtx, events, func(runtimeapi.RuntimeService_GetContainerEventsClient) { close(connected) })
	<-connected

	// the pull takes 10s of the manual clock
	pulled := make(chan error, 1)
	var ref string
	go func() {
		var err error
		ref, err = is.PullImage(ctx, &runtimeapi.ImageSpec{Image: "nginx:1.27"}, nil, nil)
		pulled <- err
	}()
	var cs struct {
		InFlight int
		Idle     bool
		Now      time.Time
	}
	for deadline := time.Now().Add(10 * time.Second); cs.InFlight != 1 || !cs.Idle; {
		if time.Now().After(deadline) {
			t.Fatalf("pull never waited on the clock: %+v", cs)
		}
		s.ctl(t, "GET", "/v1/clock", "", &cs)
	}
	select {
	case err := <-pulled:
		t.Fatalf("pull finished before the clock moved: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	s.ctl(t, "POST", "/v1/clock/advance?by=10s", "", &cs)
	if err := <-pulled; err != nil {
		t.Fatal(err)
	}
	img, err := is.ImageStatus(ctx, &runtimeapi.ImageSpec{Image: "nginx:1.27"}, false)
	if err != nil || img.Image.Id != ref || img.Image.Size != 64<<20 || img.Image.RepoTags[0] != "docker.io/library/nginx:1.27" {
		t.Fatal(img, err)
	}

	// the sandbox the kubelet sent for a static pod
	podCfg := &runtimeapi.PodSandboxConfig{
		Metadata:     &runtimeapi.PodSandboxMetadata{Name: "static-web", Uid: "a61a0300e004871a79885eb554b65e3d", Namespace: "default"},
		Hostname:     "static-web",
		LogDirectory: "/var/log/pods/default_static-web_a61a0300e004871a79885eb554b65e3d",
		DnsConfig:    &runtimeapi.DNSConfig{Servers: []string{"10.255.255.53"}},
		PortMappings: []*runtimeapi.PortMapping{{ContainerPort: 80}},
		Labels: map[string]string{"io.kubernetes.pod.name": "static-web", "io.kubernetes.pod.namespace": "default",
			"io.kubernetes.pod.uid": "a61a0300e004871a79885eb554b65e3d"},
		Annotations: map[string]string{"kubernetes.io/config.source": "file"},
		Linux: &runtimeapi.LinuxPodSandboxConfig{
			SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{NamespaceOptions: &runtimeapi.NamespaceOption{
				Pid: runtimeapi.NamespaceMode_CONTAINER, UsernsOptions: &runtimeapi.UserNamespace{Mode: runtimeapi.NamespaceMode_NODE}}},
			Resources: &runtimeapi.LinuxContainerResources{CpuPeriod: 100000, CpuShares: 2},
		},
	}
	pod, err := rs.RunPodSandbox(ctx, podCfg, "")
	if err != nil {
		t.Fatal(err)
	}
	ps, err := rs.PodSandboxStatus(ctx, pod, true)
	if err != nil || ps.Status.State != runtimeapi.PodSandboxState_SANDBOX_READY || ps.Status.Network.Ip == "" ||
		ps.Status.Annotations["kubernetes.io/config.source"] != "file" || !strings.HasPrefix(ps.Info["info"], "{") {
		t.Fatal(ps, err)
	}
	if l, err := rs.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{LabelSelector: map[string]string{"io.kubernetes.pod.name": "static-web"}}); err != nil || len(l) != 1 {
		t.Fatal(l, err)
	}

	ctrCfg := &runtimeapi.ContainerConfig{
		Metadata: &runtimeapi.ContainerMetadata{Name: "web"},
		Image:    &runtimeapi.ImageSpec{Image: ref, UserSpecifiedImage: "nginx:1.27"},
		Labels:   map[string]string{"io.kubernetes.container.name": "web", "io.kubernetes.pod.name": "static-web"},
		LogPath:  "web/0.log",
		Linux:    &runtimeapi.LinuxContainerConfig{Resources: &runtimeapi.LinuxContainerResources{MemoryLimitInBytes: 256 << 20}},
	}
	cid, err := rs.CreateContainer(ctx, pod, ctrCfg, podCfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := rs.StartContainer(ctx, cid); err != nil {
		t.Fatal(err)
	}
	s.ctl(t, "POST", "/v1/clock/advance?by=50s", "", &cs)
	cst, err := rs.ContainerStatus(ctx, cid, true)
	if err != nil {
		t.Fatal(err)
	}
	c := cst.Status
	if c.State != runtimeapi.ContainerState_CONTAINER_RUNNING || c.StartedAt != t0.Add(10*time.Second).UnixNano() ||
		c.LogPath != "/var/log/pods/default_static-web_a61a0300e004871a79885eb554b65e3d/web/0.log" ||
		c.Image.Image != "docker.io/library/nginx:1.27" || !strings.HasPrefix(c.ImageRef, "docker.io/library/nginx@sha256:") ||
		!strings.HasPrefix(cst.Info["info"], "{") {
		t.Fatal(cst)
	}
	stats, err := rs.ContainerStats(ctx, cid)
	if err != nil || stats.Memory.WorkingSetBytes.Value != 70<<20 || stats.Cpu.UsageCoreNanoSeconds.Value != 12_500_000_000 ||
		stats.WritableLayer.UsedBytes.Value != 5<<20 {
		t.Fatal(stats, err)
	}
	if all, err := rs.ListContainerStats(ctx, nil); err != nil || len(all) != 1 {
		t.Fatal(all, err)
	}
	if list, err := rs.ListContainers(ctx, &runtimeapi.ContainerFilter{State: &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING}}); err != nil || len(list) != 1 {
		t.Fatal(list, err)
	}
	out, _, err := rs.ExecSync(ctx, cid, []string{"cat", "/tmp/ready"}, time.Second)
	if err != nil || string(out) != "ready\n" {
		t.Fatal(string(out), err)
	}
	fsi, err := is.ImageFsInfo(ctx)
	if err != nil || fsi.ImageFilesystems[0].UsedBytes.Value < 64<<20 {
		t.Fatal(fsi, err)
	}

	// stop takes the scripted 3s of the clock
	stopped := make(chan error, 1)
	go func() { stopped <- rs.StopContainer(ctx, cid, 30) }()
	for cs.InFlight != 1 || !cs.Idle {
		s.ctl(t, "GET", "/v1/clock", "", &cs)
	}
	s.ctl(t, "POST", "/v1/clock/advance?to=next", "", &cs)
	if err := <-stopped; err != nil {
		t.Fatal(err)
	}
	cst, _ = rs.ContainerStatus(ctx, cid, false)
	if cst.Status.State != runtimeapi.ContainerState_CONTAINER_EXITED || cst.Status.FinishedAt != t0.Add(63*time.Second).UnixNano() {
		t.Fatal(cst.Status)
	}
	if err := rs.RemoveContainer(ctx, cid); err != nil {
		t.Fatal(err)
	}
	if err := rs.StopPodSandbox(ctx, pod); err != nil {
		t.Fatal(err)
	}
	if err := rs.RemovePodSandbox(ctx, pod); err != nil {
		t.Fatal(err)
	}
	if err := is.RemoveImage(ctx, &runtimeapi.ImageSpec{Image: ref}); err != nil {
		t.Fatal(err)
	}
	if imgs, err := is.ListImages(ctx, nil); err != nil || len(imgs) != 1 || !imgs[0].Pinned {
		t.Fatal("only the pinned pause image should be left:", imgs, err)
	}

	var got []string
	for len(got) < 8 {
		select {
		case ev := <-events:
			who := "pod"
			if ev.ContainerId == cid {
				who = "web"
			}
			got = append(got, who+":"+strings.TrimSuffix(strings.TrimPrefix(ev.ContainerEventType.String(), "CONTAINER_"), "_EVENT"))
		case <-time.After(10 * time.Second):
			t.Fatalf("events so far: %v", got)
		}
	}
	want := "pod:CREATED pod:STARTED web:CREATED web:STARTED web:STOPPED web:DELETED pod:STOPPED pod:DELETED"
	if strings.Join(got, " ") != want {
		t.Fatalf("events\n got %v\nwant %v", got, want)
	}

	// the call log says what was asked, in order
	var calls struct {
		Calls []struct{ Method, Code string }
	}
	s.ctl(t, "GET", "/v1/calls?method=*Container", "", &calls)
	var methods []string
	for _, c := range calls.Calls {
		methods = append(methods, c.Method+"="+c.Code)
	}
	if strings.Join(methods, " ") != "CreateContainer=OK StartContainer=OK StopContainer=OK RemoveContainer=OK" {
		t.Fatal(methods)
	}
}

// The wall-clock binary: a script reloaded by SIGHUP, faults, a clean stop.
func TestWallClockReloadAndShutdown(t *testing.T) {
	dir := t.TempDir()
	scriptPath := filepath.Join(dir, "script.yaml")
	os.WriteFile(scriptPath, []byte(""), 0o644)
	s := startServer(t, "--script", scriptPath)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rs, _ := fakecritest.Clients(t, s.endpoint)
	if _, err := rs.Status(ctx, false); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(scriptPath, []byte("faults: [{method: Status, error: {code: Unavailable, message: maintenance}}]"), 0o644)
	s.cmd.Process.Signal(syscall.SIGHUP)
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := rs.Status(ctx, false)
		if err != nil && strings.Contains(err.Error(), "maintenance") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("reload not seen: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	var cs struct{ Manual bool }
	s.ctl(t, "GET", "/v1/clock", "", &cs)
	if cs.Manual {
		t.Fatal("wall clock reported as manual")
	}
	// an open event stream (the kubelet keeps one) does not hold up the stop
	connected := make(chan struct{})
	streamErr := make(chan error, 1)
	go func() {
		streamErr <- rs.GetContainerEvents(ctx, make(chan *runtimeapi.ContainerEventResponse, 1),
			func(runtimeapi.RuntimeService_GetContainerEventsClient) { close(connected) })
	}()
	<-connected
	time.Sleep(50 * time.Millisecond)
	start := time.Now()
	s.cmd.Process.Signal(syscall.SIGTERM)
	if err := s.cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("stopping took %v", d)
	}
	if err := <-streamErr; err == nil {
		t.Fatal("the event stream did not end")
	}
	sock := strings.TrimPrefix(s.endpoint, "unix://")
	if _, err := os.Stat(sock); !os.IsNotExist(err) {
		t.Fatalf("socket left behind: %v", err)
	}
}

func TestBadFlags(t *testing.T) {
	var sb strings.Builder
	for _, args := range [][]string{
		{"--clock", "sundial"},
		{"--script", "/nonexistent.yaml"},
		{"--listen", "tcp://127.0.0.1:0"}, // a TCP listener needs an explicit --control
		{"extra"},
	} {
		if code := run(context.Background(), args, &sb); code == 0 {
			t.Errorf("%v accepted", args)
		}
	}
}

// The image filesystem ImageFsInfo names exists on this host (under --state-dir, by default the
// socket path + ".d"), so an agent sizing it by statfs, as the kubelet does, succeeds; a script's
// own mountpoint is kept.
func TestImageFsMountpointExists(t *testing.T) {
	dir := t.TempDir()
	scriptPath := filepath.Join(dir, "script.yaml")
	for _, tc := range []struct {
		script, want string
	}{
		{"", ".d/imagefs"},
		{"node: {imageFs: {mountpoint: /var/lib/elsewhere}}", "/var/lib/elsewhere"},
	} {
		if err := os.WriteFile(scriptPath, []byte(tc.script), 0o644); err != nil {
			t.Fatal(err)
		}
		s := startServer(t, "--script", scriptPath)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		_, is := fakecritest.Clients(t, s.endpoint)
		info, err := is.ImageFsInfo(ctx)
		cancel()
		if err != nil || len(info.ImageFilesystems) == 0 {
			t.Fatalf("ImageFsInfo: %v %v", info, err)
		}
		mp := info.ImageFilesystems[0].FsId.Mountpoint
		if !strings.HasSuffix(mp, tc.want) {
			t.Fatalf("mountpoint %q, want ...%s", mp, tc.want)
		}
		// A script set later through the control API keeps the default too.
		s.ctl(t, "PUT", "/v1/script", tc.script, nil)
		ctx, cancel = context.WithTimeout(context.Background(), 30*time.Second)
		info, err = is.ImageFsInfo(ctx)
		cancel()
		if err != nil || len(info.ImageFilesystems) == 0 || info.ImageFilesystems[0].FsId.Mountpoint != mp {
			t.Fatalf("after PUT /v1/script: ImageFsInfo %v %v, want the mountpoint %s", info, err, mp)
		}
		if tc.script == "" {
			if st, err := os.Stat(mp); err != nil || !st.IsDir() {
				t.Fatalf("the default mountpoint %s does not exist: %v", mp, err)
			}
		}
	}
}
