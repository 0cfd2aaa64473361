package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
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

// peerToken is the bearer token orchload gives itself on Kubernetes' API server.
const peerToken = "orchload-token"

// serveEtcd runs an embedded etcd (orch-apiserver's, with etcd's defaults as Kubernetes runs it)
// under dir until SIGTERM, printing its client URL: Kubernetes' API server runs on it as a process of
// its own, so its memory and CPU can be read beside the API server's.
func serveEtcd(dir string) error {
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

// startPeer starts Kubernetes' kube-apiserver (bin) on an etcd of its own, as a peer to measure
// beside orch-apiserver: events in events.k8s.io, a token of its token file, its self-signed
// certificate not verified (loopback only).
func startPeer(ctx context.Context, bin string) (*process, target, error) {
	dir, err := os.MkdirTemp("", "orchload-peer-")
	if err != nil {
		return nil, target{}, err
	}
	etcd, endpoint, err := startEtcd(dir)
	if err != nil {
		return nil, target{}, errors.Join(err, os.RemoveAll(dir))
	}
	fail := func(err error) (*process, target, error) {
		etcd.stop()
		return nil, target{}, errors.Join(err, os.RemoveAll(dir))
	}
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return fail(err)
	}
	saKey := filepath.Join(dir, "sa.key")
	if err := os.WriteFile(saKey, pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}), 0o600); err != nil {
		return fail(err)
	}
	tokens := filepath.Join(dir, "tokens.csv")
	if err := os.WriteFile(tokens, []byte(peerToken+",orchload,orchload-1,\"system:masters\"\n"), 0o600); err != nil {
		return fail(err)
	}
	port, err := freeport.Get()
	if err != nil {
		return fail(err)
	}
	p := &process{dir: dir, logPath: filepath.Join(dir, "kube-apiserver.log"), done: make(chan struct{}), etcd: etcd}
	logFile, err := os.Create(p.logPath)
	if err != nil {
		return fail(err)
	}
	defer logFile.Close()
	const issuer = "https://kubernetes.default.svc.cluster.local"
	p.cmd = exec.Command(bin, "--bind-address=127.0.0.1", "--secure-port="+strconv.Itoa(port),
		"--etcd-servers="+endpoint, "--cert-dir="+filepath.Join(dir, "pki"),
		"--token-auth-file="+tokens, "--authorization-mode=AlwaysAllow",
		"--service-account-issuer="+issuer, "--service-account-key-file="+saKey,
		"--service-account-signing-key-file="+saKey, "--api-audiences="+issuer)
	p.cmd.Stdout, p.cmd.Stderr = logFile, logFile
	if err := p.cmd.Start(); err != nil {
		return fail(fmt.Errorf("--kube-apiserver-bin: %w", err))
	}
	go func() { _ = p.cmd.Wait(); close(p.done) }()
	t := target{url: "https://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), group: "events.k8s.io", token: peerToken}
	if t.tls, err = tlsConfig("", true); err != nil {
		return nil, t, p.failed(err)
	}
	t.namespace = func(ctx context.Context, ns string) error { return createNamespace(ctx, t, ns) }
	if err := waitReady(ctx, t, 2*time.Minute); err != nil {
		return nil, t, p.failed(err)
	}
	t.cpu, t.rss = p.cpuTime, p.rssMiB
	return p, t, nil
}

// startEtcd starts this binary as an etcd under dir and reads its client URL.
func startEtcd(dir string) (*process, string, error) {
	p, endpoint, err := startSelf(filepath.Join(dir, "etcd"), filepath.Join(dir, "etcd.log"), "--serve-etcd", filepath.Join(dir, "etcd"))
	if err != nil {
		return nil, "", fmt.Errorf("etcd: %w", err)
	}
	return p, endpoint, nil
}

// startSelf runs this tool again with args, its stderr to logPath, and answers the first line it
// prints: where it serves.
func startSelf(dir, logPath string, args ...string) (*process, string, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, "", err
	}
	p := &process{dir: dir, logPath: logPath, done: make(chan struct{})}
	logFile, err := os.Create(p.logPath)
	if err != nil {
		return nil, "", err
	}
	defer logFile.Close()
	p.cmd = exec.Command(self, args...)
	out, err := p.cmd.StdoutPipe()
	if err != nil {
		return nil, "", err
	}
	p.cmd.Stderr = logFile
	if err := p.cmd.Start(); err != nil {
		return nil, "", err
	}
	go func() { _ = p.cmd.Wait(); close(p.done) }()
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
	return nil, "", p.failed(errors.New("it did not say where it serves"))
}

// createNamespace creates ns unless it exists.
func createNamespace(ctx context.Context, t target, ns string) error {
	c := t.newClient()
	defer c.CloseIdleConnections()
	body := fmt.Sprintf(`{"apiVersion":"v1","kind":"Namespace","metadata":{"name":%q}}`, ns)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.url+"/api/v1/namespaces", bytes.NewReader([]byte(body)))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusCreated && resp.StatusCode != http.StatusConflict {
		return fmt.Errorf("creating namespace %s: %d %s", ns, resp.StatusCode, msg)
	}
	return nil
}
