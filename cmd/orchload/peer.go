package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"

	"orch.io/orch/cmd/internal/kubepeer"
)

// startPeer starts Kubernetes' kube-apiserver (bin) on an etcd of its own, as a peer to measure
// beside orch-apiserver: events in events.k8s.io, a token of its token file, its self-signed
// certificate not verified (loopback only).
func startPeer(ctx context.Context, bin string) (*process, target, error) {
	dir, err := os.MkdirTemp("", "orchload-peer-")
	if err != nil {
		return nil, target{}, err
	}
	peer, err := kubepeer.Start(ctx, bin, dir, "--serve-etcd", false)
	if err != nil {
		return nil, target{}, errors.Join(fmt.Errorf("--kube-apiserver-bin: %w", err), os.RemoveAll(dir))
	}
	p := &process{Process: peer.APIServer, etcd: &process{Process: peer.Etcd}}
	t := target{url: peer.URL, group: "events.k8s.io", token: kubepeer.Token}
	if t.tls, err = tlsConfig("", true); err != nil {
		return nil, t, p.failed(err)
	}
	t.namespace = func(ctx context.Context, ns string) error { return createNamespace(ctx, t, ns) }
	t.cpu, t.rss = p.cpuTime, p.rssMiB
	return p, t, nil
}

// startSelf runs this tool again with args, its stderr to logPath, and answers the first line it
// prints: where it serves.
func startSelf(dir, logPath string, args ...string) (*process, string, error) {
	p, endpoint, err := kubepeer.StartSelf(dir, logPath, args...)
	if err != nil {
		return nil, "", err
	}
	return &process{Process: p}, endpoint, nil
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
