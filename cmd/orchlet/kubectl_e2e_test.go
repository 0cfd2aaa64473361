//go:build e2e

package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"orch.io/orch/components/apiserver/nodeproxy"
	"orch.io/orch/components/apiserver/server"
	"orch.io/orch/components/authn"
	"orch.io/orch/components/certs/certstest"
	"orch.io/orch/components/orchlet/app/apptest"
	"orch.io/orch/components/syncbuf"
	"orch.io/orch/fakecri"
	"orch.io/orch/fakecri/fakecritest"
	"orch.io/orch/fakecri/script"
)

// kubectlPod is the pod the kubectl tests reach, named as no other test's pod is (their clean-up
// removes their pods' log directories by name), on the host's network (no CNI here): app keeps
// running (exec, cp, port-forward and debug's target); logger fails its first attempt, then
// ticks, counting its attempts in an emptyDir that outlives them (logs, logs -f, logs
// --previous); shell echoes the lines of its standard input until it closes (attach -i).
const kubectlPod = `apiVersion: v1
kind: Pod
metadata: {name: kubectl-e2e, namespace: default}
spec:
  nodeName: ` + e2eNode + `
  hostNetwork: true
  terminationGracePeriodSeconds: 2
  volumes: [{name: data, emptyDir: {}}]
  containers:
  - {name: app, image: ` + e2eImage + `, command: [sleep, "3600"]}
  - name: logger
    image: ` + e2eImage + `
    volumeMounts: [{name: data, mountPath: /data}]
    command:
    - sh
    - -c
    - 'n=$$(cat /data/n 2>/dev/null || echo 0); n=$$((n+1)); echo $$n > /data/n; echo attempt $$n; [ $$n -ge 2 ] || exit 1; i=1; while true; do echo tick $$i; i=$$((i+1)); sleep 0.1; done'
  - name: shell
    image: ` + e2eImage + `
    stdin: true
    stdinOnce: true
    command: [sh, -c, 'while read line; do echo "got: $$line"; done']
`

// kubectlCluster is orch-apiserver's handler over TLS and an API-mode orchlet locked down as make
// run configures it (anonymous requests refused, Webhook authentication and authorization, the
// API server's client certificate trusted), with the pod kubectl-e2e Running on its runtime.
type kubectlCluster struct {
	kubeconfig string
	client     kubernetes.Interface
	agent      *servingAgent
	dir        string // the test's scratch directory
}

// startKubectlCluster starts the cluster on the runtime at endpoint (orch.local/busybox images
// present) and waits for kubectl-e2e's app Running. The API server
// authenticates the bearer token admin-token as admin, in system:masters, kubectl's user, and
// viewer-token as the user viewer, allowed only get pods.
func startKubectlCluster(t *testing.T, endpoint string) *kubectlCluster {
	t.Helper()
	dir := t.TempDir()
	ca := certstest.NewCA(t, "orchlet-client-ca")
	caFile := filepath.Join(dir, "orchlet-client-ca.crt")
	certstest.WriteFile(t, caFile, ca.PEM)
	nc := nodeproxy.Config{PreferredAddressTypes: []corev1.NodeAddressType{corev1.NodeInternalIP}, Timeout: 5 * time.Second}
	nc.CertFile, nc.KeyFile = ca.Client(t, "orch-apiserver-orchlet-client", "system:masters").WriteFiles(t, dir, "orchlet-client")
	nodes, err := nodeproxy.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig, client := e2eAPIServer(t, func(c *server.Config) {
		c.Nodes = nodes
		c.Authenticator = apptest.TokenUsers(map[string]authn.UserInfo{
			"admin-token":  {Name: "admin", Groups: []string{"system:masters"}},
			"viewer-token": {Name: "viewer"},
		})
		c.Authorizer = apptest.OnlyGetPods("viewer")
	})
	cleanupPodLogs(t, "kubectl-e2e")
	a := startServing(t, "--container-runtime-endpoint", endpoint, "--orchconfig="+kubeconfig,
		"--hostname-override="+e2eNode, "--node-ip=127.0.0.1", "--fail-swap-on=false", "--cgroup-driver=cgroupfs",
		"--cert-dir="+t.TempDir(), "--root-dir="+t.TempDir(),
		// A shared machine's disk may be nearly full: neither pressure nor image GC may take the
		// pod or its image away mid-test.
		"--eviction-hard=memory.available<1Mi,nodefs.available<1%,imagefs.available<1%,nodefs.inodesFree<1%", "--image-gc-high-threshold=100",
		"--anonymous-auth=false", "--authentication-token-webhook", "--authorization-mode=Webhook", "--client-ca-file="+caFile)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("orchlet stderr:\n%s", a.stderr.String())
		}
	})
	// kubectl asks for a user name when its kubeconfig names no credentials: it has admin's token.
	agentConfig, err := os.ReadFile(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	admin := filepath.Join(filepath.Dir(kubeconfig), "admin.conf")
	if err := os.WriteFile(admin, bytes.Replace(agentConfig, []byte("user: {}"), []byte("user: {token: admin-token}"), 1), 0o600); err != nil {
		t.Fatal(err)
	}
	c := &kubectlCluster{kubeconfig: admin, client: client, agent: a, dir: dir}
	manifest := filepath.Join(dir, "kubectl-e2e.yaml")
	if err := os.WriteFile(manifest, []byte(kubectlPod), 0o644); err != nil {
		t.Fatal(err)
	}
	c.must(t, kubectlBinaries(t)[0], "apply", "-f", manifest)
	apptest.WaitWithin(t, clock.New(), "kubectl-e2e's app Running", time.Minute, func() (bool, error) {
		s, err := c.containerStatus("app")
		return err == nil && s.State.Running != nil, fmt.Errorf("%+v, %v", s.State, err)
	})
	return c
}

