// Package kubepeer starts Kubernetes' kube-apiserver on an etcd of its own, as the peer orch's
// tools measure orch-apiserver beside (orchload's benchmarks, orchchaos' exhaustion campaign).
package kubepeer

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"orch.io/orch/components/apiserver/storage/etcd3"
	"orch.io/orch/components/freeport"
)

// Token is a bearer token of the peer's token file, of a user in system:masters.
const Token = "orchload-token"

// Process is a child process this package started, its output in a log file.
type Process struct {
	Cmd     *exec.Cmd
	Dir     string // removed by Stop
	LogPath string
	Done    chan struct{} // closed once it has exited
}

// End ends the process: SIGTERM, then SIGKILL after 15s.
func (p *Process) End() {
	_ = p.Cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.Done:
	case <-time.After(15 * time.Second):
		_ = p.Cmd.Process.Kill()
		<-p.Done
	}
}

// Stop ends the process and removes its directory.
func (p *Process) Stop() {
	p.End()
	_ = os.RemoveAll(p.Dir)
}

// LogTail is the last n lines of the process's log.
func (p *Process) LogTail(n int) string {
	b, _ := os.ReadFile(p.LogPath)
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// ServeEtcd runs an embedded etcd (orch-apiserver's, with etcd's defaults as Kubernetes runs it)
// under dir until SIGTERM, printing its client URL: the peer runs on it as a process of its own, so
// that its memory and CPU can be read beside the API server's. The tools run it as themselves with
// a flag of their own (Start's etcdFlag).
func ServeEtcd(dir string) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	e, err := etcd3.StartEmbeddedEtcdDefaults(ctx, dir)
	if err != nil {
		return err
	}
	defer e.Close()
	fmt.Println(e.Endpoint)
	<-ctx.Done()
	return nil
}

// Peer is a running kube-apiserver and its etcd.
type Peer struct {
	APIServer, Etcd *Process
	URL             string // https://127.0.0.1:<port>
	// CAFile is the peer's self-signed serving certificate (for 127.0.0.1) and its authority, in
	// <dir>/pki/apiserver.crt, where orch-apiserver writes its own under its data directory.
	CAFile string
}

// Start starts Kubernetes' kube-apiserver (bin) on 127.0.0.1 with its files under dir (made if
// need be), on an etcd that is this program run again with etcdFlag and a directory (ServeEtcd),
// and waits up to two minutes for its /readyz. It authorizes with AlwaysAllow, which kube-apiserver
// serves to authenticated users only (it refuses anonymous requests with 401); with anonymous it
// authorizes with RBAC instead and binds cluster-admin to every unauthenticated user, so that the
// same requests without credentials that orch-apiserver serves are served, in priority and
// fairness' global-default level as any client's (a system:masters token's are exempt), and turns
// off UnauthenticatedHTTP2DOSMitigation, which closes an anonymous client's HTTP/2 connection after
// each request (the probe would pay a TLS handshake on every ask where orch-apiserver's keeps its
// connection; Kubernetes lets a server on a private network turn it off).
func Start(ctx context.Context, bin, dir, etcdFlag string, anonymous bool) (*Peer, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	etcd, endpoint, err := StartSelf(filepath.Join(dir, "etcd"), filepath.Join(dir, "etcd.log"), etcdFlag, filepath.Join(dir, "etcd"))
	if err != nil {
		return nil, fmt.Errorf("etcd: %w", err)
	}
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		etcd.Stop()
		return nil, err
	}
	saKey := filepath.Join(dir, "sa.key")
	tokens := filepath.Join(dir, "tokens.csv")
	port, err := freeport.Get()
	if err == nil {
		err = os.WriteFile(saKey, pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}), 0o600)
	}
	if err == nil {
		err = os.WriteFile(tokens, []byte(Token+",orchload,orchload-1,\"system:masters\"\n"), 0o600)
	}
	var logFile *os.File
	if err == nil {
		logFile, err = os.Create(filepath.Join(dir, "kube-apiserver.log"))
	}
	if err != nil {
		etcd.Stop()
		return nil, err
	}
	defer logFile.Close()
	const issuer = "https://kubernetes.default.svc.cluster.local"
	authorization := []string{"--authorization-mode=AlwaysAllow"}
	if anonymous {
		authorization = []string{"--authorization-mode=RBAC", "--feature-gates=UnauthenticatedHTTP2DOSMitigation=false"}
	}
	p := &Peer{
		APIServer: &Process{Dir: dir, LogPath: logFile.Name(), Done: make(chan struct{})},
		Etcd:      etcd,
		URL:       "https://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
		CAFile:    filepath.Join(dir, "pki", "apiserver.crt"),
	}
	args := append([]string{"--bind-address=127.0.0.1", "--secure-port=" + strconv.Itoa(port),
		"--etcd-servers=" + endpoint, "--cert-dir=" + filepath.Join(dir, "pki"),
		"--token-auth-file=" + tokens,
		"--service-account-issuer=" + issuer, "--service-account-key-file=" + saKey,
		"--service-account-signing-key-file=" + saKey, "--api-audiences=" + issuer}, authorization...)
	p.APIServer.Cmd = exec.Command(bin, args...)
	p.APIServer.Cmd.Stdout, p.APIServer.Cmd.Stderr = logFile, logFile
	if err := p.APIServer.Cmd.Start(); err != nil {
		etcd.Stop()
		return nil, fmt.Errorf("kube-apiserver %s: %w", bin, err)
	}
	go func() { _ = p.APIServer.Cmd.Wait(); close(p.APIServer.Done) }()
	if err := p.waitReady(ctx, 2*time.Minute); err != nil {
		return nil, p.Failed(err)
	}
	if anonymous {
		if err := p.admitAnonymous(ctx); err != nil {
			return nil, p.Failed(err)
		}
	}
	return p, nil
}

