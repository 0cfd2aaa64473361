package main

import (
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"orch.io/orch/fakecri"
	"orch.io/orch/fakecri/fakecritest"
)

// A manifest written after start runs without waiting for --file-check-frequency (20s): the
// binary watches the manifest directory, as the kubelet does.
func TestManifestWatchedOnFakecri(t *testing.T) {
	_, sock := fakecritest.Start(t, fakecri.Options{Seed: 1})
	manifests := t.TempDir()
	a := startServing(t, "--container-runtime-endpoint", sock, "--pod-manifest-path", manifests,
		"--hostname-override=node-e2e", "--fail-swap-on=false", "--cert-dir="+t.TempDir())
	client := &http.Client{Timeout: 2 * time.Second}
	pod := "apiVersion: v1\nkind: Pod\nmetadata: {name: web}\nspec:\n  containers:\n  - {name: app, image: busybox:1.36}\n"
	tmp := filepath.Join(manifests, ".web.yaml.tmp")
	if err := os.WriteFile(tmp, []byte(pod), 0o644); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := os.Rename(tmp, filepath.Join(manifests, "web.yaml")); err != nil {
		t.Fatal(err)
	}
	// Well before the 20s poll; a pull and a start on fakecri take no time.
	for deadline := start.Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		list, err := getPods(client, "http://127.0.0.1:"+a.readOnly+"/pods")
		if err == nil && phaseOf(list, "web-node-e2e") == corev1.PodRunning {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the manifest's pod not Running within 10s (last error %v); stderr:\n%s", err, a.stderr.String())
		}
	}
	t.Logf("manifest written to pod Running: %v", time.Since(start))
	if err := a.stop(t); err != nil {
		t.Fatalf("after SIGTERM: %v\n%s", err, a.stderr.String())
	}
}
