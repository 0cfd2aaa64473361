package pods

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/ptr"

	"orch.io/orch/components/orchlet/pods/volumes"
	"orch.io/orch/components/orchlet/sources"
)

// Pods this agent cannot run as written are rejected at admission with a Warning event naming
// the field: PreventStaticPodAPIReferences' message for static pods (the kubelet's config source),
// and for the others whatever would need an API client or a volume plugin it lacks.
func TestRefusedPods(t *testing.T) {
	static := func(p *corev1.Pod) *corev1.Pod {
		p.Annotations = map[string]string{sources.ConfigSourceAnnotation: "file"}
		return p
	}
	withVolume := func(v corev1.VolumeSource) *corev1.Pod {
		p := newPod("p", ctr("c", "i"))
		p.Spec.Volumes = []corev1.Volume{{Name: "v", VolumeSource: v}}
		return p
	}
	withEnv := func(e corev1.EnvVar) *corev1.Pod {
		c := ctr("c", "i")
		c.Env = []corev1.EnvVar{{Name: "A", Value: "a"}, e}
		return newPod("p", c)
	}
	cmKey := &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{Key: "k"}}
	for _, c := range []struct {
		name string
		pod  *corev1.Pod
		want string
	}{
		{"static pod with a configMap volume", static(withVolume(corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{}})), "static pods may not reference configmaps"},
		{"static pod with a service account", static(func() *corev1.Pod { p := newPod("p", ctr("c", "i")); p.Spec.ServiceAccountName = "x"; return p }()), "static pods may not reference serviceaccounts"},
		{"static pod with a secret key", static(withEnv(corev1.EnvVar{Name: "S", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{Key: "k"}}})), "static pods may not reference secrets"},
		{"configMapKeyRef", withEnv(corev1.EnvVar{Name: "C", ValueFrom: cmKey}), "spec.containers[0].env[1].valueFrom.configMapKeyRef: reading API objects is not supported by this orchlet"},
		{"envFrom", func() *corev1.Pod {
			c := ctr("c", "i")
			c.EnvFrom = []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{}}}
			return newPod("p", c)
		}(), "spec.containers[0].envFrom: reading API objects is not supported by this orchlet"},
		{"secret volume", withVolume(corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{}}), `spec.volumes[0]: volume "v" of type secret is not supported by this orchlet`},
		{"nfs volume", withVolume(corev1.VolumeSource{NFS: &corev1.NFSVolumeSource{}}), `spec.volumes[0]: volume "v" of type nfs is not supported by this orchlet`},
		{"image volume without the gate", withVolume(corev1.VolumeSource{Image: &corev1.ImageVolumeSource{Reference: "data:1"}}), `spec.volumes[0]: volume "v" of type image needs the ImageVolume feature gate`},
		{"projected token", withVolume(corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "t"}}}}}),
			`spec.volumes[0].projected.sources[0]: volume "v": only downwardAPI sources are supported by this orchlet`},
		{"memory emptyDir without tmpfs", withVolume(corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory}}),
			`spec.volumes[0].emptyDir.medium: Memory: volume "v" needs a tmpfs, which this host cannot mount`},
		{"runtime class", func() *corev1.Pod {
			p := newPod("p", ctr("c", "i"))
			p.Spec.RuntimeClassName = ptr.To("kata")
			return p
		}(), "spec.runtimeClassName: kata: runtime classes are not supported by this orchlet"},
		{"user namespace", func() *corev1.Pod { p := newPod("p", ctr("c", "i")); p.Spec.HostUsers = ptr.To(false); return p }(), "spec.hostUsers: false: user namespaces are not supported by this orchlet"},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t, nil, config(nil), nil)
			h.add(c.pod)
			h.runUntil(time.Second)
			if n := len(h.calls("RunPodSandbox", "")); n != 0 {
				t.Fatalf("%d sandboxes run for a refused pod", n)
			}
			st := h.pod("p").Status
			if st.Phase != corev1.PodFailed || st.Reason != ReasonUnsupportedPodSpec || st.Message != c.want {
				t.Errorf("status %s %s %q, want Failed %s %q", st.Phase, st.Reason, st.Message, ReasonUnsupportedPodSpec, c.want)
			}
			evs := h.rec.reasons(ReasonUnsupportedPodSpec)
			if len(evs) != 1 || evs[0].kind != corev1.EventTypeWarning || evs[0].note != c.want {
				t.Errorf("events %+v, want one Warning %q", evs, c.want)
			}
		})
	}
}