// anonymousAdmin binds cluster-admin to every request without credentials.
const anonymousAdmin = `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRoleBinding","metadata":{"name":"anonymous-admin"},` +
	`"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"cluster-admin"},` +
	`"subjects":[{"apiGroup":"rbac.authorization.k8s.io","kind":"Group","name":"system:unauthenticated"}]}`

// admitAnonymous creates anonymousAdmin with the token and waits until an anonymous list of
// namespaces is served (the RBAC authorizer reads bindings from its informer's cache).
func (p *Peer) admitAnonymous(ctx context.Context) error {
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	defer c.CloseIdleConnections()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, p.URL+"/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", strings.NewReader(anonymousAdmin))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+Token)
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	msg, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		return fmt.Errorf("binding cluster-admin to anonymous users: %d %s", resp.StatusCode, msg)
	}
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, p.URL+"/api/v1/namespaces", nil)
		resp, err := c.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			return nil
		}
	}
	return errors.New("anonymous requests still refused 30s after binding cluster-admin to them")
}

// Stop ends kube-apiserver, then its etcd, and removes their files.
func (p *Peer) Stop() {
	p.APIServer.End()
	p.Etcd.Stop()
	_ = os.RemoveAll(p.APIServer.Dir)
}

// Failed stops the peer and returns err with the tail of its log.
func (p *Peer) Failed(err error) error {
	tail := p.APIServer.LogTail(20)
	p.Stop()
	return fmt.Errorf("%w; kube-apiserver's log:\n%s", err, tail)
}

// waitReady asks /readyz with the token every 100ms until it answers 200, the process ends or timeout passes;
// the certificate is not verified, as it may not be written yet (loopback only).
func (p *Peer) waitReady(ctx context.Context, timeout time.Duration) error {
	c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	defer c.CloseIdleConnections()
	deadline := time.Now().Add(timeout)
	last := errors.New("not asked")
	for time.Now().Before(deadline) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, p.URL+"/readyz", nil)
		req.Header.Set("Authorization", "Bearer "+Token) // anonymous requests are refused under AlwaysAllow
		resp, err := c.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("/readyz answered %d", resp.StatusCode)
		}
		last = err
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-p.APIServer.Done:
			return errors.New("kube-apiserver exited during start-up")
		case <-time.After(100 * time.Millisecond):
		}
	}
	return fmt.Errorf("%s not ready after %v: %w", p.URL, timeout, last)
}

// StartSelf runs this program again with args, its stderr to logPath, and answers the first line
// it prints: where it serves. Stop removes dir.
func StartSelf(dir, logPath string, args ...string) (*Process, string, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, "", err
	}
	p := &Process{Dir: dir, LogPath: logPath, Done: make(chan struct{})}
	logFile, err := os.Create(p.LogPath)
	if err != nil {
		return nil, "", err
	}
	defer logFile.Close()
	p.Cmd = exec.Command(self, args...)
	out, err := p.Cmd.StdoutPipe()
	if err != nil {
		return nil, "", err
	}
	p.Cmd.Stderr = logFile
	if err := p.Cmd.Start(); err != nil {
		return nil, "", err
	}
	go func() { _ = p.Cmd.Wait(); close(p.Done) }()
	lines := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(out).ReadString('\n')
		lines <- strings.TrimSpace(line)
		_, _ = io.Copy(io.Discard, out)
	}()
	select {
	case endpoint := <-lines:
		if endpoint != "" {
			return p, endpoint, nil
		}
	case <-time.After(time.Minute):
	}
	tail := p.LogTail(20)
	p.Stop()
	return nil, "", fmt.Errorf("it did not say where it serves; log:\n%s", tail)
}
