package app

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/transport/spdy"
	"k8s.io/client-go/util/exec"

	"orch.io/orch/components/apiserver/nodeproxy"
	"orch.io/orch/components/apiserver/server"
	"orch.io/orch/components/authn"
	"orch.io/orch/components/certs/certstest"
	"orch.io/orch/components/orchlet/app/apptest"
	"orch.io/orch/components/orchlet/host"
	"orch.io/orch/fakecri"
	"orch.io/orch/fakecri/fakecritest"
	"orch.io/orch/fakecri/script"
)

// streamsCluster runs orch-apiserver and an agent in API-server mode with its HTTPS server on,
// on a fakecri with script, and a running pod default/web; it answers the API's REST config. The
// server reaches the node by its InternalIP (127.0.0.1), and refuses create pods/exec to the
// user "viewer" (the token "viewer-token"), as an RBAC role granting only get pods would.
func streamsCluster(t *testing.T, script *script.Script) (*rest.Config, kubernetes.Interface) {
	t.Helper()
	cfg, client, _ := lockableCluster(t, script, false)
	return cfg, client
}

// lockableCluster is streamsCluster with, when lockedDown, the agent configured as make run
// configures it: anonymous requests refused, tokens and authorization asked of the API server
// (Webhook), client certificates of a CA trusted, the API server presenting one. It answers the
// agent's HTTPS address too.
func lockableCluster(t *testing.T, script *script.Script, lockedDown bool) (*rest.Config, kubernetes.Interface, string) {
	t.Helper()
	nc := nodeproxy.Config{PreferredAddressTypes: []corev1.NodeAddressType{corev1.NodeInternalIP}, Timeout: 5 * time.Second}
	var agentArgs []string
	if lockedDown {
		dir := t.TempDir()
		ca := certstest.NewCA(t, "orchlet-client-ca")
		caFile := filepath.Join(dir, "orchlet-client-ca.crt")
		certstest.WriteFile(t, caFile, ca.PEM)
		nc.CertFile, nc.KeyFile = ca.Client(t, "orch-apiserver-orchlet-client", "system:masters").WriteFiles(t, dir, "orch-apiserver-orchlet-client")
		agentArgs = []string{"--anonymous-auth=false", "--authentication-token-webhook", "--authorization-mode=Webhook", "--client-ca-file=" + caFile}
	}
	nodes, err := nodeproxy.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig, client, _ := apiServer(t, nil, func(c *server.Config) {
		c.Nodes = nodes
		c.Authenticator = apptest.TokenUsers(map[string]authn.UserInfo{"viewer-token": {Name: "viewer"}})
		c.Authorizer = apptest.OnlyGetPods("viewer")
	})
	_, sock := fakecritest.Start(t, fakecri.Options{Seed: 1, Script: script})
	port := apptest.FreePort(t)
	o := parse(t, append([]string{"--orchconfig=" + kubeconfig, "--hostname-override=node-a", "--node-ip=127.0.0.1",
		"--container-runtime-endpoint=" + sock, "--read-only-port=0", "--healthz-port=0",
		"--address=127.0.0.1", "--port=" + port, "--cert-dir=" + t.TempDir()}, agentArgs...)...)
	cancel, done := runAsync(o, host.NewFake(), clock.New())
	t.Cleanup(func() {
		cancel()
		if err := wait(t, done); err != nil {
			t.Error(err)
		}
	})
	ctx := context.Background()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec:       corev1.PodSpec{NodeName: "node-a", Containers: []corev1.Container{{Name: "app", Image: "busybox:1.36"}}},
	}
	if _, err := client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the pod Running", func() (bool, error) {
		p, err := client.CoreV1().Pods("default").Get(ctx, "web", metav1.GetOptions{})
		return err == nil && p.Status.Phase == corev1.PodRunning, err
	})
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	return cfg, client, "127.0.0.1:" + port
}

// execThrough runs argv in web's app container through orch-apiserver's pods/exec, over SPDY or
// over WebSocket (v5.channel.k8s.io, which the server translates to SPDY toward the node), as
// kubectl exec does.
func execThrough(t *testing.T, cfg *rest.Config, websocket bool, stdin string, argv ...string) (string, string, error) {
	t.Helper()
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	req := client.CoreV1().RESTClient().Post().Resource("pods").Namespace("default").Name("web").SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{Container: "app", Command: argv, Stdin: stdin != "", Stdout: true, Stderr: true}, scheme.ParameterCodec)
	return fakecritest.Stream(cfg, req.URL(), websocket, stdin)
}

