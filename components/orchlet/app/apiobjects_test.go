package app

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/benbjohnson/clock"
	"google.golang.org/protobuf/encoding/protojson"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"orch.io/orch/components/orchlet/host"
	"orch.io/orch/components/orchlet/pods/labels"
	"orch.io/orch/fakecri"
	"orch.io/orch/fakecri/fakecritest"
)

// criConfig is the CreateContainer config the fake runtime holds for the container named name of
// the pod named pod, or nil while there is none.
func criConfig(t *testing.T, rt *fakecri.Runtime, pod, name string) *runtimeapi.ContainerConfig {
	t.Helper()
	ctx := context.Background()
	list, err := rt.ListContainers(ctx, &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{LabelSelector: map[string]string{labels.PodName: pod}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range list.Containers {
		if c.Metadata.Name != name {
			continue
		}
		st, err := rt.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: c.Id, Verbose: true})
		if err != nil {
			t.Fatal(err)
		}
		var info struct {
			Config json.RawMessage `json:"config"`
		}
		if err := json.Unmarshal([]byte(st.Info["info"]), &info); err != nil {
			t.Fatal(err)
		}
		cfg := &runtimeapi.ContainerConfig{}
		if err := protojson.Unmarshal(info.Config, cfg); err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	return nil
}

// In API-server mode a pod's configMap volume and its env from a secret and a configmap reach the
// runtime's request; a change of the configmap rewrites the file; a missing configmap or key keeps
// a container from being created, with the kubelet's CreateContainerConfigError message.
func TestAPIServerModeConfigMapsAndSecrets(t *testing.T) {
	kubeconfig, client, _ := apiServer(t, nil)
	rt, sock := fakecritest.Start(t, fakecri.Options{Seed: 1})
	o := parse(t, "--enable-server=false", "--read-only-port=0", "--healthz-port=0", "--container-runtime-endpoint="+sock,
		"--orchconfig="+kubeconfig, "--hostname-override=node-a", "--root-dir="+t.TempDir(), "--sync-frequency=1s")
	cancel, done := runAsync(o, host.NewFake(), clock.New())
	defer func() {
		cancel()
		if err := wait(t, done); err != nil {
			t.Error(err)
		}
	}()
	ctx := context.Background()
	cms, secrets := client.CoreV1().ConfigMaps("default"), client.CoreV1().Secrets("default")
	if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cfg"}, Data: map[string]string{"greeting": "hello", "bad-name": "x"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := secrets.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "sec"}, StringData: map[string]string{"password": "s3cret"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	yes := true
	ref := func(name string) corev1.LocalObjectReference { return corev1.LocalObjectReference{Name: name} }
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"}, Spec: corev1.PodSpec{
		NodeName: "node-a",
		Volumes:  []corev1.Volume{{Name: "cfg", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: ref("cfg")}}}},
		Containers: []corev1.Container{{Name: "app", Image: "busybox:1.36",
			VolumeMounts: []corev1.VolumeMount{{Name: "cfg", MountPath: "/etc/cfg"}},
			EnvFrom:      []corev1.EnvFromSource{{Prefix: "CFG_", ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: ref("cfg")}}},
			Env: []corev1.EnvVar{
				{Name: "PASSWORD", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: ref("sec"), Key: "password"}}},
				{Name: "OPTIONAL", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: ref("none"), Key: "k", Optional: &yes}}},
			}}},
	}}
	if _, err := client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var cfg *runtimeapi.ContainerConfig
	waitFor(t, "the container created", func() (bool, error) {
		cfg = criConfig(t, rt, "web", "app")
		return cfg != nil, nil
	})
	env := map[string]string{}
	for _, kv := range cfg.Envs {
		env[kv.Key] = string(kv.Value)
	}
	if env["PASSWORD"] != "s3cret" || env["CFG_greeting"] != "hello" || env["CFG_bad-name"] != "x" {
		t.Errorf("env %v: want PASSWORD from the secret and CFG_greeting, CFG_bad-name from the configmap", env)
	}
	if _, ok := env["OPTIONAL"]; ok {
		t.Errorf("an optional reference to a missing configmap set OPTIONAL")
	}
	var hostPath string
	for _, m := range cfg.Mounts {
		if m.ContainerPath == "/etc/cfg" {
			hostPath = m.HostPath
		}
	}
	file := filepath.Join(hostPath, "greeting")
	if data, err := os.ReadFile(file); err != nil || string(data) != "hello" {
		t.Fatalf("mounted %q: %q %v, want hello", hostPath, data, err)
	}
	if info, err := os.Stat(file); err != nil || info.Mode().Perm() != 0o644 {
		t.Errorf("file mode %v %v, want 0644", info.Mode(), err)
	}

	if _, err := cms.Update(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cfg"}, Data: map[string]string{"greeting": "bye"}}, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the file rewritten", func() (bool, error) {
		data, err := os.ReadFile(file)
		return string(data) == "bye", err
	})
	if _, err := os.Lstat(filepath.Join(hostPath, "bad-name")); err == nil {
		t.Errorf("a key removed from the configmap is still a file")
	}

	for _, tc := range []struct {
		name string
		env  corev1.EnvVar
		from []corev1.EnvFromSource
		want string
	}{
		{"missing-cm", corev1.EnvVar{Name: "A", Value: "a"}, []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: ref("nope")}}}, `configmap "nope" not found`},
		{"missing-key", corev1.EnvVar{Name: "K", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: ref("sec"), Key: "k"}}}, nil, "couldn't find key k in Secret default/sec"},
	} {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: tc.name, Namespace: "default"}, Spec: corev1.PodSpec{NodeName: "node-a",
			Containers: []corev1.Container{{Name: "app", Image: "busybox:1.36", Env: []corev1.EnvVar{tc.env}, EnvFrom: tc.from}}}}
		if _, err := client.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitFor(t, tc.name+" waiting with CreateContainerConfigError", func() (bool, error) {
			got, err := client.CoreV1().Pods("default").Get(ctx, tc.name, metav1.GetOptions{})
			if err != nil || len(got.Status.ContainerStatuses) == 0 {
				return false, err
			}
			w := got.Status.ContainerStatuses[0].State.Waiting
			return w != nil && w.Reason == "CreateContainerConfigError" && w.Message == tc.want, fmt.Errorf("state %+v", got.Status.ContainerStatuses[0].State)
		})
	}
}