// kubectlBinary is one kubectl the tests drive.
type kubectlBinary struct {
	name, path string
}

// projectKubectl is Kubernetes' kubectl built from third_party/kubectl (what make kubectl
// builds), once per test binary, beside the orchlet binary.
var projectKubectl = sync.OnceValues(func() (string, error) {
	bin := filepath.Join(filepath.Dir(binary), "kubectl")
	build := exec.Command("go", "build", "-o", bin,
		"-ldflags", "-X k8s.io/component-base/version.gitVersion=v1.37.2 -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=37", ".")
	build.Dir = filepath.Join("..", "..", "third_party", "kubectl")
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building kubectl: %v\n%s", err, out)
	}
	return bin, nil
})

// kubectlBinaries answers the project's kubectl and, when the machine has one on PATH (an older
// release, such as v1.32), that one too: each command is run with every one of them.
func kubectlBinaries(t *testing.T) []kubectlBinary {
	t.Helper()
	bin, err := projectKubectl()
	if err != nil {
		t.Fatal(err)
	}
	out := []kubectlBinary{{name: "kubectl v1.37.2", path: bin}}
	if p, err := exec.LookPath("kubectl"); err == nil {
		version, _ := exec.Command(p, "version", "--client", "-o", "json").Output()
		m := regexp.MustCompile(`"gitVersion":\s*"([^"]+)"`).FindSubmatch(version)
		if m == nil {
			t.Fatalf("%s version --client: %s", p, version)
		}
		out = append(out, kubectlBinary{name: "machine's kubectl " + string(m[1]), path: p})
	} else {
		t.Logf("no kubectl on PATH: only the project's is driven")
	}
	return out
}

// kubectlRun is one kubectl invocation's outcome.
type kubectlRun struct {
	stdout, stderr []byte
	code           int
}

// run runs k with args against the cluster, stdin (or nothing) as its input and env added
// (KUBECTL_REMOTE_COMMAND_WEBSOCKETS=false picks SPDY), within two minutes.
func (c *kubectlCluster) run(t *testing.T, k kubectlBinary, env []string, stdin io.Reader, args ...string) kubectlRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, k.path, append([]string{"--kubeconfig", c.kubeconfig}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Dir = c.dir
	cmd.Stdin = stdin
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	r := kubectlRun{stdout: stdout.Bytes(), stderr: stderr.Bytes()}
	if exit, ok := err.(*exec.ExitError); ok {
		r.code = exit.ExitCode()
	} else if err != nil {
		t.Fatalf("%s %s: %v", k.name, strings.Join(args, " "), err)
	}
	return r
}

