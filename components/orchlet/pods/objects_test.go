package pods

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/ptr"

	"orch.io/orch/components/orchlet/pods/podsync"
	"orch.io/orch/components/orchlet/pods/volumes"
)

// fakeObjects is the API's configmaps and secrets, by namespace/name.
type fakeObjects struct {
	mu         sync.Mutex
	configMaps map[string]*corev1.ConfigMap
	secrets    map[string]*corev1.Secret
}

func (f *fakeObjects) GetConfigMap(_ context.Context, namespace, name string) (*corev1.ConfigMap, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if cm, ok := f.configMaps[namespace+"/"+name]; ok {
		return cm.DeepCopy(), nil
	}
	return nil, apierrors.NewNotFound(corev1.Resource("configmap"), name)
}

func (f *fakeObjects) GetSecret(_ context.Context, namespace, name string) (*corev1.Secret, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if s, ok := f.secrets[namespace+"/"+name]; ok {
		return s.DeepCopy(), nil
	}
	return nil, apierrors.NewNotFound(corev1.Resource("secret"), name)
}

func objectsHarness(t *testing.T) (*harness, *fakeObjects) {
	h := newHarness(t, nil, config(nil), nil)
	objs := &fakeObjects{
		configMaps: map[string]*corev1.ConfigMap{"default/cfg": {Data: map[string]string{"a": "1", "b": "2"}, BinaryData: map[string][]byte{"bin": {0, 1}}}},
		secrets:    map[string]*corev1.Secret{"default/sec": {Data: map[string][]byte{"user": []byte("u"), "pass": []byte("p"), "1bad": []byte("x")}}},
	}
	h.m.SetObjects(objs)
	return h, objs
}

func ref(name string) corev1.LocalObjectReference { return corev1.LocalObjectReference{Name: name} }

// The files of configMap, secret and projected volumes: every key or the items named, with
// defaultMode and per-item modes; a missing optional object or key is skipped, a required one
// fails the mount with the kubelet's message.
func TestObjectVolumes(t *testing.T) {
	for _, tc := range []struct {
		name    string
		source  corev1.VolumeSource
		plugin  string
		want    map[string]string // path: content|mode
		failure string
	}{
		{"configMap, every key", corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: ref("cfg")}}, "orch.io~configmap",
			map[string]string{"a": "1|644", "b": "2|644", "bin": "\x00\x01|644"}, ""},
		{"configMap items and modes", corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: ref("cfg"), DefaultMode: ptr.To[int32](0o600),
			Items: []corev1.KeyToPath{{Key: "a", Path: "sub/x"}, {Key: "b", Path: "y", Mode: ptr.To[int32](0o400)}}}}, "orch.io~configmap",
			map[string]string{"sub/x": "1|600", "y": "2|400"}, ""},
		{"configMap missing key", corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: ref("cfg"), Items: []corev1.KeyToPath{{Key: "z", Path: "z"}}}}, "orch.io~configmap",
			nil, "configmap references non-existent config key: z"},
		{"configMap missing optional key", corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: ref("cfg"), Optional: ptr.To(true), Items: []corev1.KeyToPath{{Key: "z", Path: "z"}, {Key: "a", Path: "a"}}}}, "orch.io~configmap",
			map[string]string{"a": "1|644"}, ""},
		{"configMap missing", corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: ref("nope")}}, "orch.io~configmap", nil, `configmap "nope" not found`},
		{"configMap missing optional", corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: ref("nope"), Optional: ptr.To(true)}}, "orch.io~configmap", map[string]string{}, ""},
		{"secret", corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "sec", Items: []corev1.KeyToPath{{Key: "pass", Path: "p"}}}}, "orch.io~secret",
			map[string]string{"p": "p|644"}, ""},
		{"secret missing key", corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "sec", Items: []corev1.KeyToPath{{Key: "z", Path: "z"}}}}, "orch.io~secret",
			nil, "references non-existent secret key: z"},
		{"secret missing", corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "nope"}}, "orch.io~secret", nil, `secret "nope" not found`},
		{"projected", corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
			{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: ref("cfg"), Items: []corev1.KeyToPath{{Key: "a", Path: "cm-a"}}}},
			{Secret: &corev1.SecretProjection{LocalObjectReference: ref("sec"), Items: []corev1.KeyToPath{{Key: "user", Path: "user", Mode: ptr.To[int32](0o400)}}}},
			{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{Path: "name", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}}}},
		}}}, "orch.io~projected", map[string]string{"cm-a": "1|644", "user": "u|400", "name": "p|644"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, _ := objectsHarness(t)
			pod := newPod("p", ctr("c", "i"))
			pod.Spec.Volumes = []corev1.Volume{{Name: "v", VolumeSource: tc.source}}
			h.add(pod)
			h.runUntil(time.Second)
			if tc.failure != "" {
				evs := h.rec.reasons(volumes.ReasonFailedMount)
				want := `MountVolume.SetUp failed for volume "v" : ` + tc.failure
				if len(evs) == 0 || evs[0].note != want || len(h.calls("RunPodSandbox", "")) != 0 {
					t.Fatalf("events %v, want %q and no sandbox", h.rec.lines(), want)
				}
				return
			}
			dir := filepath.Join(h.m.node.RootDir, "pods", "uid-p", "volumes", tc.plugin, "v")
			got := map[string]string{}
			target, err := os.Readlink(filepath.Join(dir, "..data"))
			if err != nil {
				t.Fatal(err)
			}
			data := filepath.Join(dir, target)
			err = filepath.WalkDir(data, func(path string, d os.DirEntry, err error) error {
				if err != nil || d.IsDir() {
					return err
				}
				rel, _ := filepath.Rel(data, path)
				data, _ := os.ReadFile(path)
				info, _ := d.Info()
				got[rel] = string(data) + "|" + strings.TrimPrefix(info.Mode().Perm().String(), "-")
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			want := map[string]string{}
			for k, v := range tc.want {
				content, mode, _ := strings.Cut(v, "|")
				want[k] = content + "|" + os.FileMode(parseOctal(mode)).Perm().String()[1:]
			}
			if len(got) != len(want) {
				t.Fatalf("files %v, want %v", got, want)
			}
			for k, v := range want {
				if got[k] != v {
					t.Errorf("file %s = %q, want %q", k, got[k], v)
				}
			}
			if len(h.calls("RunPodSandbox", "")) != 1 {
				t.Errorf("the pod did not start: %v", h.rec.lines())
			}
		})
	}
}

