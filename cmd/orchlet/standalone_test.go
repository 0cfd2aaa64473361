package main

import (
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"orch.io/orch/components/orchlet/app/apptest"
	"orch.io/orch/fakecri"
	"orch.io/orch/fakecri/calllog"
	"orch.io/orch/fakecri/fakecritest"
)

// getPods reads a PodList from a server of the agent.
func getPods(client *http.Client, url string) (*corev1.PodList, error) {
	resp, err := client.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: %d %s", url, resp.StatusCode, body)
	}
	list := &corev1.PodList{}
	return list, json.Unmarshal(body, list)
}

func phaseOf(list *corev1.PodList, name string) corev1.PodPhase {
	for _, p := range list.Items {
		if p.Name == name {
			return p.Status.Phase
		}
	}
	return ""
}

// orchlet --pod-manifest-path DIR --container-runtime-endpoint unix:///... runs the manifest's pod on
// the runtime, serves it on its three servers, records events, and tears it down when the manifest
// goes away.
func TestStandaloneOnFakecri(t *testing.T) {
	rt, sock := fakecritest.Start(t, fakecri.Options{Seed: 1})

	manifests := t.TempDir()
	manifest := filepath.Join(manifests, "web.yaml")
	pod := "apiVersion: v1\nkind: Pod\nmetadata: {name: web}\nspec:\n  containers:\n  - {name: app, image: busybox:1.36}\n"
	if err := os.WriteFile(manifest, []byte(pod), 0o644); err != nil {
		t.Fatal(err)
	}
	a := startServing(t, "--container-runtime-endpoint", sock, "--pod-manifest-path", manifests,
		"--file-check-frequency=1s", "--hostname-override=node-e2e", "--fail-swap-on=false", "--cert-dir="+t.TempDir())
	stderr, https, readOnly, healthz := a.stderr, a.https, a.readOnly, a.healthz
	client := &http.Client{Timeout: 2 * time.Second}
	eventually := func(what string, cond func() (bool, error)) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		var last error
		for time.Now().Before(deadline) {
			ok, err := cond()
			if ok {
				return
			}
			last = err
			time.Sleep(100 * time.Millisecond)
		}
		t.Fatalf("%s: not within 20s (last error %v); orchlet stderr:\n%s", what, last, stderr.String())
	}
	eventually("web-node-e2e Running on the read-only server", func() (bool, error) {
		list, err := getPods(client, "http://127.0.0.1:"+readOnly+"/pods")
		return err == nil && phaseOf(list, "web-node-e2e") == corev1.PodRunning, err
	})
	resp, err := client.Get("http://127.0.0.1:" + healthz + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/healthz = %d", resp.StatusCode)
	}
	// Anonymous requests are allowed by default, and AlwaysAllow authorizes them.
	secure := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	if list, err := getPods(secure, "https://127.0.0.1:"+https+"/pods"); err != nil || phaseOf(list, "web-node-e2e") != corev1.PodRunning {
		t.Fatalf("HTTPS /pods: %v", err)
	}
	if !strings.Contains(stderr.String(), `"reason":"Started"`) {
		t.Errorf("no Started event in the log:\n%s", stderr.String())
	}
	if n := len(rt.Calls(calllog.Filter{Method: "*RunPodSandbox"})); n != 1 {
		t.Errorf("%d RunPodSandbox calls, want 1", n)
	}

	if err := os.Remove(manifest); err != nil {
		t.Fatal(err)
	}
	eventually("the removed manifest's pod gone", func() (bool, error) {
		list, err := getPods(client, "http://127.0.0.1:"+readOnly+"/pods")
		return err == nil && phaseOf(list, "web-node-e2e") == "", err
	})
	eventually("its sandbox removed from the runtime", func() (bool, error) {
		return len(rt.Calls(calllog.Filter{Method: "*RemovePodSandbox"})) > 0, nil
	})

	if err := a.stop(t); err != nil {
		t.Fatalf("after SIGTERM: %v\n%s", err, stderr.String())
	}
}

// --runonce starts the static pods, reports each, and exits: 0 when every pod ran.
func TestRunOnceOnFakecri(t *testing.T) {
	manifests := t.TempDir()
	pod := "apiVersion: v1\nkind: Pod\nmetadata: {name: once}\nspec:\n  containers:\n  - {name: app, image: busybox:1.36}\n"
	if err := os.WriteFile(filepath.Join(manifests, "once.yaml"), []byte(pod), 0o644); err != nil {
		t.Fatal(err)
	}
	args := apptest.WithRuntime(t, "--runonce", "--pod-manifest-path", manifests, "--hostname-override=node-e2e", "--fail-swap-on=false")
	_, stderr, code := runBinary(t, args...)
	if code != 0 || !strings.Contains(stderr, `"Pod ran" pod="default/once-node-e2e"`) || !strings.Contains(stderr, "every pod ran") {
		t.Fatalf("exit %d; stderr:\n%s", code, stderr)
	}
}