// A hostPath that fails its type check is the kubelet's FailedMount event, and the pod waits
// with no sandbox until it passes.
func TestFailedMount(t *testing.T) {
	h := newHarness(t, nil, config(nil), nil)
	missing := filepath.Join(t.TempDir(), "data")
	p := newPod("p", ctr("c", "i"))
	p.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: missing, Type: ptr.To(corev1.HostPathDirectory)}}}}
	h.add(p)
	h.runUntil(time.Second)
	evs := h.rec.reasons(volumes.ReasonFailedMount)
	want := `MountVolume.SetUp failed for volume "data" : hostPath type check failed: ` + missing + ` is not a directory`
	if len(evs) == 0 || evs[0].kind != corev1.EventTypeWarning || evs[0].note != want {
		t.Fatalf("events %+v, want Warning %q", evs, want)
	}
	if n := len(h.calls("RunPodSandbox", "")); n != 0 {
		t.Fatalf("%d sandboxes before the volume is ready", n)
	}
	if err := os.Mkdir(missing, 0o755); err != nil {
		t.Fatal(err)
	}
	h.runUntil(time.Minute)
	if n := len(h.calls("CreateContainer", "")); n != 1 {
		t.Fatalf("%d containers once the directory exists", n)
	}
}

type fakeTmpfs struct {
	mu      sync.Mutex
	mounted map[string]int64
	log     []string
}

func (f *fakeTmpfs) MountTmpfs(dir string, size int64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.mounted[dir] = size
	f.log = append(f.log, "mount "+filepath.Base(dir))
	return nil
}

func (f *fakeTmpfs) Unmount(dir string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.mounted, dir)
	f.log = append(f.log, "unmount "+filepath.Base(dir))
	return nil
}