func parseOctal(s string) uint32 {
	var n uint32
	for _, c := range s {
		n = n*8 + uint32(c-'0')
	}
	return n
}

// A running pod's configMap volume follows the configmap on the next sync.
func TestObjectVolumeFollowsChanges(t *testing.T) {
	h, objs := objectsHarness(t)
	pod := newPod("p", ctr("c", "i"))
	pod.Spec.Volumes = []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: ref("cfg")}}}}
	h.add(pod)
	h.runUntil(time.Second)
	file := filepath.Join(h.m.node.RootDir, "pods", "uid-p", "volumes", "orch.io~configmap", "v", "a")
	if data, err := os.ReadFile(file); err != nil || string(data) != "1" {
		t.Fatalf("%q %v", data, err)
	}
	objs.mu.Lock()
	objs.configMaps["default/cfg"] = &corev1.ConfigMap{Data: map[string]string{"a": "changed"}}
	objs.mu.Unlock()
	h.runUntil(time.Second + config(nil).SyncFrequency.Duration + time.Second)
	if data, err := os.ReadFile(file); err != nil || string(data) != "changed" {
		t.Fatalf("after a sync: %q %v, want changed", data, err)
	}
	if _, err := os.Lstat(filepath.Join(filepath.Dir(file), "b")); err == nil {
		t.Error("a key gone from the configmap is still a file")
	}
}

// Env from configmaps and secrets: envFrom first with its prefix and invalid names skipped with
// the kubelet's event, then env's references, optional ones skipped when missing.
func TestObjectEnv(t *testing.T) {
	h, _ := objectsHarness(t)
	c := ctr("c", "i")
	c.EnvFrom = []corev1.EnvFromSource{
		{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: ref("sec")}},
		{Prefix: "CM_", ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: ref("cfg")}},
		{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: ref("nope"), Optional: ptr.To(true)}},
	}
	c.Env = []corev1.EnvVar{
		{Name: "user", Value: "overridden-$(pass)"},
		{Name: "B", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: ref("cfg"), Key: "b"}}},
		{Name: "OPT", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: ref("sec"), Key: "z", Optional: ptr.To(true)}}},
	}
	h.add(newPod("p", c))
	h.runUntil(time.Second)
	ctrs := sent[*runtimeapi.CreateContainerRequest](h, "CreateContainer")
	if len(ctrs) != 1 {
		t.Fatalf("%d containers: %v", len(ctrs), h.rec.lines())
	}
	var pairs []string
	for _, kv := range ctrs[0].Config.Envs {
		pairs = append(pairs, kv.Key+"="+string(kv.Value))
	}
	env := strings.Join(pairs, " ")
	want := "pass=p user=overridden-p CM_a=1 CM_b=2 CM_bin=\x00\x01 B=2"
	if env != want {
		t.Errorf("env %q, want %q", env, want)
	}
	evs := h.rec.reasons(podsync.ReasonInvalidEnvironmentVariableNames)
	if wantNote := "Keys [1bad] from the EnvFrom secret default/sec were skipped since they are considered invalid environment variable names."; len(evs) != 1 || evs[0].note != wantNote {
		t.Errorf("events %v, want %q", h.rec.lines(), wantNote)
	}
}

