package fakecri

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"google.golang.org/grpc/codes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/client-go/transport/spdy"
	"k8s.io/client-go/util/exec"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"orch.io/orch/fakecri/fakecritest/fixture"
	"orch.io/orch/fakecri/script"
)

// streamFixture is a runtime on the wall clock serving its streams, with one running container.
type streamFixture struct {
	*fixture.Fixture[*Runtime]
	pod, ctr string
}

func newStreamFixture(t *testing.T, s *script.Script) *streamFixture {
	t.Helper()
	rt, err := New(Options{Clock: clock.New(), Seed: 7, Script: s})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv, err := rt.ServeStreams(ln, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	f := &streamFixture{Fixture: &fixture.Fixture[*Runtime]{T: t, Ctx: ctx, RT: rt}}
	f.Pull("busybox:1.36")
	f.pod = f.RunPod("web", map[string]string{"app": "web"})
	cfg := fixture.ContainerConfig("app", "busybox:1.36", 0)
	cfg.Envs = []*runtimeapi.KeyValue{{Key: "GREETING", Value: []byte("hello")}}
	resp, err := rt.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: f.pod, Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	f.ctr = resp.ContainerId
	f.Start(f.ctr)
	return f
}

// exec runs cmd through the URL Exec answers, as the node agent's proxy would reach it.
func (f *streamFixture) exec(cmd []string, stdin string, tty bool) (stdout, stderr string, err error) {
	f.T.Helper()
	resp, err := f.RT.Exec(f.Ctx, &runtimeapi.ExecRequest{ContainerId: f.ctr, Cmd: cmd, Stdin: stdin != "", Stdout: true, Stderr: !tty, Tty: tty})
	if err != nil {
		f.T.Fatalf("Exec: %v", err)
	}
	return stream(f.Ctx, f.T, resp.Url, stdin, tty)
}

func stream(ctx context.Context, t testing.TB, rawURL, stdin string, tty bool) (string, string, error) {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	e, err := remotecommand.NewSPDYExecutor(&rest.Config{}, http.MethodPost, u)
	if err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	opts := remotecommand.StreamOptions{Stdout: &out, Tty: tty}
	if !tty {
		opts.Stderr = &errOut
	}
	if stdin != "" {
		opts.Stdin = strings.NewReader(stdin)
	}
	err = e.StreamWithContext(ctx, opts)
	return out.String(), errOut.String(), err
}

func exitCode(err error) int {
	var exit exec.CodeExitError
	if errors.As(err, &exit) {
		return exit.Code
	}
	if err != nil {
		return -1
	}
	return 0
}

func TestStreamedExecBuiltins(t *testing.T) {
	f := newStreamFixture(t, &script.Script{
		Files: []script.FileRule{{Match: script.ContainerMatch{Pod: "web"}, Path: "/usr/share/html/index.html", Content: "<h1>web</h1>\n"}},
		Exec:  []script.ExecRule{{Command: "df -h", Stdout: "Filesystem Size\n", Stderr: "warning\n", ExitCode: 3}},
	})
	for _, tc := range []struct {
		cmd          []string
		stdin        string
		stdout, errs string
		code         int
	}{
		{cmd: []string{"echo", "hello", "world"}, stdout: "hello world\n"},
		{cmd: []string{"true"}},
		{cmd: []string{"false"}, code: 1},
		{cmd: []string{"hostname"}, stdout: "web\n"},
		{cmd: []string{"env"}, stdout: "HOSTNAME=web\nGREETING=hello\n"},
		{cmd: []string{"cat", "/usr/share/html/index.html"}, stdout: "<h1>web</h1>\n"},
		{cmd: []string{"cat", "/nope"}, errs: "cat: can't open '/nope': No such file or directory\n", code: 1},
		{cmd: []string{"cat"}, stdin: "piped\nin\n", stdout: "piped\nin\n"},
		{cmd: []string{"ls", "/usr/share"}, stdout: "html\n"},
		{cmd: []string{"seq", "3"}, stdout: "1\n2\n3\n"},
		{cmd: []string{"sh", "-c", `echo "$GREETING, $HOSTNAME" && false || echo 'fell $through'; exit 7`}, stdout: "hello, web\nfell $through\n", code: 7},
		{cmd: []string{"sh", "-c", "seq 2 | cat; nosuch"}, stdout: "1\n2\n", errs: "sh: nosuch: not found\n", code: 127},
		{cmd: []string{"sh"}, stdin: "echo one\nexit 4\necho never\n", stdout: "one\n", code: 4},
		{cmd: []string{"df", "-h"}, stdout: "Filesystem Size\n", errs: "warning\n", code: 3},
	} {
		t.Run(strings.Join(tc.cmd, " "), func(t *testing.T) {
			stdout, stderr, err := f.exec(tc.cmd, tc.stdin, false)
			if stdout != tc.stdout || stderr != tc.errs || exitCode(err) != tc.code {
				t.Fatalf("got stdout %q stderr %q exit %d (%v), want %q %q %d", stdout, stderr, exitCode(err), err, tc.stdout, tc.errs, tc.code)
			}
		})
	}
}

func TestStreamedExecUnknownBinaryIsARuntimeError(t *testing.T) {
	f := newStreamFixture(t, nil)
	_, _, err := f.exec([]string{"nginx", "-t"}, "", false)
	if err == nil || exitCode(err) != -1 || !strings.Contains(err.Error(), `exec: "nginx": executable file not found in $PATH`) {
		t.Fatalf("got %v", err)
	}
}

// A large output arrives whole and in order.
func TestStreamedExecLargeOutput(t *testing.T) {
	f := newStreamFixture(t, nil)
	stdout, _, err := f.exec([]string{"seq", "1", "1000000"}, "", false)
	if err != nil {
		t.Fatal(err)
	}
	var want bytes.Buffer
	for i := 1; i <= 1000000; i++ {
		want.WriteString(strconv.Itoa(i))
		want.WriteByte('\n')
	}
	if sha256.Sum256([]byte(stdout)) != sha256.Sum256(want.Bytes()) {
		t.Fatalf("output of %d bytes differs from the %d expected", len(stdout), want.Len())
	}
}

// A rule's output larger than one SPDY data frame holds (16 MiB less a byte) arrives whole: it is
// written in pieces, as a runtime copies a process's output.
func TestStreamedExecRuleOutputLargerThanAFrame(t *testing.T) {
	out := bytes.Repeat([]byte("0123456789abcdef"), 17<<16) // 17 MiB
	f := newStreamFixture(t, &script.Script{Exec: []script.ExecRule{{Command: "big", Stdout: string(out), Stderr: "done"}}})
	stdout, stderr, err := f.exec([]string{"big"}, "", false)
	if err != nil || stdout != string(out) || stderr != "done" {
		t.Fatalf("big: %d bytes of %d, stderr %q, %v", len(stdout), len(out), stderr, err)
	}
}

// On a terminal sh prompts, the typed line is echoed, output lines end in CRLF.
func TestStreamedExecInteractiveShellOnATerminal(t *testing.T) {
	f := newStreamFixture(t, nil)
	resp, err := f.RT.Exec(f.Ctx, &runtimeapi.ExecRequest{ContainerId: f.ctr, Cmd: []string{"sh"}, Stdin: true, Stdout: true, Tty: true})
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(resp.Url)
	e, err := remotecommand.NewSPDYExecutor(&rest.Config{}, http.MethodPost, u)
	if err != nil {
		t.Fatal(err)
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- e.StreamWithContext(f.Ctx, remotecommand.StreamOptions{Stdin: inR, Stdout: outW, Tty: true})
		outW.Close()
	}()
	var seen []byte
	expect := func(want string) {
		t.Helper()
		buf := make([]byte, 256)
		for !bytes.HasSuffix(seen, []byte(want)) {
			n, err := outR.Read(buf)
			if err != nil {
				t.Fatalf("waiting for %q after %q: %v", want, seen, err)
			}
			seen = append(seen, buf[:n]...)
		}
	}
	expect("/ # ")
	io.WriteString(inW, "echo hi\r")
	expect("/ # echo hi\r\nhi\r\n/ # ")
	io.WriteString(inW, "exit 3\r")
	go io.Copy(io.Discard, outR)
	if err := <-done; exitCode(err) != 3 {
		t.Fatalf("exit %d (%v), want 3", exitCode(err), err)
	}
}

func TestStreamsRefusedWithoutAServerOrARunningContainer(t *testing.T) {
	f := newFixture(t, nil)
	_, c := f.Run("web", "app", "busybox", 0)
	_, err := f.RT.Exec(f.Ctx, &runtimeapi.ExecRequest{ContainerId: c, Cmd: []string{"true"}, Stdout: true})
	wantCode(t, err, codes.Unimplemented)

	sf := newStreamFixture(t, nil)
	_, err = sf.RT.Exec(sf.Ctx, &runtimeapi.ExecRequest{ContainerId: "nosuch", Cmd: []string{"true"}, Stdout: true})
	wantCode(t, err, codes.NotFound)
	if _, err := sf.RT.StopContainer(sf.Ctx, &runtimeapi.StopContainerRequest{ContainerId: sf.ctr}); err != nil {
		t.Fatal(err)
	}
	_, err = sf.RT.Attach(sf.Ctx, &runtimeapi.AttachRequest{ContainerId: sf.ctr, Stdout: true})
	wantCode(t, err, codes.FailedPrecondition)
}

// Attach shows the lines the container logs from then on.
func TestAttachStreamsLogLines(t *testing.T) {
	f := newStreamFixture(t, &script.Script{Containers: []script.ContainerRule{{
		Match: script.ContainerMatch{Name: "app"},
		Logs:  &script.LogSpec{Lines: []string{"line {n}"}, Every: script.Duration(20 * time.Millisecond), Count: 100},
	}}})
	resp, err := f.RT.Attach(f.Ctx, &runtimeapi.AttachRequest{ContainerId: f.ctr, Stdout: true, Stderr: true})
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(resp.Url)
	e, err := remotecommand.NewSPDYExecutor(&rest.Config{}, http.MethodPost, u)
	if err != nil {
		t.Fatal(err)
	}
	pr, pw := io.Pipe()
	ctx, cancel := context.WithCancel(f.Ctx)
	defer cancel()
	go e.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: pw, Stderr: io.Discard})
	lines := bufio.NewScanner(pr)
	var prev int
	for i := 0; i < 3 && lines.Scan(); i++ {
		n, err := strconv.Atoi(strings.TrimPrefix(lines.Text(), "line "))
		if err != nil || (i > 0 && n != prev+1) {
			t.Fatalf("line %q after line %d", lines.Text(), prev)
		}
		prev = n
	}
	if prev == 0 {
		t.Fatal("no line attached")
	}
}