// Volumes set up on disk and mounted as the kubelet's volume plugins and makeMounts do.
func TestVolumesOnTheWire(t *testing.T) {
	root := t.TempDir()
	hostDir := filepath.Join(t.TempDir(), "host")
	tmpfs := &fakeTmpfs{mounted: map[string]int64{}}
	h := newHarness(t, nil, config(nil), func(o *Options) {
		o.Node = Node{RootDir: root, Tmpfs: tmpfs, MemoryCapacity: 8 << 30, SELinux: true}
	})
	app := withResources(ctr("app", "nginx"), nil, corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("256Mi")})
	app.VolumeMounts = []corev1.VolumeMount{
		{Name: "cache", MountPath: "/cache"},
		{Name: "cache", MountPath: "/logs", SubPath: "logs/app"},
		{Name: "host", MountPath: "/host", ReadOnly: true, MountPropagation: ptr.To(corev1.MountPropagationHostToContainer)},
		{Name: "info", MountPath: "/etc/podinfo"},
		{Name: "proj", MountPath: "/etc/proj", ReadOnly: true},
		{Name: "shm", MountPath: "/dev/shm"},
	}
	app.TerminationMessagePath = "/tmp/term"
	pod := newPod("web", app)
	pod.Spec.Hostname = "w1"
	pod.Spec.HostAliases = []corev1.HostAlias{{IP: "10.1.2.3", Hostnames: []string{"db", "db.local"}}}
	pod.Spec.Volumes = []corev1.Volume{
		{Name: "cache", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: ptr.To(resource.MustParse("500Mi"))}}},
		{Name: "host", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: hostDir, Type: ptr.To(corev1.HostPathDirectoryOrCreate)}}},
		{Name: "info", VolumeSource: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{Items: []corev1.DownwardAPIVolumeFile{
			{Path: "labels", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels"}},
			{Path: "sub/name", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}, Mode: ptr.To[int32](0o600)},
			{Path: "cpu", ResourceFieldRef: &corev1.ResourceFieldSelector{ContainerName: "app", Resource: "limits.cpu", Divisor: resource.MustParse("1m")}},
		}}}},
		{Name: "proj", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
			{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{Path: "ns", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}}}},
		}}}},
		{Name: "shm", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory, SizeLimit: ptr.To(resource.MustParse("1Gi"))}}},
	}
	h.add(pod)
	h.runUntil(time.Second)
	ctrs := sent[*runtimeapi.CreateContainerRequest](h, "CreateContainer")
	if len(ctrs) != 1 {
		t.Fatalf("%d containers; events %q", len(ctrs), h.rec.lines())
	}
	podDir := filepath.Join(root, "pods", "uid-web")
	vol := func(plugin, name string) string { return filepath.Join(podDir, "volumes", plugin, name) }
	priv := runtimeapi.MountPropagation_PROPAGATION_PRIVATE
	want := []*runtimeapi.Mount{
		{ContainerPath: "/cache", HostPath: vol("orch.io~empty-dir", "cache"), SelinuxRelabel: true, Propagation: priv},
		{ContainerPath: "/logs", HostPath: vol("orch.io~empty-dir", "cache") + "/logs/app", SelinuxRelabel: true, Propagation: priv},
		{ContainerPath: "/host", HostPath: hostDir, Readonly: true, Propagation: runtimeapi.MountPropagation_PROPAGATION_HOST_TO_CONTAINER},
		{ContainerPath: "/etc/podinfo", HostPath: vol("orch.io~downward-api", "info"), SelinuxRelabel: true, Propagation: priv},
		{ContainerPath: "/etc/proj", HostPath: vol("orch.io~projected", "proj"), Readonly: true, SelinuxRelabel: true, Propagation: priv},
		{ContainerPath: "/dev/shm", HostPath: vol("orch.io~empty-dir", "shm"), SelinuxRelabel: true, Propagation: priv},
		{ContainerPath: "/etc/hosts", HostPath: filepath.Join(podDir, "etc-hosts"), SelinuxRelabel: true},
		{ContainerPath: "/tmp/term", HostPath: filepath.Join(podDir, "containers", "app", "00000000"), SelinuxRelabel: true},
	}
	for i := range want {
		if i >= len(ctrs[0].Config.Mounts) {
			t.Fatalf("mounts %v, want %d", ctrs[0].Config.Mounts, len(want))
		}
		diffProto(t, "mount "+want[i].ContainerPath, want[i], ctrs[0].Config.Mounts[i])
	}
	if len(ctrs[0].Config.Mounts) != len(want) {
		t.Errorf("%d mounts, want %d", len(ctrs[0].Config.Mounts), len(want))
	}

	// A disk emptyDir's sizeLimit is recorded, and the pod warned it is not enforced.
	if evs := h.rec.reasons(ReasonSizeLimitNotEnforced); len(evs) != 1 || evs[0].kind != corev1.EventTypeWarning ||
		evs[0].note != `spec.volumes[0].emptyDir.sizeLimit: volume "cache" may hold more than 500Mi: this orchlet does not evict pods over it` {
		t.Errorf("size limit events %+v", evs)
	}
	// emptyDir: world-writable (empty_dir's setupDir); the subPath made inside it.
	if fi, err := os.Stat(vol("orch.io~empty-dir", "cache")); err != nil || fi.Mode().Perm() != 0o777 {
		t.Errorf("emptyDir mode %v %v, want 0777", fi.Mode(), err)
	}
	if fi, err := os.Stat(vol("orch.io~empty-dir", "cache") + "/logs/app"); err != nil || !fi.IsDir() {
		t.Errorf("subPath not made: %v", err)
	}
	if fi, err := os.Stat(hostDir); err != nil || !fi.IsDir() {
		t.Errorf("DirectoryOrCreate did not create %s: %v", hostDir, err)
	}
	// Memory medium: calculateEmptyDirMemorySize, the 1Gi sizeLimit capped by the pod's 256Mi limit.
	if size, ok := tmpfs.mounted[vol("orch.io~empty-dir", "shm")]; !ok || size != 256<<20 {
		t.Errorf("tmpfs %v, want the shm volume mounted with 256Mi", tmpfs.mounted)
	}

	// Downward API: AtomicWriter's layout, ..data the one link to the timestamped directory.
	info := vol("orch.io~downward-api", "info")
	data, err := os.Readlink(filepath.Join(info, "..data"))
	if err != nil || !strings.HasPrefix(data, "..2025_01_01_00_00_0") {
		t.Errorf("..data -> %q %v", data, err)
	}
	for name, content := range map[string]string{"labels": `app="web"`, "sub/name": "web", "cpu": "500"} {
		got, err := os.ReadFile(filepath.Join(info, name))
		if err != nil || string(got) != content {
			t.Errorf("%s: %q %v, want %q", name, got, err, content)
		}
	}
	if link, err := os.Readlink(filepath.Join(info, "sub")); err != nil || link != "..data/sub" {
		t.Errorf("sub -> %q %v", link, err)
	}
	if fi, err := os.Stat(filepath.Join(info, "sub/name")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("sub/name mode %v %v", fi.Mode(), err)
	}
	if got, _ := os.ReadFile(filepath.Join(vol("orch.io~projected", "proj"), "ns")); string(got) != "default" {
		t.Errorf("projected ns %q", got)
	}

	// /etc/hosts: ensureHostsFile's managed file with the host aliases.
	hosts, _ := os.ReadFile(filepath.Join(podDir, "etc-hosts"))
	ip := h.pod("web").Status.PodIP
	wantHosts := "# Orch-managed hosts file.\n127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\nfe00::0\tip6-localnet\nfe00::0\tip6-mcastprefix\nfe00::1\tip6-allnodes\nfe00::2\tip6-allrouters\n" +
		ip + "\tw1\n\n# Entries added by HostAliases.\n10.1.2.3\tdb\tdb.local\n"
	if d := cmp.Diff(wantHosts, string(hosts)); d != "" {
		t.Errorf("etc-hosts (-want +got):\n%s", d)
	}
	if fi, err := os.Stat(filepath.Join(podDir, "containers", "app", "00000000")); err != nil || fi.Mode().Perm() != 0o666 {
		t.Errorf("termination log %v %v, want mode 0666", fi, err)
	}

	// Removed: the tmpfs unmounted and the pod's directory gone; the host path stays.
	h.remove(pod)
	h.runUntil(2 * time.Minute)
	if _, err := os.Stat(podDir); !os.IsNotExist(err) {
		t.Errorf("pod directory outlived the pod: %v", err)
	}
	// The projected volume is a tmpfs too, as the projected plugin's memory emptyDir.
	mounts := slices.Clone(tmpfs.log)
	slices.Sort(mounts)
	if len(tmpfs.mounted) != 0 || !slicesEqual(mounts, []string{"mount proj", "mount shm", "unmount proj", "unmount shm"}) {
		t.Errorf("tmpfs %v log %v", tmpfs.mounted, tmpfs.log)
	}
	if _, err := os.Stat(hostDir); err != nil {
		t.Errorf("host path removed: %v", err)
	}
}