// must runs k with args and fails the test unless it succeeds; it answers its standard output.
func (c *kubectlCluster) must(t *testing.T, k kubectlBinary, args ...string) string {
	t.Helper()
	r := c.run(t, k, nil, nil, args...)
	if r.code != 0 {
		t.Fatalf("%s %s: exit %d\n%s%s", k.name, strings.Join(args, " "), r.code, r.stdout, r.stderr)
	}
	return string(r.stdout)
}

// protocols are the two ways kubectl streams: WebSocket (its default since v1.30) and SPDY, which
// these variables select.
var protocols = []struct {
	name string
	env  []string
}{
	{"WebSocket", nil},
	{"SPDY", []string{"KUBECTL_REMOTE_COMMAND_WEBSOCKETS=false", "KUBECTL_PORT_FORWARD_WEBSOCKETS=false"}},
}

// onTerminal runs k with args on a pseudo-terminal of its own, as a person at a terminal runs
// kubectl -it: talk reads what the terminal shows and types on it. It answers everything the
// terminal showed and kubectl's exit code.
func (c *kubectlCluster) onTerminal(t *testing.T, k kubectlBinary, env []string, talk func(screen *syncbuf.Buffer, typeIn func(string)), args ...string) (string, int) {
	t.Helper()
	ptmx, tty := openPTY(t)
	cmd := exec.Command(k.path, append([]string{"--kubeconfig", c.kubeconfig}, args...)...)
	cmd.Dir = c.dir
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = tty, tty, tty
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	tty.Close()
	screen := &syncbuf.Buffer{}
	copied := make(chan struct{})
	go func() { _, _ = io.Copy(screen, ptmx); close(copied) }()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	talk(screen, func(s string) {
		if _, err := ptmx.WriteString(s); err != nil {
			t.Errorf("typing %q: %v", s, err)
		}
	})
	var err error
	select {
	case err = <-done:
	case <-time.After(time.Minute):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("%s %s on a terminal: still running after a minute; the terminal showed:\n%s", k.name, strings.Join(args, " "), screen.String())
	}
	ptmx.Close()
	<-copied
	code := 0
	if exit, ok := err.(*exec.ExitError); ok {
		code = exit.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return screen.String(), code
}

// openPTY opens a pseudo-terminal pair: its controlling side and the terminal a program runs on.
func openPTY(t *testing.T) (ptmx, tty *os.File) {
	t.Helper()
	ptmx, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.IoctlSetPointerInt(int(ptmx.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(ptmx.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	tty, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	return ptmx, tty
}

// waitShown waits until the terminal has shown s, within 30s.
func waitShown(t *testing.T, screen *syncbuf.Buffer, s string) {
	t.Helper()
	apptest.WaitWithin(t, clock.New(), fmt.Sprintf("the terminal to show %q", s), 30*time.Second, func() (bool, error) {
		return strings.Contains(screen.String(), s), fmt.Errorf("it shows %q", screen.String())
	})
}

// onContainerd starts containerd for the test and answers its CRI endpoint.
func onContainerd(t *testing.T) string {
	t.Helper()
	ctd := startContainerd(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	connectRuntime(ctx, t, "unix://"+ctd.sock)
	return "unix://" + ctd.sock
}

// kubectl exec through orch-apiserver on containerd, with each kubectl over each protocol: output
// and stderr apart, an exit code propagated, stdin piped, and on a terminal (-it) the command
// given a tty; a user allowed only get pods is refused with Kubernetes' 403.
func TestKubectlExecOnContainerd(t *testing.T) {
	c := startKubectlCluster(t, onContainerd(t))
	stdin := bytes.Repeat([]byte("piped through kubectl exec -i\n"), 1<<15) // about 1 MiB
	for _, k := range kubectlBinaries(t) {
		for _, p := range protocols {
			name := k.name + " over " + p.name
			r := c.run(t, k, p.env, nil, "exec", "kubectl-e2e", "-c", "app", "--", "sh", "-c", "echo out; echo err >&2; exit 7")
			if string(r.stdout) != "out\n" || !strings.HasPrefix(string(r.stderr), "err\n") || r.code != 7 {
				t.Errorf("%s: exec sh -c 'echo out; echo err >&2; exit 7': stdout %q, stderr %q, exit %d; want out, err and exit 7", name, r.stdout, r.stderr, r.code)
			}
			r = c.run(t, k, p.env, bytes.NewReader(stdin), "exec", "-i", "kubectl-e2e", "-c", "app", "--", "cat")
			if r.code != 0 || !bytes.Equal(r.stdout, stdin) {
				t.Errorf("%s: exec -i cat of %d bytes piped: %d bytes back, exit %d, stderr %q", name, len(stdin), len(r.stdout), r.code, r.stderr)
			}
			// Without -t the command has no terminal.
			r = c.run(t, k, p.env, nil, "exec", "kubectl-e2e", "-c", "app", "--", "tty")
			if string(r.stdout) != "not a tty\n" || r.code != 1 {
				t.Errorf("%s: exec tty: %q, exit %d; want not a tty, exit 1", name, r.stdout, r.code)
			}
			screen, code := c.onTerminal(t, k, p.env, func(screen *syncbuf.Buffer, typeIn func(string)) {
				waitShown(t, screen, "# ")
				typeIn("tty; exit 5\r")
			}, "exec", "-it", "kubectl-e2e", "-c", "app", "--", "sh")
			if !regexp.MustCompile(`/dev/pts/\d+`).MatchString(screen) || code != 5 {
				t.Errorf("%s: exec -it sh, typed tty; exit 5: exit %d, the terminal showed %q; want a /dev/pts terminal and exit 5", name, code, screen)
			}
		}
		r := c.run(t, k, nil, nil, "--token=viewer-token", "exec", "kubectl-e2e", "-c", "app", "--", "true")
		if r.code == 0 || !strings.Contains(string(r.stderr), `pods "kubectl-e2e" is forbidden: User "viewer" cannot create resource "pods/exec" in API group "" in the namespace "default"`) {
			t.Errorf("%s: the viewer's exec: exit %d, %s; want Kubernetes' 403", k.name, r.code, r.stderr)
		}
	}
}

// kubectl cp through orch-apiserver on containerd, both ways, with each kubectl: a file of 4 MiB
// of random bytes into the container (its checksum taken there) and back out unchanged.
func TestKubectlCpOnContainerd(t *testing.T) {
	c := startKubectlCluster(t, onContainerd(t))
	data := make([]byte, 4<<20)
	if _, err := rand.Read(data); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	local := filepath.Join(c.dir, "up.bin")
	if err := os.WriteFile(local, data, 0o644); err != nil {
		t.Fatal(err)
	}
	for i, k := range kubectlBinaries(t) {
		remote := fmt.Sprintf("/tmp/cp-%d.bin", i)
		c.must(t, k, "cp", "up.bin", "default/kubectl-e2e:"+remote, "-c", "app")
		if out := c.must(t, k, "exec", "kubectl-e2e", "-c", "app", "--", "sha256sum", remote); out != hex.EncodeToString(sum[:])+"  "+remote+"\n" {
			t.Errorf("%s: cp up.bin kubectl-e2e:%s, then sha256sum there: %q; want %x", k.name, remote, out, sum)
		}
		back := fmt.Sprintf("back-%d.bin", i)
		c.must(t, k, "cp", "default/kubectl-e2e:"+remote, back, "-c", "app")
		if got, err := os.ReadFile(filepath.Join(c.dir, back)); err != nil || !bytes.Equal(got, data) {
			t.Errorf("%s: cp kubectl-e2e:%s %s: %d bytes, %v; want the %d bytes sent", k.name, remote, back, len(got), err, len(data))
		}
	}
}

// kubectl logs through orch-apiserver on containerd, with each kubectl: the latest attempt's log,
// --previous the attempt before (the logger failed its first), --tail, and -f following lines
// written after it started, in order.
func TestKubectlLogsOnContainerd(t *testing.T) {
	c := startKubectlCluster(t, onContainerd(t))
	apptest.WaitWithin(t, clock.New(), "the logger's second attempt Running", time.Minute, func() (bool, error) {
		s, err := c.containerStatus("logger")
		return err == nil && s.State.Running != nil && s.RestartCount == 1, fmt.Errorf("%+v, %v", s, err)
	})
	for _, k := range kubectlBinaries(t) {
		if out := c.must(t, k, "logs", "kubectl-e2e", "-c", "logger", "--previous"); out != "attempt 1\n" {
			t.Errorf("%s: logs --previous: %q, want the first attempt's line", k.name, out)
		}
		out := c.must(t, k, "logs", "kubectl-e2e", "-c", "logger")
		if !strings.HasPrefix(out, "attempt 2\ntick 1\ntick 2\n") {
			t.Errorf("%s: logs: %.60q, want the second attempt's lines", k.name, out)
		}
		if tail := c.must(t, k, "logs", "kubectl-e2e", "-c", "logger", "--tail=1"); strings.Count(tail, "\n") != 1 || !strings.HasPrefix(tail, "tick ") {
			t.Errorf("%s: logs --tail=1: %q", k.name, tail)
		}
		// Followed: every line in order, and lines the logger wrote after logs -f began.
		ticks := strings.Count(out, "tick ")
		cmd := exec.Command(k.path, "--kubeconfig", c.kubeconfig, "logs", "-f", "kubectl-e2e", "-c", "logger")
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		lines := bufio.NewScanner(stdout)
		want := []string{"attempt 2"}
		for i := 1; i <= ticks+30; i++ {
			want = append(want, fmt.Sprintf("tick %d", i))
		}
		for i, w := range want {
			if !lines.Scan() || lines.Text() != w {
				t.Errorf("%s: logs -f line %d: %q (%v), want %q", k.name, i+1, lines.Text(), lines.Err(), w)
				break
			}
		}
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}
}

// kubectl port-forward through orch-apiserver on containerd to busybox's httpd in the pod, with
// each kubectl over each protocol: the page comes back through the local port.
func TestKubectlPortForwardOnContainerd(t *testing.T) {
	c := startKubectlCluster(t, onContainerd(t))
	port := apptest.FreePort(t) // the pod is on the host's network
	k0 := kubectlBinaries(t)[0]
	c.must(t, k0, "exec", "kubectl-e2e", "-c", "app", "--", "sh", "-c", "mkdir -p /tmp/www && echo hello from httpd > /tmp/www/index.html && httpd -p 127.0.0.1:"+port+" -h /tmp/www")
	for _, k := range kubectlBinaries(t) {
		for _, p := range protocols {
			name := k.name + " over " + p.name
			local, stop := c.portForward(t, k, p.env, port)
			resp, err := (&http.Client{Timeout: 30 * time.Second}).Get("http://127.0.0.1:" + local + "/index.html")
			if err != nil {
				t.Errorf("%s: GET through the forward: %v", name, err)
				stop()
				continue
			}
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil || resp.StatusCode != http.StatusOK || string(body) != "hello from httpd\n" {
				t.Errorf("%s: GET through the forward: %d %q, %v", name, resp.StatusCode, body, err)
			}
			stop()
		}
	}
}

// portForward runs kubectl port-forward pod/kubectl-e2e :port and answers the local port it listens on
// and how to stop it.
func (c *kubectlCluster) portForward(t *testing.T, k kubectlBinary, env []string, port string) (string, func()) {
	t.Helper()
	cmd := exec.Command(k.path, "--kubeconfig", c.kubeconfig, "port-forward", "pod/kubectl-e2e", ":"+port)
	cmd.Env = append(os.Environ(), env...)
	stderr := &syncbuf.Buffer{}
	cmd.Stderr = stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stop := func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }
	forwarding := regexp.MustCompile(`^Forwarding from 127\.0\.0\.1:(\d+) -> ` + port + `$`)
	lines := bufio.NewScanner(stdout)
	for lines.Scan() {
		if m := forwarding.FindStringSubmatch(lines.Text()); m != nil {
			go func() { _, _ = io.Copy(io.Discard, stdout) }()
			return m[1], stop
		}
	}
	stop()
	t.Fatalf("%s port-forward pod/kubectl-e2e :%s: no Forwarding line; stderr:\n%s", k.name, port, stderr.String())
	return "", nil
}

// kubectl attach -i through orch-apiserver on containerd, with each kubectl: the lines piped in
// reach the shell container's standard input and its answers come back; its input closed
// (stdinOnce), the container ends and kubectl with it.
func TestKubectlAttachOnContainerd(t *testing.T) {
	c := startKubectlCluster(t, onContainerd(t))
	for i, k := range kubectlBinaries(t) {
		apptest.WaitWithin(t, clock.New(), fmt.Sprintf("the shell's attempt %d Running", i), time.Minute, func() (bool, error) {
			s, err := c.containerStatus("shell")
			return err == nil && s.State.Running != nil && s.RestartCount == int32(i), fmt.Errorf("%+v, %v", s, err)
		})
		r := c.run(t, k, nil, strings.NewReader("one\ntwo\nthree\n"), "attach", "-i", "kubectl-e2e", "-c", "shell")
		if string(r.stdout) != "got: one\ngot: two\ngot: three\n" {
			t.Errorf("%s: attach -i with three lines piped: %q, exit %d, stderr %q", k.name, r.stdout, r.code, r.stderr)
		}
	}
}

// kubectl debug -it --target=app through orch-apiserver on containerd, with each kubectl: the
// ephemeral container's shell, on a terminal, sees the target's sleep among its processes (one
// process namespace), and once it exits its status is in ephemeralContainerStatuses.
func TestKubectlDebugOnContainerd(t *testing.T) {
	c := startKubectlCluster(t, onContainerd(t))
	for i, k := range kubectlBinaries(t) {
		name := fmt.Sprintf("debugger-%d", i)
		screen, code := c.onTerminal(t, k, nil, func(screen *syncbuf.Buffer, typeIn func(string)) {
			waitShown(t, screen, "If you don't see a command prompt, try pressing enter.")
			typeIn("ps -o pid,args; exit 3\r")
		}, "debug", "-it", "kubectl-e2e", "--image="+e2eImage, "--target=app", "-c", name, "--", "sh")
		if !strings.Contains(screen, `Targeting container "app"`) || !regexp.MustCompile(`\d+ sleep 3600`).MatchString(screen) || code != 0 {
			t.Errorf("%s: debug -it --target=app, typed ps: exit %d, the terminal showed %q; want the target's sleep 3600", k.name, code, screen)
		}
		apptest.WaitWithin(t, clock.New(), name+" terminated in ephemeralContainerStatuses", 30*time.Second, func() (bool, error) {
			p, err := c.client.CoreV1().Pods("default").Get(context.Background(), "kubectl-e2e", metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			for _, s := range p.Status.EphemeralContainerStatuses {
				if s.Name == name {
					return s.State.Terminated != nil && s.State.Terminated.ExitCode == 3, fmt.Errorf("%+v", s.State)
				}
			}
			return false, fmt.Errorf("no status of %s among %+v", name, p.Status.EphemeralContainerStatuses)
		})
	}
}

// containerStatus answers kubectl-e2e's status of the named container.
func (c *kubectlCluster) containerStatus(name string) (corev1.ContainerStatus, error) {
	p, err := c.client.CoreV1().Pods("default").Get(context.Background(), "kubectl-e2e", metav1.GetOptions{})
	if err != nil {
		return corev1.ContainerStatus{}, err
	}
	for _, s := range p.Status.ContainerStatuses {
		if s.Name == name {
			return s, nil
		}
	}
	return corev1.ContainerStatus{}, fmt.Errorf("no status of %s", name)
}

// Sizes of the byte-exact streams.
const (
	execBytes        = 16 << 20  // exec's output
	portForwardBytes = 256 << 20 // echoed through a port-forward, each way
)

// seqOutput is what `seq 1 2236040` writes, 16 MiB exactly: every line another number, so lost,
// doubled or reordered bytes change it.
var seqOutput = sync.OnceValue(func() []byte {
	var b bytes.Buffer
	for i := 1; i <= 2236040; i++ {
		fmt.Fprintf(&b, "%d\n", i)
	}
	if b.Len() != execBytes {
		panic(fmt.Sprintf("seq 1 2236040 is %d bytes", b.Len()))
	}
	return b.Bytes()
})

// kubectl exec streaming 16 MiB of known output, and kubectl port-forward echoing 256 MiB of
// pseudo-random bytes both ways, through orch-apiserver on containerd (busybox's seq and nc -e cat
// in the pod), with each kubectl over each protocol: every byte arrives, once and in order.
func TestKubectlStreamBytesOnContainerd(t *testing.T) {
	c := startKubectlCluster(t, onContainerd(t))
	port := apptest.FreePort(t) // the pod is on the host's network
	c.must(t, kubectlBinaries(t)[0], "exec", "kubectl-e2e", "-c", "app", "--", "sh", "-c", "nc -ll -p "+port+" -e cat </dev/null >/dev/null 2>&1 &")
	checkStreamBytes(t, c, port, "seq", "1", "2236040")
}

// The byte-exact streams of TestKubectlStreamBytesOnContainerd on fakecri, its exec answering the
// same 16 MiB from a script rule and its echo responder on port 7 answering the port-forward.
func TestKubectlStreamBytesOnFakecri(t *testing.T) {
	_, sock := fakecritest.Start(t, fakecri.Options{Seed: 1, Script: &script.Script{
		Node:   script.NodeScript{RuntimeName: "containerd", SandboxImage: e2ePauseImage, CgroupDriver: "cgroupfs", PreloadImages: []string{e2eImage}},
		Faults: []script.FaultRule{{Method: "RuntimeConfig", Error: &script.FaultError{Code: "Unimplemented"}}},
		Exec:   []script.ExecRule{{Command: "seq16m", Stdout: string(seqOutput())}},
		Ports:  []script.PortRule{{Port: 7, Echo: true}},
	}})
	checkStreamBytes(t, startKubectlCluster(t, sock), "7", "seq16m")
}

// checkStreamBytes runs argv in kubectl-e2e's app container, which must write seqOutput, and echoes
// portForwardBytes through a port-forward to echoPort, with each kubectl over each protocol.
func checkStreamBytes(t *testing.T, c *kubectlCluster, echoPort string, argv ...string) {
	t.Helper()
	want := sha256.Sum256(seqOutput())
	for _, k := range kubectlBinaries(t) {
		for _, p := range protocols {
			name := k.name + " over " + p.name
			began := time.Now()
			r := c.run(t, k, p.env, nil, append([]string{"exec", "kubectl-e2e", "-c", "app", "--"}, argv...)...)
			if r.code != 0 || len(r.stdout) != execBytes || sha256.Sum256(r.stdout) != want {
				t.Errorf("%s: exec of %d known bytes: %d bytes, exit %d, stderr %q; want them whole and in order", name, execBytes, len(r.stdout), r.code, r.stderr)
			} else {
				t.Logf("%s: exec: %d bytes unchanged in %v", name, execBytes, time.Since(began).Round(time.Millisecond))
			}

			local, stop := c.portForward(t, k, p.env, echoPort)
			began = time.Now()
			sent, got, n, err := echoThrough("127.0.0.1:"+local, portForwardBytes)
			stop()
			if err != nil || n != portForwardBytes || sent != got {
				t.Errorf("%s: port-forward echo of %d bytes: %d back, equal %v, %v", name, portForwardBytes, n, sent == got, err)
			} else {
				t.Logf("%s: port-forward: %d bytes each way unchanged in %v", name, n, time.Since(began).Round(time.Millisecond))
			}
		}
	}
}

// echoThrough writes size pseudo-random bytes to addr while reading what comes back, and answers
// the checksums of both and how many bytes came back.
func echoThrough(addr string, size int) (sent, got [sha256.Size]byte, n int64, err error) {
	conn, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		return sent, got, 0, err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(5 * time.Minute))
	written := make(chan error, 1)
	go func() {
		h := sha256.New()
		prng := mrand.NewChaCha8([32]byte{29})
		chunk := make([]byte, 1<<20)
		for left := size; left > 0; left -= len(chunk) {
			_, _ = prng.Read(chunk)
			h.Write(chunk)
			if _, err := conn.Write(chunk); err != nil {
				written <- err
				return
			}
		}
		copy(sent[:], h.Sum(nil))
		written <- nil
	}()
	h := sha256.New()
	n, err = io.CopyN(h, conn, int64(size))
	copy(got[:], h.Sum(nil))
	if werr := <-written; err == nil {
		err = werr
	}
	return sent, got, n, err
}