// forward port-forwards a local port to port of the pod and answers it.
func (f *streamFixture) forward(port int32) int {
	f.T.Helper()
	resp, err := f.RT.PortForward(f.Ctx, &runtimeapi.PortForwardRequest{PodSandboxId: f.pod, Port: []int32{port}})
	if err != nil {
		f.T.Fatal(err)
	}
	u, _ := url.Parse(resp.Url)
	transport, upgrader, err := spdy.RoundTripperFor(&rest.Config{})
	if err != nil {
		f.T.Fatal(err)
	}
	dialer := spdy.NewDialer(upgrader, &http.Client{Transport: transport}, http.MethodPost, u)
	stop, ready := make(chan struct{}), make(chan struct{})
	f.T.Cleanup(func() { close(stop) })
	pf, err := portforward.New(dialer, []string{fmt.Sprintf("0:%d", port)}, stop, ready, io.Discard, io.Discard)
	if err != nil {
		f.T.Fatal(err)
	}
	go pf.ForwardPorts()
	<-ready
	ports, err := pf.GetPorts()
	if err != nil {
		f.T.Fatal(err)
	}
	return int(ports[0].Local)
}

func TestPortForwardResponders(t *testing.T) {
	f := newStreamFixture(t, &script.Script{Ports: []script.PortRule{
		{Match: script.ContainerMatch{PodLabels: map[string]string{"app": "web"}}, Port: 80, HTTP: &script.HTTPAnswer{Body: "welcome\n", Headers: map[string]string{"Server": "fakecri"}}},
		{Port: 7, Echo: true},
	}})
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/", f.forward(80)))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(body) != "welcome\n" || resp.Header.Get("Server") != "fakecri" {
		t.Fatalf("got %d %q %v", resp.StatusCode, body, resp.Header)
	}

	conn, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", f.forward(7)))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	data := bytes.Repeat([]byte("0123456789abcdef"), 1<<16) // 1 MiB
	go conn.Write(data)
	got := make([]byte, len(data))
	if _, err := io.ReadFull(conn, got); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("echo: %v, equal %v", err, bytes.Equal(got, data))
	}
}

// Attached to a container whose process is sh reading its stdin, the client's input runs in the
// built-in shell, as critest's attach check and `kubectl attach -i` expect; the attach ends with
// the input.
func TestAttachToAShellRunsTheInput(t *testing.T) {
	f := newStreamFixture(t, nil)
	cfg := fixture.ContainerConfig("shell", "busybox:1.36", 0)
	cfg.Command, cfg.Stdin, cfg.StdinOnce = []string{"/bin/sh"}, true, true
	resp, err := f.RT.CreateContainer(f.Ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: f.pod, Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	f.Start(resp.ContainerId)
	attach, err := f.RT.Attach(f.Ctx, &runtimeapi.AttachRequest{ContainerId: resp.ContainerId, Stdin: true, Stdout: true, Stderr: true})
	if err != nil {
		t.Fatal(err)
	}
	stdout, stderr, err := stream(f.Ctx, t, attach.Url, "echo -n hello\nnope\n", false)
	if err != nil || stdout != "hello" || !strings.Contains(stderr, "nope") {
		t.Fatalf("attach to sh: stdout %q, stderr %q, %v", stdout, stderr, err)
	}
}