func slicesEqual(a, b []string) bool { return cmp.Equal(a, b) }

// The pod's fsGroup owns its emptyDir and downward API volumes (SetVolumeOwnership): the group,
// group read-write, setgid directories; a host path is left as the host has it.
func TestFSGroupOwnership(t *testing.T) {
	group := int64(2000)
	if os.Geteuid() != 0 {
		group = int64(os.Getgid()) // only root may give files away
	}
	hostDir := t.TempDir()
	h := newHarness(t, nil, config(nil), nil)
	c := ctr("c", "i")
	c.VolumeMounts = []corev1.VolumeMount{{Name: "e", MountPath: "/e"}, {Name: "d", MountPath: "/d"}, {Name: "h", MountPath: "/h"}}
	pod := newPod("p", c)
	pod.Spec.SecurityContext = &corev1.PodSecurityContext{FSGroup: &group}
	pod.Spec.Volumes = []corev1.Volume{
		{Name: "e", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		{Name: "d", VolumeSource: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{Items: []corev1.DownwardAPIVolumeFile{
			{Path: "name", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}}}}},
		{Name: "h", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: hostDir}}},
	}
	h.add(pod)
	h.runUntil(time.Second)
	root := filepath.Join(h.m.node.RootDir, "pods", "uid-p", "volumes")
	for _, c := range []struct {
		path string
		mode os.FileMode
	}{
		{filepath.Join(root, "orch.io~empty-dir", "e"), os.ModeDir | os.ModeSetgid | 0o777},
		{filepath.Join(root, "orch.io~downward-api", "d", "name"), 0o644}, // read-only: the group reads
	} {
		fi, err := os.Stat(c.path)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode() != c.mode || gid(fi) != group {
			t.Errorf("%s: %v group %d, want %v group %d", c.path, fi.Mode(), gid(fi), c.mode, group)
		}
	}
	if fi, _ := os.Stat(hostDir); fi.Mode()&os.ModeSetgid != 0 {
		t.Errorf("host path changed: %v", fi.Mode())
	}
}

