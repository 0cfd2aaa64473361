package conformance

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
	"orch.io/orch/components/freeport"
	"orch.io/orch/conformance/target"
)

// etcdSteps give a scenario an etcd of its own, which any API server of the target takes with
// --etcd-servers, and read what the server stored there: how encryption at rest is seen.
func etcdSteps() []StepDef {
	return []StepDef{
		{`^an etcd for the scenario$`, func(w *World) any { return w.startEtcd }},
		{`^the file "([^"]*)":$`, func(w *World) any { return w.writeScenarioFile }},
		{`^a pod "([^"]*)" is created$`, func(w *World) any { return w.createPod }},
		{`^etcd holds the (event|pod) "([^"]*)" stored with the prefix "([^"]*)"$`, func(w *World) any { return w.storedWithPrefix }},
	}
}

func (w *World) startEtcd() error {
	client, err := freeport.Get()
	if err != nil {
		return err
	}
	peer, err := freeport.Get()
	if err != nil {
		return err
	}
	cfg := embed.NewConfig()
	cfg.Dir = filepath.Join(w.dir, "etcd")
	cu := url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", client)}
	pu := url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", peer)}
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{cu}, []url.URL{cu}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{pu}, []url.URL{pu}
	cfg.InitialCluster = cfg.Name + "=" + pu.String()
	cfg.Logger = "zap"
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return err
	}
	w.cleanup = append(w.cleanup, e.Close)
	select {
	case <-e.Server.ReadyNotify():
	case <-time.After(target.CommandTimeout):
		return fmt.Errorf("the scenario's etcd did not become ready")
	}
	w.etcdURL = cu.String()
	return nil
}

// writeScenarioFile writes a file of the scenario, spelling {apiVersion} (of the configuration
// kinds), {group} (of the Event API) and the names SPEC.md leaves open the target's way.
func (w *World) writeScenarioFile(name, content string) error {
	v, err := w.t.Profile.ConfigAPIVersion()
	if err != nil && strings.Contains(content, "{apiVersion}") {
		return err
	}
	group := ""
	if w.t.Profile.APIServer != nil {
		group = w.t.Profile.APIServer.Group
	}
	content = strings.NewReplacer("{apiVersion}", v, "{group}", group, "{dir}", w.dir).Replace(w.t.Profile.Spell(content))
	path := filepath.Join(w.dir, name)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	return os.WriteFile(path, []byte(content), 0o600)
}

func (w *World) createPod(logical string) error {
	pod := map[string]any{
		"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]any{"name": w.name(logical)},
		"spec":     map[string]any{"containers": []any{map[string]any{"name": "app", "image": "busybox:1.36"}}},
	}
	if err := w.request("POST", "/api/v1/namespaces/"+w.namespace("")+"/pods", pod, "application/json"); err != nil {
		return err
	}
	if w.http.code != 201 {
		return fmt.Errorf("creating pod %s: %d %s", logical, w.http.code, w.http.body)
	}
	return nil
}

// storedWithPrefix finds the object's key under /registry (its layout is the server's own: any key
// of that resource ending in <namespace>/<name>) and checks the raw value's prefix.
func (w *World) storedWithPrefix(kind, logical, prefix string) error {
	if w.etcdURL == "" {
		return fmt.Errorf("start an etcd for the scenario first")
	}
	if strings.Contains(prefix, "{encryptionPrefix}") {
		p := w.t.Profile.APIServer.EncryptionPrefix
		if p == "" {
			return fmt.Errorf("profile %s: apiserver.encryptionPrefix is needed", w.t.Profile.Name)
		}
		prefix = strings.ReplaceAll(prefix, "{encryptionPrefix}", p)
	}
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{w.etcdURL}, DialTimeout: 5 * time.Second})
	if err != nil {
		return err
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), target.CommandTimeout)
	defer cancel()
	resp, err := c.Get(ctx, "/registry/", clientv3.WithPrefix())
	if err != nil {
		return err
	}
	suffix := "/" + w.namespace("") + "/" + w.name(logical)
	for _, kv := range resp.Kvs {
		key := string(kv.Key)
		if strings.HasSuffix(key, suffix) && strings.Contains(key, "/"+kind+"s/") {
			if !strings.HasPrefix(string(kv.Value), prefix) {
				return fmt.Errorf("%s is stored as %.40q..., want the prefix %q", key, kv.Value, prefix)
			}
			return nil
		}
	}
	return fmt.Errorf("no %s key ending in %s in etcd", kind, suffix)
}
