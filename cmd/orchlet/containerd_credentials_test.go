//go:build e2e

package main

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/benbjohnson/clock"

	"orch.io/orch/components/orchlet/app/apptest"
)

// TestStandaloneCredentialProviderOnContainerd pulls from a registry the test serves, which wants
// a password, through containerd: a pod whose image a credential provider plugin (orch's own,
// answering from a file) matches runs with the plugin's credentials; a pod whose image the plugin
// does not match fails its pull with the registry's refusal.
func TestStandaloneCredentialProviderOnContainerd(t *testing.T) {
	reg := startRegistry(t, "puller", "s3cret")
	host := strings.TrimPrefix(reg.srv.URL, "http://")
	private, other := host+"/e2e/private:1", host+"/other/private:1"
	if err := reg.load(t, private, other); err != nil {
		t.Fatal(err)
	}

	dir := t.TempDir()
	plugins := filepath.Join(dir, "plugins")
	if out, err := exec.Command("go", "build", "-o", filepath.Join(plugins, "orch-credential-provider"), "../orch-credential-provider").CombinedOutput(); err != nil {
		t.Fatalf("building orch-credential-provider: %v\n%s", err, out)
	}
	creds := filepath.Join(dir, "registry-credentials.yaml")
	config := filepath.Join(dir, "credential-providers.yaml")
	for path, content := range map[string]string{
		creds: fmt.Sprintf("%q: {username: puller, password: s3cret}\n", host),
		config: fmt.Sprintf(`apiVersion: orchlet.config.orch.io/v1
kind: CredentialProviderConfig
providers:
- name: orch-credential-provider
  matchImages: [%q]
  defaultCacheDuration: 5m
  apiVersion: credentialprovider.kubelet.k8s.io/v1
  args: [--credentials=%s]
`, host+"/e2e", creds),
	} {
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}

	ctd := startContainerd(t)
	manifests := t.TempDir()
	for name, image := range map[string]string{"private": private, "unmatched": other} {
		pod := fmt.Sprintf("apiVersion: v1\nkind: Pod\nmetadata: {name: %s}\nspec:\n  hostNetwork: true\n  terminationGracePeriodSeconds: 2\n  containers:\n  - {name: app, image: %q, command: [sleep, \"3600\"]}\n", name, image)
		if err := os.WriteFile(filepath.Join(manifests, name+".yaml"), []byte(pod), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	privateName, unmatchedName := "private-"+e2eNode, "unmatched-"+e2eNode
	cleanupPodLogs(t, privateName, unmatchedName)
	a := startServing(t, "--container-runtime-endpoint", "unix://"+ctd.sock, "--pod-manifest-path", manifests,
		"--file-check-frequency=1s", "--hostname-override="+e2eNode, "--fail-swap-on=false", "--cgroup-driver=cgroupfs",
		"--cert-dir="+t.TempDir(), "--image-credential-provider-config="+config, "--image-credential-provider-bin-dir="+plugins)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("orchlet stderr:\n%s", a.stderr.String())
		}
	})
	t.Cleanup(func() {
		for _, name := range []string{"private", "unmatched"} {
			_ = os.Remove(filepath.Join(manifests, name+".yaml"))
		}
		apptest.WaitWithin(t, clock.New(), "the pods gone", 30*time.Second, func() (bool, error) {
			out := strings.TrimSpace(ctd.ctrOut("containers", "ls", "-q"))
			return out == "", fmt.Errorf("containers left: %s", out)
		})
	})
	client := &http.Client{Timeout: 2 * time.Second}
	podsURL := "http://127.0.0.1:" + a.readOnly + "/pods"
	apptest.WaitWithin(t, clock.New(), "the private pod Running, the unmatched one refused its image", 60*time.Second, func() (bool, error) {
		list, err := getPods(client, podsURL)
		if err != nil {
			return false, err
		}
		p, _ := containerStatus(list, privateName, "app")
		u, _ := containerStatus(list, unmatchedName, "app")
		refused := u.State.Waiting != nil && (u.State.Waiting.Reason == "ErrImagePull" || u.State.Waiting.Reason == "ImagePullBackOff")
		return p.State.Running != nil && refused, fmt.Errorf("private %+v, unmatched %+v", p.State, u.State)
	})
	list, err := getPods(client, podsURL)
	if err != nil {
		t.Fatal(err)
	}
	if u, _ := containerStatus(list, unmatchedName, "app"); !strings.Contains(u.State.Waiting.Message, "401 Unauthorized") {
		t.Errorf("the unmatched pod's pull: %q, want the registry's 401 Unauthorized", u.State.Waiting.Message)
	}
	if got := reg.authorized(); !got["/e2e/private"] || got["/other/private"] {
		t.Errorf("repositories pulled with the password: %v, want /e2e/private only", got)
	}
}