func gid(fi os.FileInfo) int64 { return int64(fi.Sys().(*syscall.Stat_t).Gid) }

// A downward API volume follows the pod's labels: rewritten through a new ..data directory when
// they change (AtomicWriter), left alone when nothing does.
func TestDownwardAPIFollowsLabels(t *testing.T) {
	h := newHarness(t, nil, config(nil), nil)
	pod := newPod("p", ctr("c", "i"))
	pod.Spec.Volumes = []corev1.Volume{{Name: "info", VolumeSource: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{
		Items: []corev1.DownwardAPIVolumeFile{{Path: "labels", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels"}}}}}}}
	h.add(pod)
	h.runUntil(time.Second)
	dir := filepath.Join(h.m.node.RootDir, "pods", "uid-p", "volumes", "orch.io~downward-api", "info")
	first, _ := os.Readlink(filepath.Join(dir, "..data"))

	same := pod.DeepCopy()
	same.Annotations = map[string]string{"unrelated": "x"}
	h.m.Update(sources.Update{Op: sources.OpUpdate, Source: sources.SourceFile, Pod: same})
	h.runUntil(2 * time.Second)
	if again, _ := os.Readlink(filepath.Join(dir, "..data")); again != first {
		t.Errorf("rewritten though the labels did not change: %s -> %s", first, again)
	}

	relabelled := pod.DeepCopy()
	relabelled.Labels = map[string]string{"app": "p", "tier": "web"}
	h.m.Update(sources.Update{Op: sources.OpUpdate, Source: sources.SourceFile, Pod: relabelled})
	h.runUntil(3 * time.Second)
	got, err := os.ReadFile(filepath.Join(dir, "labels"))
	if err != nil || string(got) != "app=\"p\"\ntier=\"web\"" {
		t.Errorf("labels file %q %v", got, err)
	}
	second, _ := os.Readlink(filepath.Join(dir, "..data"))
	if second == first {
		t.Error("..data still points to the first directory")
	}
	if _, err := os.Stat(filepath.Join(dir, first)); !os.IsNotExist(err) {
		t.Errorf("the old directory %s is left: %v", first, err)
	}
}

// A subPath may not leave its volume, by ".." or through a symlink the container planted.
func TestSubPathStaysInVolume(t *testing.T) {
	outside := t.TempDir()
	for _, c := range []struct {
		subPath, want string
	}{
		{"../x", `volumeMount "v": subPath "../x" must be a relative path not going above the volume`},
		{"/abs", `volumeMount "v": subPath "/abs" must be a relative path not going above the volume`},
		{"escape", `subpath "` + outside + `" not within volume path`},
	} {
		h := newHarness(t, nil, config(nil), nil)
		vol := t.TempDir()
		if err := os.Symlink(outside, filepath.Join(vol, "escape")); err != nil {
			t.Fatal(err)
		}
		ct := ctr("c", "i")
		ct.VolumeMounts = []corev1.VolumeMount{{Name: "v", MountPath: "/v", SubPath: c.subPath}}
		pod := newPod("p", ct)
		pod.Spec.Volumes = []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: vol}}}}
		h.add(pod)
		h.runUntil(time.Second)
		if n := len(h.calls("CreateContainer", "")); n != 0 {
			t.Errorf("%s: container created", c.subPath)
		}
		w := h.pod("p").Status.ContainerStatuses[0].State.Waiting
		if w == nil || !strings.HasPrefix(w.Message, c.want) {
			t.Errorf("%s: waiting %+v, want %q", c.subPath, w, c.want)
		}
	}
}

// The pod's data directories are made at every sync, as the kubelet's makePodDataDirs: one removed
// under a running pod is back by the next periodic sync (--sync-frequency, a minute here), not
// before.
func TestPodDataDirsRemadeAtEverySync(t *testing.T) {
	root := t.TempDir()
	h := newHarness(t, nil, config(nil), func(o *Options) { o.Node.RootDir = root })
	h.add(newPod("web", ctr("app", "nginx")))
	h.runUntil(time.Second)
	plugins := filepath.Join(root, "pods", "uid-web", "plugins")
	for _, d := range []string{filepath.Join(root, "pods", "uid-web"), plugins, filepath.Join(root, "pods", "uid-web", "volumes")} {
		if fi, err := os.Stat(d); err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o750 {
			t.Fatalf("%s after the first sync: %v %v", d, fi, err)
		}
	}
	if err := os.Remove(plugins); err != nil {
		t.Fatal(err)
	}
	h.runUntil(30 * time.Second)
	if _, err := os.Stat(plugins); err == nil {
		t.Fatal("remade before any sync")
	}
	h.runUntil(62 * time.Second)
	if _, err := os.Stat(plugins); err != nil {
		t.Fatalf("not remade by the periodic sync: %v", err)
	}
}

// recordingSubPaths stands in for the host's subPath mounter: it records the binds and unmounts.
type recordingSubPaths struct {
	mu               sync.Mutex
	binds, unmounted []string
}

func (r *recordingSubPaths) BindSubPath(volume, subPath, target string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.binds = append(r.binds, filepath.Join(volume, subPath)+" -> "+target)
	return os.MkdirAll(target, 0o750)
}

func (r *recordingSubPaths) Unmount(target string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.unmounted = append(r.unmounted, target)
	return nil
}

// With a subPath mounter the runtime mounts the bind under volume-subpaths/<volume>/<container>/
// <index>, as the kubelet's doBindSubPath, and the binds are unmounted when the pod goes.
func TestSubPathBindMounted(t *testing.T) {
	sp := &recordingSubPaths{}
	root := t.TempDir()
	h := newHarness(t, nil, config(nil), func(o *Options) { o.Node = Node{RootDir: root, SubPaths: sp} })
	vol := t.TempDir()
	ct := ctr("c", "i")
	ct.VolumeMounts = []corev1.VolumeMount{{Name: "v", MountPath: "/whole"}, {Name: "v", MountPath: "/v", SubPath: "a/b"}}
	pod := newPod("p", ct)
	pod.Spec.Volumes = []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: vol}}}}
	h.add(pod)
	h.runUntil(time.Second)
	target := filepath.Join(root, "pods", "uid-p", "volume-subpaths", "v", "c", "1")
	if want := []string{filepath.Join(vol, "a/b") + " -> " + target}; !slices.Equal(sp.binds, want) {
		t.Errorf("binds %v, want %v", sp.binds, want)
	}
	ctrs := sent[*runtimeapi.CreateContainerRequest](h, "CreateContainer")
	if len(ctrs) != 1 {
		t.Fatalf("%d containers; events %q", len(ctrs), h.rec.lines())
	}
	if ms := ctrs[0].Config.Mounts; len(ms) < 2 || ms[0].HostPath != vol || ms[1].HostPath != target {
		t.Fatalf("mounts %v, want the whole volume %s, then the bind %s", ms, vol, target)
	}
	h.remove(pod)
	h.runUntil(time.Minute)
	if !slices.Equal(sp.unmounted, []string{target}) {
		t.Errorf("unmounted %v, want %v", sp.unmounted, []string{target})
	}
}