// kubectl's exec, logs and nodes/proxy through orch-apiserver reach the orchlet and the runtime:
// output whole and in order over either protocol, stdin, stderr and exit codes carried, and a
// user allowed only get pods refused pods/exec with Kubernetes' 403.
func TestStreamsThroughTheAPIServer(t *testing.T) {
	cfg, client := streamsCluster(t, &script.Script{
		Exec: []script.ExecRule{{Command: "fail*", ExitCode: 2, Stderr: "boom"}},
		Containers: []script.ContainerRule{{Match: script.ContainerMatch{Name: "app"},
			Logs: &script.LogSpec{Lines: []string{"line {n}"}, Every: script.Duration(10 * time.Millisecond), Count: 5}}},
	})
	// seq 1 2236040 writes 16 MiB exactly, every line another number: a byte lost, doubled or
	// moved changes the checksum.
	var want bytes.Buffer
	for i := 1; i <= 2236040; i++ {
		want.WriteString(strconv.Itoa(i))
		want.WriteByte('\n')
	}
	if want.Len() != 16<<20 {
		t.Fatalf("the sequence is %d bytes", want.Len())
	}
	for _, ws := range []bool{false, true} {
		name := map[bool]string{false: "SPDY", true: "WebSocket"}[ws]
		stdout, _, err := execThrough(t, cfg, ws, "", "seq", "1", "2236040")
		if err != nil || sha256.Sum256([]byte(stdout)) != sha256.Sum256(want.Bytes()) {
			t.Errorf("%s: seq 1 2236040: %d bytes, %v; want the %d bytes of the sequence", name, len(stdout), err, want.Len())
		}
		if stdout, _, err := execThrough(t, cfg, ws, "typed in\n", "cat"); err != nil || stdout != "typed in\n" {
			t.Errorf("%s: cat of stdin = %q, %v", name, stdout, err)
		}
		_, stderr, err := execThrough(t, cfg, ws, "", "fail", "now")
		var exit exec.CodeExitError
		if !errors.As(err, &exit) || exit.Code != 2 || stderr != "boom" {
			t.Errorf("%s: fail now: stderr %q, %v; want exit code 2 and stderr boom", name, stderr, err)
		}
	}

	ctx := context.Background()
	waitFor(t, "the container's five lines in its log", func() (bool, error) {
		logs, err := client.CoreV1().Pods("default").GetLogs("web", &corev1.PodLogOptions{}).DoRaw(ctx)
		return string(logs) == "line 1\nline 2\nline 3\nline 4\nline 5\n", fmt.Errorf("%q, %v", logs, err)
	})
	logs, err := client.CoreV1().Pods("default").GetLogs("web", &corev1.PodLogOptions{TailLines: ptr(int64(2)), Timestamps: true}).DoRaw(ctx)
	if lines := strings.Split(strings.TrimSpace(string(logs)), "\n"); err != nil || len(lines) != 2 || !strings.HasSuffix(lines[1], " line 5") {
		t.Errorf("logs --tail=2 --timestamps: %q, %v", logs, err)
	}
	// Followed, the lines arrive while the stream stays open.
	followCtx, stopFollowing := context.WithTimeout(ctx, 30*time.Second)
	follow, err := client.CoreV1().Pods("default").GetLogs("web", &corev1.PodLogOptions{Follow: true}).Stream(followCtx)
	if err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len("line 1\nline 2\nline 3\nline 4\nline 5\n"))
	if _, err := io.ReadFull(follow, got); err != nil || string(got) != "line 1\nline 2\nline 3\nline 4\nline 5\n" {
		t.Errorf("logs -f: %q, %v", got, err)
	}
	stopFollowing()
	follow.Close()
	for _, tc := range []struct {
		opts *corev1.PodLogOptions
		is   func(error) bool
		want string
	}{
		{&corev1.PodLogOptions{Container: "sidecar"}, apierrors.IsBadRequest, "container sidecar is not valid for pod web"},
		{&corev1.PodLogOptions{TailLines: ptr(int64(-1))}, apierrors.IsInvalid, "tailLines: Invalid value: -1: must be greater than or equal to 0"},
		{&corev1.PodLogOptions{Previous: true}, apierrors.IsNotFound, ""},
	} {
		if _, err := client.CoreV1().Pods("default").GetLogs("web", tc.opts).Stream(ctx); !tc.is(err) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("logs %+v: %v, want %q", tc.opts, err, tc.want)
		}
	}

	body, err := client.CoreV1().RESTClient().Get().AbsPath("/api/v1/nodes/node-a/proxy/pods").DoRaw(ctx)
	if err != nil || !strings.Contains(string(body), `"name":"web"`) {
		t.Errorf("nodes/proxy/pods: %v, %.200s", err, body)
	}
	if body, err := client.CoreV1().RESTClient().Get().AbsPath("/api/v1/nodes/node-a/proxy/healthz").DoRaw(ctx); err != nil || string(body) != "ok" {
		t.Errorf("nodes/proxy/healthz: %q, %v", body, err)
	}

	viewer := rest.CopyConfig(cfg)
	viewer.BearerToken = "viewer-token"
	if _, err := kubernetes.NewForConfigOrDie(viewer).CoreV1().Pods("default").Get(ctx, "web", metav1.GetOptions{}); err != nil {
		t.Fatalf("the viewer's get pods: %v", err)
	}
	_, _, err = execThrough(t, viewer, false, "", "true")
	if err == nil || !strings.Contains(err.Error(), `pods "web" is forbidden: User "viewer" cannot create resource "pods/exec" in API group "" in the namespace "default"`) {
		t.Errorf("the viewer's exec: %v, want Kubernetes' 403", err)
	}
}