// registry serves images with the Docker registry API v2 over HTTP, as much of it as containerd's
// pull uses (GET /v2/, manifests by tag or digest, blobs), to requests carrying the password.
type registry struct {
	srv        *httptest.Server
	user, pass string

	mu        sync.Mutex
	manifests map[string]string // "<repository>:<tag>" to its manifest's digest
	blobs     map[string][]byte // by digest: manifests, configs, layers
	authed    map[string]bool   // repositories served with the password
}

func startRegistry(t *testing.T, user, pass string) *registry {
	r := &registry{user: user, pass: pass, manifests: map[string]string{}, blobs: map[string][]byte{}, authed: map[string]bool{}}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.srv.Close)
	return r
}

// load builds the busybox images of the e2e test under the names given (host/repository:tag) and
// keeps their blobs.
func (r *registry) load(t *testing.T, names ...string) error {
	images := map[string][]string{}
	for _, n := range names {
		images[n] = []string{"Cmd", "sh"}
	}
	archive := filepath.Join(t.TempDir(), "images.tar")
	if err := writeBusyboxImages(archive, images); err != nil {
		return err
	}
	f, err := os.Open(archive)
	if err != nil {
		return err
	}
	defer f.Close()
	var index struct {
		Manifests []struct {
			Digest      string            `json:"digest"`
			Annotations map[string]string `json:"annotations"`
		} `json:"manifests"`
	}
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			return err
		}
		switch {
		case h.Name == "index.json":
			if err := json.Unmarshal(data, &index); err != nil {
				return err
			}
		case strings.HasPrefix(h.Name, "blobs/sha256/"):
			r.blobs["sha256:"+strings.TrimPrefix(h.Name, "blobs/sha256/")] = data
		}
	}
	for _, m := range index.Manifests {
		name := m.Annotations["io.containerd.image.name"]
		_, repoTag, _ := strings.Cut(name, "/")
		r.manifests[repoTag] = m.Digest
	}
	return nil
}

func (r *registry) authorized() map[string]bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string]bool{}
	for k, v := range r.authed {
		out[k] = v
	}
	return out
}

func (r *registry) serve(w http.ResponseWriter, req *http.Request) {
	if user, pass, ok := req.BasicAuth(); !ok || user != r.user || pass != r.pass {
		w.Header().Set("WWW-Authenticate", `Basic realm="orch-e2e"`)
		http.Error(w, "401 Unauthorized", http.StatusUnauthorized)
		return
	}
	path := strings.TrimPrefix(req.URL.Path, "/v2")
	if path == "/" || path == "" {
		w.WriteHeader(http.StatusOK)
		return
	}
	var repo, kind, ref string
	for _, k := range []string{"/manifests/", "/blobs/"} {
		if i := strings.LastIndex(path, k); i >= 0 {
			repo, kind, ref = path[:i], strings.Trim(k, "/"), path[i+len(k):]
		}
	}
	digest := ref
	if kind == "manifests" && !strings.HasPrefix(ref, "sha256:") {
		digest = r.manifests[strings.TrimPrefix(repo, "/")+":"+ref]
	}
	data, ok := r.blobs[digest]
	if kind == "" || !ok {
		http.NotFound(w, req)
		return
	}
	r.mu.Lock()
	r.authed[repo] = true
	r.mu.Unlock()
	if kind == "manifests" {
		w.Header().Set("Content-Type", "application/vnd.oci.image.manifest.v1+json")
	} else {
		w.Header().Set("Content-Type", "application/octet-stream")
	}
	w.Header().Set("Docker-Content-Digest", digest)
	w.Header().Set("Content-Length", fmt.Sprint(len(data)))
	if req.Method == http.MethodHead {
		return
	}
	_, _ = io.Copy(w, bytes.NewReader(data))
}