// A missing configmap or key keeps the container from being created, waiting with
// CreateContainerConfigError and the kubelet's message.
func TestObjectEnvMissing(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  corev1.EnvVar
		from []corev1.EnvFromSource
		want string
	}{
		{"configmap", corev1.EnvVar{Name: "A", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: ref("nope"), Key: "k"}}}, nil, `configmap "nope" not found`},
		{"configmap key", corev1.EnvVar{Name: "A", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: ref("cfg"), Key: "k"}}}, nil, "couldn't find key k in ConfigMap default/cfg"},
		{"secret key", corev1.EnvVar{Name: "A", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: ref("sec"), Key: "k"}}}, nil, "couldn't find key k in Secret default/sec"},
		{"envFrom secret", corev1.EnvVar{Name: "A", Value: "a"}, []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: ref("nope")}}}, `secret "nope" not found`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, _ := objectsHarness(t)
			c := ctr("c", "i")
			c.Env, c.EnvFrom = []corev1.EnvVar{tc.env}, tc.from
			h.add(newPod("p", c))
			h.runUntil(time.Second)
			if n := len(h.calls("CreateContainer", "")); n != 0 {
				t.Fatalf("%d containers created", n)
			}
			w := h.pod("p").Status.ContainerStatuses[0].State.Waiting
			if w == nil || w.Reason != "CreateContainerConfigError" || w.Message != tc.want {
				t.Errorf("waiting %+v, want CreateContainerConfigError %q", w, tc.want)
			}
		})
	}
}

// In API-server mode the pods that read configmaps and secrets are admitted; a service account
// token projection and static pods' references stay refused by name.
func TestObjectsAdmission(t *testing.T) {
	h, _ := objectsHarness(t)
	p := newPod("p", ctr("c", "i"))
	p.Spec.Volumes = []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
		{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: ref("cfg")}},
		{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"}}}}}}}
	h.add(p)
	h.runUntil(time.Second)
	want := `spec.volumes[0].projected.sources[1]: volume "v": only downwardAPI, configMap and secret sources are supported by this orchlet`
	if st := h.pod("p").Status; st.Reason != ReasonUnsupportedPodSpec || st.Message != want {
		t.Errorf("status %s %q, want %q", st.Reason, st.Message, want)
	}
}

// A secret volume is a tmpfs where the node can mount one, as the secret plugin's wrapped memory
// emptyDir: mounted before its files are written, unmounted when the pod goes.
func TestSecretVolumeOnTmpfs(t *testing.T) {
	tmpfs := &fakeTmpfs{mounted: map[string]int64{}}
	h := newHarness(t, nil, config(nil), func(o *Options) {
		o.Node = Node{RootDir: t.TempDir(), Tmpfs: tmpfs, MemoryCapacity: 8 << 30}
	})
	h.m.SetObjects(&fakeObjects{secrets: map[string]*corev1.Secret{"default/sec": {Data: map[string][]byte{"k": []byte("v")}}}})
	pod := newPod("p", ctr("c", "i"))
	pod.Spec.Volumes = []corev1.Volume{
		{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "sec"}}},
		{Name: "c", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: ref("cfg"), Optional: ptr.To(true)}}},
	}
	h.add(pod)
	h.runUntil(time.Second)
	dir := filepath.Join(h.m.node.RootDir, "pods", "uid-p", "volumes", "orch.io~secret", "s")
	tmpfs.mu.Lock()
	size, mounted := tmpfs.mounted[dir]
	log := strings.Join(tmpfs.log, ",")
	tmpfs.mu.Unlock()
	if !mounted || size != 8<<30 || log != "mount s" {
		t.Fatalf("tmpfs mounts %v (%s), want the secret volume alone at the node's memory", tmpfs.mounted, log)
	}
	if data, err := os.ReadFile(filepath.Join(dir, "k")); err != nil || string(data) != "v" {
		t.Fatalf("%q %v", data, err)
	}
	h.remove(pod)
	h.runUntil(time.Minute)
	tmpfs.mu.Lock()
	defer tmpfs.mu.Unlock()
	if len(tmpfs.mounted) != 0 {
		t.Errorf("still mounted after the pod went: %v (%v)", tmpfs.mounted, tmpfs.log)
	}
}