// kubectl attach -i through orch-apiserver, over SPDY and over WebSocket, reaches the shell a
// container runs on its standard input.
func TestAttachThroughTheAPIServer(t *testing.T) {
	cfg, client := streamsCluster(t, nil)
	ctx := context.Background()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "shell", Namespace: "default"},
		Spec: corev1.PodSpec{NodeName: "node-a", Containers: []corev1.Container{{Name: "sh", Image: "busybox:1.36",
			Command: []string{"sh"}, Stdin: true, StdinOnce: true}}},
	}
	if _, err := client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the shell Running", func() (bool, error) {
		p, err := client.CoreV1().Pods("default").Get(ctx, "shell", metav1.GetOptions{})
		return err == nil && p.Status.Phase == corev1.PodRunning, err
	})
	req := client.CoreV1().RESTClient().Post().Resource("pods").Namespace("default").Name("shell").SubResource("attach").
		VersionedParams(&corev1.PodAttachOptions{Container: "sh", Stdin: true, Stdout: true, Stderr: true}, scheme.ParameterCodec)
	for _, ws := range []bool{false, true} {
		stdout, stderr, err := fakecritest.Stream(cfg, req.URL(), ws, "echo -n hello\n")
		if err != nil || stdout != "hello" {
			t.Errorf("websocket %v: attach: %q (stderr %q), %v", ws, stdout, stderr, err)
		}
	}
}

// kubectl port-forward through orch-apiserver, over SPDY and over SPDY tunnelled in WebSocket:
// bytes unchanged both ways.
func TestPortForwardThroughTheAPIServer(t *testing.T) {
	cfg, client := streamsCluster(t, &script.Script{Ports: []script.PortRule{{Port: 7, Echo: true}}})
	u := client.CoreV1().RESTClient().Post().Resource("pods").Namespace("default").Name("web").SubResource("portforward").URL()
	for _, ws := range []bool{false, true} {
		transport, upgrader, err := spdy.RoundTripperFor(cfg)
		if err != nil {
			t.Fatal(err)
		}
		spdyDialer := spdy.NewDialer(upgrader, &http.Client{Transport: transport}, http.MethodPost, u)
		stop, ready := make(chan struct{}), make(chan struct{})
		var pf *portforward.PortForwarder
		if ws {
			wsDialer, err := portforward.NewSPDYOverWebsocketDialer(u, cfg)
			if err != nil {
				t.Fatal(err)
			}
			pf, err = portforward.New(wsDialer, []string{"0:7"}, stop, ready, io.Discard, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
		} else {
			pf, err = portforward.New(spdyDialer, []string{"0:7"}, stop, ready, io.Discard, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
		}
		failed := make(chan error, 1)
		go func() { failed <- pf.ForwardPorts() }()
		select {
		case <-ready:
		case err := <-failed:
			t.Fatalf("websocket %v: port-forward: %v", ws, err)
		}
		ports, err := pf.GetPorts()
		if err != nil {
			t.Fatal(err)
		}
		conn, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", ports[0].Local))
		if err != nil {
			t.Fatal(err)
		}
		data := bytes.Repeat([]byte("0123456789abcdef"), 1<<20) // 16 MiB
		go conn.Write(data)
		got := make([]byte, len(data))
		if _, err := io.ReadFull(conn, got); err != nil || !bytes.Equal(got, data) {
			t.Errorf("websocket %v: 16 MiB echoed through the forward: %v, equal %v", ws, err, bytes.Equal(got, data))
		}
		conn.Close()
		close(stop)
	}
}

// Locked down as make run configures it, the agent still serves exec and logs through the API
// server, whose client certificate it trusts and whose authorization it asks, and refuses a
// request without credentials or with a certificate of another authority.
func TestLockedDownAgentThroughTheAPIServer(t *testing.T) {
	cfg, _, agent := lockableCluster(t, nil, true)
	if stdout, _, err := execThrough(t, cfg, true, "", "echo", "hello"); err != nil || stdout != "hello\n" {
		t.Fatalf("exec through the API server: %q, %v", stdout, err)
	}
	other := certstest.NewCA(t, "someone-else").Client(t, "intruder")
	otherCert, err := tls.X509KeyPair(other.CertPEM, other.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	for name, certs := range map[string][]tls.Certificate{"no credentials": nil, "another authority's certificate": {otherCert}} {
		client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true, Certificates: certs}}}
		resp, err := client.Post("https://"+agent+"/run/default/web/app?cmd=echo%20pwned", "", nil)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized || strings.Contains(string(body), "pwned") {
			t.Errorf("%s: %d %q, want 401", name, resp.StatusCode, body)
		}
	}
}

func ptr[T any](v T) *T { return &v }
