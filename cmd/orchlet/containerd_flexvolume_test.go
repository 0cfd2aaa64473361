//go:build e2e

package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/benbjohnson/clock"

	"orch.io/orch/components/orchlet/app/apptest"
)

// flexDriver mounts a tmpfs holding the options it was given, and logs its calls.
const flexDriver = `#!/bin/sh
echo "$1 $2" >> "$(dirname "$0")/calls"
case "$1" in
init) echo '{"status": "Success", "capabilities": {"attach": false}}' ;;
mount) mount -t tmpfs tmpfs "$2" && echo "$3" > "$2/options.json" && echo '{"status": "Success"}' ;;
unmount) umount "$2" && echo '{"status": "Success"}' ;;
*) echo '{"status": "Not supported"}' ;;
esac
`

// TestStandaloneFlexVolumeOnContainerd runs a pod with a flexVolume volume on containerd: the
// driver found under --volume-plugin-dir is initialized, mounts the volume (a tmpfs here) where
// the container sees it, with the kubelet's options, and unmounts it when the pod goes.
func TestStandaloneFlexVolumeOnContainerd(t *testing.T) {
	plugins := t.TempDir()
	driverDir := filepath.Join(plugins, "example.com~tmpfs")
	if err := os.MkdirAll(driverDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(driverDir, "tmpfs"), []byte(flexDriver), 0o755); err != nil {
		t.Fatal(err)
	}
	ctd := startContainerd(t)
	endpoint := "unix://" + ctd.sock
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rs, _ := connectRuntime(ctx, t, endpoint)
	podName := "flex-" + e2eNode
	cleanupPodLogs(t, podName)
	manifests := t.TempDir()
	manifest := filepath.Join(manifests, "flex.yaml")
	a := startServing(t, "--container-runtime-endpoint", endpoint, "--pod-manifest-path", manifests,
		"--file-check-frequency=1s", "--hostname-override="+e2eNode, "--fail-swap-on=false", "--cgroup-driver=cgroupfs",
		"--cert-dir="+t.TempDir(), "--root-dir="+t.TempDir(), "--volume-plugin-dir="+plugins)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("orchlet stderr:\n%s", a.stderr.String())
		}
	})
	pod := `apiVersion: v1
kind: Pod
metadata: {name: flex}
spec:
  hostNetwork: true
  terminationGracePeriodSeconds: 2
  containers:
  - name: app
    image: ` + e2eImage + `
    command: [sleep, "3600"]
    volumeMounts: [{name: data, mountPath: /data}]
  volumes:
  - name: data
    flexVolume: {driver: example.com/tmpfs, options: {size: small}}
`
	if err := os.WriteFile(manifest, []byte(pod), 0o644); err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Timeout: 2 * time.Second}
	var id string
	apptest.WaitWithin(t, clock.New(), "the pod Running", 30*time.Second, func() (bool, error) {
		list, err := getPods(client, "http://127.0.0.1:"+a.readOnly+"/pods")
		if err != nil {
			return false, err
		}
		s, ok := containerStatus(list, podName, "app")
		id = strings.TrimPrefix(s.ContainerID, "containerd://")
		return ok && s.State.Running != nil, fmt.Errorf("app %+v", s.State)
	})
	out, stderr, err := rs.ExecSync(ctx, id, []string{"cat", "/data/options.json"}, 10*time.Second)
	if err != nil {
		t.Fatalf("reading the volume in the container: %v %s", err, stderr)
	}
	for _, want := range []string{`"kubernetes.io/pod.name":"flex-node-e2e"`, `"kubernetes.io/readwrite":"rw"`, `"size":"small"`} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the driver's options %s lack %s", out, want)
		}
	}
	if err := os.Remove(manifest); err != nil {
		t.Fatal(err)
	}
	apptest.WaitWithin(t, clock.New(), "the driver asked to unmount", 30*time.Second, func() (bool, error) {
		data, err := os.ReadFile(filepath.Join(driverDir, "calls"))
		return strings.Contains(string(data), "unmount "), fmt.Errorf("driver calls %q, %v", data, err)
	})
	calls, _ := os.ReadFile(filepath.Join(driverDir, "calls"))
	if lines := strings.Fields(string(calls)); len(lines) < 5 || lines[0] != "init" || lines[1] != "mount" || lines[3] != "unmount" {
		t.Errorf("driver calls %q, want init, mount <dir>, unmount <dir>", calls)
	}
}
