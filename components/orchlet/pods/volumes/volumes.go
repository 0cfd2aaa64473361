package volumes

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	corev1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"

	"orch.io/orch/components/orchlet/events"
	"orch.io/orch/components/orchlet/pods/flexvolume"
)

// Volume plugin directories under --root-dir/pods/<uid>/volumes: Kubernetes' escaped plugin
// names (kubernetes.io~empty-dir), renamed.
const (
	emptyDirPlugin    = "orch.io~empty-dir"
	downwardAPIPlugin = "orch.io~downward-api"
	projectedPlugin   = "orch.io~projected"

	// defaultTerminationMessagePath is the API's default for a container's terminationMessagePath.
	defaultTerminationMessagePath = "/dev/termination-log"
	// ReasonFailedMount is the kubelet's event reason for a volume that could not be set up.
	ReasonFailedMount = "FailedMount"
)

// volumeType names a volume's source as the API spells it.
func volumeType(v *corev1.Volume) string {
	switch s := v.VolumeSource; {
	case s.EmptyDir != nil:
		return "emptyDir"
	case s.HostPath != nil:
		return "hostPath"
	case s.DownwardAPI != nil:
		return "downwardAPI"
	case s.Projected != nil:
		return "projected"
	case s.ConfigMap != nil:
		return "configMap"
	case s.Secret != nil:
		return "secret"
	case s.PersistentVolumeClaim != nil:
		return "persistentVolumeClaim"
	case s.Ephemeral != nil:
		return "ephemeral"
	case s.CSI != nil:
		return "csi"
	case s.NFS != nil:
		return "nfs"
	case s.Image != nil:
		return "image"
	case s.FlexVolume != nil:
		return "flexVolume"
	case s.ISCSI != nil:
		return "iscsi"
	case s.FC != nil:
		return "fc"
	}
	return "an unknown volume source"
}

// Unsupported names the first volume or mount this agent cannot set up.
func (m *Manager) Unsupported(pod *corev1.Pod) string {
	for i := range pod.Spec.Volumes {
		v := &pod.Spec.Volumes[i]
		at := fmt.Sprintf("spec.volumes[%d]", i)
		switch t := volumeType(v); t {
		case "emptyDir":
			switch v.EmptyDir.Medium {
			case corev1.StorageMediumDefault:
			case corev1.StorageMediumMemory:
				if m.node.Tmpfs == nil {
					return fmt.Sprintf("%s.emptyDir.medium: Memory: volume %q needs a tmpfs, which this host cannot mount", at, v.Name)
				}
			default:
				return fmt.Sprintf("%s.emptyDir.medium: %s: volume %q: only the node's disk and Memory are supported", at, v.EmptyDir.Medium, v.Name)
			}
		case "image":
			if !m.imageVolumes {
				return fmt.Sprintf("%s: volume %q of type image needs the ImageVolume feature gate", at, v.Name)
			}
		case "flexVolume":
			switch {
			case m.node.Flex == nil:
				return fmt.Sprintf("%s: volume %q of type flexVolume is not supported on a simulated node", at, v.Name)
			case v.FlexVolume.SecretRef != nil && m.objects == nil:
				return fmt.Sprintf("%s.flexVolume.secretRef: volume %q: reading API objects is not supported by this orchlet", at, v.Name)
			}
		case "hostPath", "downwardAPI":
		case "configMap", "secret":
			if m.objects == nil {
				return fmt.Sprintf("%s: volume %q of type %s is not supported by this orchlet", at, v.Name, t)
			}
		case "projected":
			for j, s := range v.Projected.Sources {
				switch {
				case s.DownwardAPI != nil:
				case (s.ConfigMap != nil || s.Secret != nil) && m.objects != nil:
				case s.ServiceAccountToken != nil && m.tokens != nil:
				case m.objects != nil && m.tokens != nil:
					return fmt.Sprintf("%s.projected.sources[%d]: volume %q: only downwardAPI, configMap, secret and serviceAccountToken sources are supported by this orchlet", at, j, v.Name)
				case m.objects != nil:
					return fmt.Sprintf("%s.projected.sources[%d]: volume %q: only downwardAPI, configMap and secret sources are supported by this orchlet", at, j, v.Name)
				default:
					return fmt.Sprintf("%s.projected.sources[%d]: volume %q: only downwardAPI sources are supported by this orchlet", at, j, v.Name)
				}
			}
		default:
			return fmt.Sprintf("%s: volume %q of type %s is not supported by this orchlet", at, v.Name, t)
		}
	}
	for _, c := range allContainers(pod) {
		for _, vm := range c.VolumeMounts {
			if vm.RecursiveReadOnly != nil && *vm.RecursiveReadOnly != corev1.RecursiveReadOnlyDisabled {
				return fmt.Sprintf("container %s volumeMount %q: recursiveReadOnly %s is not supported by this orchlet", c.Name, vm.Name, *vm.RecursiveReadOnly)
			}
			if vm.SubPathExpr != "" {
				return fmt.Sprintf("container %s volumeMount %q: subPathExpr is not supported by this orchlet", c.Name, vm.Name)
			}
		}
		if len(c.VolumeDevices) > 0 {
			return fmt.Sprintf("container %s: volumeDevices are not supported by this orchlet", c.Name)
		}
	}
	return ""
}

// podDir is --root-dir/pods/<uid>, the kubelet's getPodDir.
func (m *Manager) podDir(pod *corev1.Pod) string {
	return filepath.Join(m.node.RootDir, "pods", string(pod.UID))
}

// MakePodDataDirs makes the pod's directory and its volumes and plugins directories at every sync,
// as the kubelet's SyncPod does: a directory removed under a running pod comes back by its next
// sync. The pod's directory is made as their parent, and a sync of a pod whose directories stand
// looks at one, not three (a system call each, on every sync of every pod): the pod directory's
// status, the same as when the last sync found both standing. Removing, renaming or making an
// entry in it changes its modification and change times, and removing a directory its link count
// too, so any such change since makes this sync look at (and make) both again.
func (m *Manager) MakePodDataDirs(pod *corev1.Pod) error {
	m.mu.Lock()
	last, ok := m.dataDirs[pod.UID]
	m.mu.Unlock()
	dir := last.dir
	if !ok {
		dir = m.podDir(pod)
	}
	var st syscall.Stat_t
	statErr := syscall.Stat(dir, &st)
	now := podDirStamp{dir: dir, dev: st.Dev, ino: st.Ino, nlink: uint64(st.Nlink), mtime: st.Mtim, ctime: st.Ctim}
	if statErr == nil && ok && now == last {
		return nil
	}
	for _, d := range []string{filepath.Join(dir, "volumes"), filepath.Join(dir, "plugins")} {
		if err := os.MkdirAll(d, 0o750); err != nil {
			return err
		}
	}
	if statErr == nil {
		// The status read before making them: if they made anything, the next sync's differs and
		// looks again, and finds them standing.
		m.mu.Lock()
		m.dataDirs[pod.UID] = now
		m.mu.Unlock()
	}
	return nil
}

// podDirStamp is a pod directory's path and what its status said when its volumes and plugins
// directories stood.
type podDirStamp struct {
	dir             string
	dev, ino, nlink uint64
	mtime, ctime    syscall.Timespec
}

// volumePath is where a volume lives on the host: its hostPath, or its directory under the pod's.
func (m *Manager) volumePath(pod *corev1.Pod, v *corev1.Volume) string {
	switch {
	case v.HostPath != nil:
		return v.HostPath.Path
	case v.EmptyDir != nil:
		return filepath.Join(m.podDir(pod), "volumes", emptyDirPlugin, v.Name)
	case v.DownwardAPI != nil:
		return filepath.Join(m.podDir(pod), "volumes", downwardAPIPlugin, v.Name)
	case v.ConfigMap != nil:
		return filepath.Join(m.podDir(pod), "volumes", configMapPlugin, v.Name)
	case v.Secret != nil:
		return filepath.Join(m.podDir(pod), "volumes", secretPlugin, v.Name)
	case v.FlexVolume != nil:
		return filepath.Join(m.podDir(pod), "volumes", flexvolume.PluginDir(v.FlexVolume.Driver), v.Name)
	}
	return filepath.Join(m.podDir(pod), "volumes", projectedPlugin, v.Name)
}

// VolumeDir is where the pod's volume lives on the node, for the volume stats calculator.
func (m *Manager) VolumeDir(pod *corev1.Pod, v *corev1.Volume) string { return m.volumePath(pod, v) }

// SetUp is the volume manager's WaitForAttachAndMount for the supported plugins: emptyDir
// made world-writable (on a tmpfs for medium Memory), hostPath checked by type, downward API
// files written. A failure is the kubelet's FailedMount event, and the pod waits.
func (m *Manager) SetUp(ctx context.Context, p Pod) error {
	pod := p.Pod
	for i := range pod.Spec.Volumes {
		v := &pod.Spec.Volumes[i]
		if err := m.setUpVolume(ctx, p, v); err != nil {
			m.rec.Eventf(events.PodReference(pod), corev1.EventTypeWarning, ReasonFailedMount, "Mount", "MountVolume.SetUp failed for volume %q : %v", v.Name, err)
			return fmt.Errorf("volume %s: %w", v.Name, err)
		}
	}
	return nil
}

func (m *Manager) setUpVolume(ctx context.Context, p Pod, v *corev1.Volume) error {
	if err := m.setUpVolumeFiles(ctx, p, v); err != nil {
		return err
	}
	// The emptyDir, downwardAPI and projected plugins give the pod's fsGroup the volume; all but
	// emptyDir are read-only to it.
	sc := p.Pod.Spec.SecurityContext
	switch {
	case sc == nil || sc.FSGroup == nil || v.HostPath != nil || v.Image != nil:
	case v.FlexVolume != nil:
		// The flexvolume mounter gives the pod's fsGroup a volume mounted read-write.
		if !v.FlexVolume.ReadOnly {
			return setVolumeOwnership(m.volumePath(p.Pod, v), *sc.FSGroup, false)
		}
	default:
		return setVolumeOwnership(m.volumePath(p.Pod, v), *sc.FSGroup, v.EmptyDir == nil)
	}
	return nil
}

// setVolumeOwnership is volume.SetVolumeOwnership with the Always policy: every file gets the
// group, group read-write (read-only for a read-only volume), and directories the setgid bit so
// new files inherit it.
func setVolumeOwnership(dir string, fsGroup int64, readOnly bool) error {
	return filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := os.Lchown(path, -1, int(fsGroup)); err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil || info.Mode()&fs.ModeSymlink != 0 {
			return err
		}
		mask := fs.FileMode(0o660)
		if readOnly {
			mask = 0o440
		}
		if info.IsDir() {
			mask |= fs.ModeSetgid | 0o110
		}
		return os.Chmod(path, info.Mode()|mask)
	})
}

func (m *Manager) setUpVolumeFiles(ctx context.Context, p Pod, v *corev1.Volume) error {
	dir := m.volumePath(p.Pod, v)
	switch {
	case v.Image != nil:
		return nil // the runtime mounts the image; its pull comes with the container that mounts it
	case v.HostPath != nil:
		return checkHostPathType(v.HostPath.Path, v.HostPath.Type)
	case v.EmptyDir != nil:
		if err := os.MkdirAll(dir, 0o750); err != nil {
			return err
		}
		if v.EmptyDir.Medium == corev1.StorageMediumMemory {
			if err := m.mountTmpfs(p, dir, m.emptyDirMemorySize(p.Pod, v.EmptyDir)); err != nil {
				return err
			}
		}
		// The empty_dir plugin's setupDir: world-writable whatever the umask.
		return os.Chmod(dir, 0o777)
	case v.DownwardAPI != nil:
		return m.writeDownwardAPI(p, dir, v.DownwardAPI.Items, v.DownwardAPI.DefaultMode)
	case v.FlexVolume != nil:
		return m.mountFlex(ctx, p.Pod, v, dir)
	case (v.Secret != nil || v.Projected != nil) && m.node.Tmpfs != nil:
		// The secret and projected plugins wrap a memory emptyDir: a secret or a token never
		// reaches the node's disk.
		if err := os.MkdirAll(dir, 0o750); err != nil {
			return err
		}
		if err := m.mountTmpfs(p, dir, m.emptyDirMemorySize(p.Pod, &corev1.EmptyDirVolumeSource{})); err != nil {
			return err
		}
		return m.writeObjectVolume(ctx, p, v)
	case v.ConfigMap != nil, v.Secret != nil, v.Projected != nil:
		return m.writeObjectVolume(ctx, p, v)
	}
	return fmt.Errorf("unsupported volume type %s", volumeType(v))
}

// mountFlex has the volume's driver mount it on dir once for the pod's lifetime, with the options
// the kubelet's flexvolume mounter gives (the kubernetes.io/ names drivers read: filesystem type,
// read-write, the pod's name, namespace, uid and service account, its fsGroup, and each key of
// secretRef base64-encoded); teardown has the driver unmount it.
func (m *Manager) mountFlex(ctx context.Context, pod *corev1.Pod, v *corev1.Volume, dir string) error {
	m.mu.Lock()
	_, mounted := m.flex[pod.UID][dir]
	m.mu.Unlock()
	if mounted {
		return nil
	}
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return err
	}
	f := v.FlexVolume
	rw := "rw"
	if f.ReadOnly {
		rw = "ro"
	}
	opts := map[string]string{
		"kubernetes.io/fsType": f.FSType, "kubernetes.io/readwrite": rw,
		"kubernetes.io/pod.name": pod.Name, "kubernetes.io/pod.namespace": pod.Namespace, "kubernetes.io/pod.uid": string(pod.UID),
		"kubernetes.io/serviceAccount.name": pod.Spec.ServiceAccountName,
	}
	if sc := pod.Spec.SecurityContext; sc != nil && sc.FSGroup != nil {
		opts["kubernetes.io/mounterArgs.FsGroup"] = strconv.FormatInt(*sc.FSGroup, 10)
	}
	if f.SecretRef != nil && f.SecretRef.Name != "" {
		data, err := m.ReadObject(ctx, true, pod.Namespace, f.SecretRef.Name, nil)
		if err != nil {
			return fmt.Errorf("couldn't get secret %s/%s: %w", pod.Namespace, f.SecretRef.Name, err)
		}
		for k, val := range data {
			opts["kubernetes.io/secret/"+k] = base64.StdEncoding.EncodeToString(val)
		}
	}
	for k, val := range f.Options {
		opts[k] = val
	}
	if err := m.node.Flex.Mount(ctx, f.Driver, dir, opts); err != nil {
		return err
	}
	m.mu.Lock()
	if m.flex[pod.UID] == nil {
		m.flex[pod.UID] = map[string]string{}
	}
	m.flex[pod.UID][dir] = f.Driver
	m.mu.Unlock()
	return nil
}

// mountTmpfs mounts a tmpfs of size on dir once for the pod's lifetime; teardown unmounts it.
func (m *Manager) mountTmpfs(p Pod, dir string, size int64) error {
	// The outer map is shared by the pod workers; a pod's own set only its worker touches.
	m.mu.Lock()
	mounted := m.tmpfs[p.Pod.UID]
	if mounted == nil {
		mounted = map[string]bool{}
		m.tmpfs[p.Pod.UID] = mounted
	}
	m.mu.Unlock()
	if mounted[dir] {
		return nil
	}
	if err := m.node.Tmpfs.MountTmpfs(dir, size); err != nil {
		return err
	}
	mounted[dir] = true
	return nil
}

// emptyDirMemorySize is the empty_dir plugin's calculateEmptyDirMemorySize: the sizeLimit, no
// more than the pod's memory limit, or without a limit the node's memory.
func (m *Manager) emptyDirMemorySize(pod *corev1.Pod, ed *corev1.EmptyDirVolumeSource) int64 {
	size := m.node.MemoryCapacity
	if lim, ok := resourcehelper.PodLimits(pod, resourcehelper.PodResourcesOptions{})[corev1.ResourceMemory]; ok && !lim.IsZero() {
		size = lim.Value()
	}
	if ed.SizeLimit != nil && ed.SizeLimit.Sign() > 0 && (size <= 0 || ed.SizeLimit.Value() < size) {
		size = ed.SizeLimit.Value()
	}
	return size
}

// checkHostPathType is the host_path plugin's checkTypeInternal, with its messages.
func checkHostPathType(path string, t *corev1.HostPathType) error {
	if t == nil || *t == corev1.HostPathUnset {
		return nil
	}
	fi, statErr := os.Stat(path)
	exists := statErr == nil
	mode := fs.FileMode(0)
	if exists {
		mode = fi.Mode()
	}
	switch *t {
	case corev1.HostPathDirectoryOrCreate:
		if !exists {
			return os.MkdirAll(path, 0o755)
		}
		fallthrough
	case corev1.HostPathDirectory:
		if !exists || !mode.IsDir() {
			return fmt.Errorf("hostPath type check failed: %s is not a directory", path)
		}
	case corev1.HostPathFileOrCreate:
		if !exists {
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				return err
			}
			f, err := os.OpenFile(path, os.O_CREATE, 0o644)
			if err != nil {
				return err
			}
			return f.Close()
		}
		fallthrough
	case corev1.HostPathFile:
		if !exists || !mode.IsRegular() {
			return fmt.Errorf("hostPath type check failed: %s is not a file", path)
		}
	case corev1.HostPathSocket:
		if !exists || mode&fs.ModeSocket == 0 {
			return fmt.Errorf("hostPath type check failed: %s is not a socket file", path)
		}
	case corev1.HostPathCharDev:
		if !exists || mode&fs.ModeCharDevice == 0 {
			return fmt.Errorf("hostPath type check failed: %s is not a character device", path)
		}
	case corev1.HostPathBlockDev:
		if !exists || mode&fs.ModeDevice == 0 || mode&fs.ModeCharDevice != 0 {
			return fmt.Errorf("hostPath type check failed: %s is not a block device", path)
		}
	default:
		return fmt.Errorf("%s is an invalid volume type", *t)
	}
	return nil
}

// TearDown unmounts the pod's tmpfs volumes and removes its directory, as the kubelet's
// cleanupOrphanedPodDirs does once the pod is gone; hostPath volumes are the host's and stay.
func (m *Manager) TearDown(pod *corev1.Pod) error {
	m.mu.Lock()
	mounted := m.tmpfs[pod.UID]
	m.mu.Unlock()
	for dir := range mounted {
		if err := m.node.Tmpfs.Unmount(dir); err != nil {
			return fmt.Errorf("unmounting %s: %w", dir, err)
		}
		delete(mounted, dir)
	}
	m.mu.Lock()
	delete(m.tmpfs, pod.UID)
	flex := m.flex[pod.UID]
	m.mu.Unlock()
	for dir, driver := range flex {
		if err := m.node.Flex.Unmount(context.Background(), driver, dir); err != nil {
			return fmt.Errorf("unmounting %s: %w", dir, err)
		}
		m.mu.Lock()
		delete(m.flex[pod.UID], dir)
		m.mu.Unlock()
	}
	m.mu.Lock()
	delete(m.flex, pod.UID)
	m.mu.Unlock()
	if m.tokens != nil {
		m.tokens.forget(string(pod.UID))
	}
	if err := m.cleanSubPaths(pod); err != nil {
		return err
	}
	if err := os.RemoveAll(m.podDir(pod)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	m.mu.Lock()
	delete(m.dataDirs, pod.UID)
	m.mu.Unlock()
	return nil
}

// Mounts is the kubelet's makeMounts (kubelet_pods.go): each volume mount (a subPath
// below the volume, created when missing), then the pod's /etc/hosts unless the container mounts
// its own.
func (m *Manager) Mounts(p Pod, c *corev1.Container) ([]*runtimeapi.Mount, error) {
	pod := p.Pod
	vols := map[string]*corev1.Volume{}
	for i := range pod.Spec.Volumes {
		vols[pod.Spec.Volumes[i].Name] = &pod.Spec.Volumes[i]
	}
	privileged := c.SecurityContext != nil && c.SecurityContext.Privileged != nil && *c.SecurityContext.Privileged
	var out []*runtimeapi.Mount
	mountsHosts := false
	for i, vm := range c.VolumeMounts {
		v := vols[vm.Name]
		if v == nil {
			return nil, fmt.Errorf("cannot find volume %q to mount into container %q", vm.Name, c.Name)
		}
		if v.Image != nil {
			if filepath.IsAbs(vm.SubPath) || strings.HasPrefix(filepath.Clean(vm.SubPath), "..") {
				return nil, fmt.Errorf("volumeMount %q: subPath %q must be a relative path not going above the volume", vm.Name, vm.SubPath)
			}
			propagation, err := mountPropagation(vm.MountPropagation, privileged)
			if err != nil {
				return nil, err
			}
			out = append(out, imageMount(vm, v, p.ImageVolumes[v.Name], propagation))
			continue
		}
		hostPath := m.volumePath(pod, v)
		if vm.SubPath != "" {
			if filepath.IsAbs(vm.SubPath) || strings.HasPrefix(filepath.Clean(vm.SubPath), "..") {
				return nil, fmt.Errorf("volumeMount %q: subPath %q must be a relative path not going above the volume", vm.Name, vm.SubPath)
			}
			hostPath = filepath.Join(hostPath, vm.SubPath)
			if v.HostPath != nil || v.EmptyDir != nil {
				if _, err := os.Stat(hostPath); errors.Is(err, fs.ErrNotExist) {
					// As the kubelet: a missing subPath is created with the volume's permissions.
					perm := fs.FileMode(0o755)
					if fi, err := os.Stat(m.volumePath(pod, v)); err == nil {
						perm = fi.Mode().Perm()
					}
					if err := os.MkdirAll(hostPath, perm); err != nil {
						return nil, fmt.Errorf("failed to mkdir %q: %w", hostPath, err)
					}
				}
			}
		}
		if vm.SubPath != "" {
			// A symlink in the volume must not lead the mount out of it (the subpather's check).
			base, err1 := filepath.EvalSymlinks(m.volumePath(pod, v))
			real, err2 := filepath.EvalSymlinks(hostPath)
			if err1 == nil && err2 == nil && real != base && !strings.HasPrefix(real, base+string(filepath.Separator)) {
				return nil, fmt.Errorf("subpath %q not within volume path %q", real, base)
			}
		}
		if vm.SubPath != "" && m.node.SubPaths != nil {
			// As the kubelet's doBindSubPath: the runtime mounts a bind of what was checked,
			// under --root-dir/pods/<uid>/volume-subpaths/<volume>/<container>/<index>.
			target := filepath.Join(m.podDir(pod), volumeSubpaths, v.Name, c.Name, strconv.Itoa(i))
			if err := m.node.SubPaths.BindSubPath(m.volumePath(pod, v), vm.SubPath, target); err != nil {
				return nil, fmt.Errorf("error creating subPath %q of volumeMount %q: %w", vm.SubPath, vm.Name, err)
			}
			hostPath = target
		}
		propagation, err := mountPropagation(vm.MountPropagation, privileged)
		if err != nil {
			return nil, err
		}
		if vm.MountPath == "/etc/hosts" {
			mountsHosts = true
		}
		out = append(out, &runtimeapi.Mount{
			ContainerPath: vm.MountPath,
			HostPath:      hostPath,
			Readonly:      vm.ReadOnly,
			// Volumes the kubelet manages (not a host path) are relabelled where SELinux is on.
			SelinuxRelabel: m.node.SELinux && v.HostPath == nil,
			Propagation:    propagation,
		})
	}
	// shouldMountHostsFile: once the pod has an address.
	if ips := m.PodIPs(p); !mountsHosts && len(ips) > 0 {
		file, err := m.writeEtcHosts(p, ips)
		if err != nil {
			return nil, err
		}
		out = append(out, &runtimeapi.Mount{ContainerPath: "/etc/hosts", HostPath: file, SelinuxRelabel: m.node.SELinux})
	}
	return out, nil
}

// TerminationMount is kuberuntime makeMounts' termination message file: a fresh file per
// container instance, world-writable, named here by the attempt where the kubelet draws a random
// id. As there, a file that cannot be made is logged and the container runs without it.
func (m *Manager) TerminationMount(pod *corev1.Pod, c *corev1.Container, attempt uint32) *runtimeapi.Mount {
	termPath := c.TerminationMessagePath
	if termPath == "" {
		termPath = defaultTerminationMessagePath
	}
	file := filepath.Join(m.podDir(pod), "containers", c.Name, fmt.Sprintf("%08x", attempt))
	err := os.MkdirAll(filepath.Dir(file), 0o750)
	if err == nil {
		err = os.WriteFile(file, nil, 0o666)
	}
	if err == nil {
		err = os.Chmod(file, 0o666)
	}
	if err != nil {
		m.log.Error(err, "Cannot create the termination-log file", "pod", klog.KObj(pod), "container", c.Name, "path", file)
		return nil
	}
	return &runtimeapi.Mount{ContainerPath: termPath, HostPath: file, SelinuxRelabel: m.node.SELinux}
}

// mountPropagation is the kubelet's translateMountPropagation.
func mountPropagation(mp *corev1.MountPropagationMode, privileged bool) (runtimeapi.MountPropagation, error) {
	if mp == nil {
		return runtimeapi.MountPropagation_PROPAGATION_PRIVATE, nil
	}
	switch *mp {
	case corev1.MountPropagationNone:
		return runtimeapi.MountPropagation_PROPAGATION_PRIVATE, nil
	case corev1.MountPropagationHostToContainer:
		return runtimeapi.MountPropagation_PROPAGATION_HOST_TO_CONTAINER, nil
	case corev1.MountPropagationBidirectional:
		if !privileged {
			return 0, errors.New("bidirectional mount propagation is available only to privileged containers")
		}
		return runtimeapi.MountPropagation_PROPAGATION_BIDIRECTIONAL, nil
	}
	return 0, fmt.Errorf("invalid MountPropagation mode: %q", *mp)
}

// writeEtcHosts writes the pod's hosts file as the kubelet's ensureHostsFile does: for a
// host-network pod the node's own, otherwise localhost, the pod's address and name, and its host
// aliases.
func (m *Manager) writeEtcHosts(p Pod, ips []string) (string, error) {
	pod := p.Pod
	file := filepath.Join(m.podDir(pod), "etc-hosts")
	var b strings.Builder
	if pod.Spec.HostNetwork {
		host, err := m.readFile("/etc/hosts")
		if err != nil {
			return "", fmt.Errorf("reading the node's /etc/hosts: %w", err)
		}
		b.WriteString("# Orch-managed hosts file (host network).\n")
		b.Write(host)
	} else {
		b.WriteString("# Orch-managed hosts file.\n")
		b.WriteString("127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\nfe00::0\tip6-localnet\nfe00::0\tip6-mcastprefix\nfe00::1\tip6-allnodes\nfe00::2\tip6-allrouters\n")
		hostname := pod.Name
		if pod.Spec.Hostname != "" {
			hostname = pod.Spec.Hostname
		}
		// managedHostsFileContent: a line for each of the pod's addresses.
		for _, ip := range ips {
			if pod.Spec.Subdomain != "" && m.domain != "" {
				fmt.Fprintf(&b, "%s\t%s.%s.%s.svc.%s\t%s\n", ip, hostname, pod.Spec.Subdomain, pod.Namespace, m.domain, hostname)
			} else {
				fmt.Fprintf(&b, "%s\t%s\n", ip, hostname)
			}
		}
	}
	if len(pod.Spec.HostAliases) > 0 {
		b.WriteString("\n# Entries added by HostAliases.\n")
		for _, a := range pod.Spec.HostAliases {
			fmt.Fprintf(&b, "%s\t%s\n", a.IP, strings.Join(a.Hostnames, "\t"))
		}
	}
	if err := os.MkdirAll(filepath.Dir(file), 0o750); err != nil {
		return "", err
	}
	return file, os.WriteFile(file, []byte(b.String()), 0o644)
}

// downwardAPIFile is the content of one downward API item.
func (m *Manager) downwardAPIFile(p Pod, item corev1.DownwardAPIVolumeFile) (string, error) {
	switch {
	case item.FieldRef != nil:
		return m.PodFieldValue(p, item.FieldRef)
	case item.ResourceFieldRef != nil:
		return m.ResourceFieldValue(p.Pod, nil, item.ResourceFieldRef)
	}
	return "", fmt.Errorf("downwardAPI item %s: no fieldRef or resourceFieldRef", item.Path)
}

// Updated rewrites the downward API volumes of a running pod whose labels or annotations
// changed, as the kubelet's volume manager remounts them on the next sync; a file that would not
// change is not rewritten.
func (m *Manager) Updated(p Pod) {
	for i := range p.Pod.Spec.Volumes {
		v := &p.Pod.Spec.Volumes[i]
		if (v.DownwardAPI == nil && v.Projected == nil) || readsObjects(v) {
			continue // a projection of objects is rewritten on the pod's next sync
		}
		if _, err := os.Lstat(filepath.Join(m.volumePath(p.Pod, v), "..data")); err != nil {
			continue // not set up yet: the sandbox's setup writes it
		}
		if err := m.setUpVolume(context.Background(), p, v); err != nil {
			m.rec.Eventf(events.PodReference(p.Pod), corev1.EventTypeWarning, ReasonFailedMount, "Mount", "MountVolume.SetUp failed for volume %q : %v", v.Name, err)
		}
	}
}

// writeDownwardAPI writes the items as the kubelet's AtomicWriter does: into a new timestamped
// directory, then ..data switched to it by one rename, each top-level name a link through ..data.
func (m *Manager) writeDownwardAPI(p Pod, dir string, items []corev1.DownwardAPIVolumeFile, defaultMode *int32) error {
	files := map[string]fileContent{}
	if err := m.downwardAPIFiles(p, items, defaultMode, files); err != nil {
		return err
	}
	return atomicWrite(dir, files, m.clk.Now().Format("2006_01_02_15_04_05."))
}

// downwardAPIFiles adds the files of downward API items to files.
func (m *Manager) downwardAPIFiles(p Pod, items []corev1.DownwardAPIVolumeFile, defaultMode *int32, files map[string]fileContent) error {
	for _, it := range items {
		data, err := m.downwardAPIFile(p, it)
		if err != nil {
			return err
		}
		mode := int32(corev1.DownwardAPIVolumeSourceDefaultMode)
		if defaultMode != nil {
			mode = *defaultMode
		}
		if it.Mode != nil {
			mode = *it.Mode
		}
		files[it.Path] = fileContent{data: []byte(data), mode: fs.FileMode(mode)}
	}
	return nil
}

type fileContent struct {
	data  []byte
	mode  fs.FileMode
	owner *int64 // nil: the agent's
}

// atomicWrite is AtomicWriter.Write: the files go into a fresh ..<timestamp> directory, a ..data
// link is renamed over the old one so readers see the old set or the new, never a mix, and the
// old directory and links to names no longer written are removed.
func atomicWrite(dir string, files map[string]fileContent, stamp string) error {
	for path := range files {
		if filepath.IsAbs(path) || strings.HasPrefix(filepath.Clean(path), "..") {
			return fmt.Errorf("invalid path %q: must be relative and may not contain '..'", path)
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	dataLink := filepath.Join(dir, "..data")
	old, _ := os.Readlink(dataLink)
	if old != "" && sameFiles(filepath.Join(dir, old), files) {
		return nil // AtomicWriter's shouldWritePayload: nothing changed
	}
	ts, err := os.MkdirTemp(dir, ".."+stamp)
	if err != nil {
		return err
	}
	for path, f := range files {
		full := filepath.Join(ts, path)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(full, f.data, f.mode); err != nil {
			return err
		}
		if err := os.Chmod(full, f.mode); err != nil {
			return err
		}
		if f.owner != nil {
			if err := os.Lchown(full, int(*f.owner), -1); err != nil {
				return err
			}
		}
	}
	if err := os.Chmod(ts, 0o755); err != nil {
		return err
	}
	tmpLink := filepath.Join(dir, "..data_tmp")
	_ = os.Remove(tmpLink)
	if err := os.Symlink(filepath.Base(ts), tmpLink); err != nil {
		return err
	}
	if err := os.Rename(tmpLink, dataLink); err != nil {
		return err
	}
	top := map[string]bool{}
	for path := range files {
		name := strings.Split(filepath.Clean(path), string(filepath.Separator))[0]
		top[name] = true
		link := filepath.Join(dir, name)
		if _, err := os.Lstat(link); errors.Is(err, fs.ErrNotExist) {
			if err := os.Symlink(filepath.Join("..data", name), link); err != nil {
				return err
			}
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), "..") && !top[e.Name()] && e.Type()&fs.ModeSymlink != 0 {
			if err := os.Remove(filepath.Join(dir, e.Name())); err != nil {
				return err
			}
		}
	}
	if old != "" && old != filepath.Base(ts) {
		return os.RemoveAll(filepath.Join(dir, old))
	}
	return nil
}

// sameFiles says the directory holds exactly the files, with their contents and modes.
func sameFiles(dir string, files map[string]fileContent) bool {
	n := 0
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		f, ok := files[rel]
		data, rerr := os.ReadFile(path)
		info, ierr := d.Info()
		if !ok || rerr != nil || ierr != nil || string(data) != string(f.data) || info.Mode().Perm() != f.mode.Perm() {
			return fs.ErrInvalid
		}
		n++
		return nil
	})
	return err == nil && n == len(files)
}

// volumeSubpaths is the kubelet's directory of subPath bind mounts under a pod's.
const volumeSubpaths = "volume-subpaths"

// cleanSubPaths unmounts the pod's subPath binds, volume-subpaths/<volume>/<container>/<index>,
// as the kubelet's CleanSubPaths, before the pod's directory goes.
func (m *Manager) cleanSubPaths(pod *corev1.Pod) error {
	if m.node.SubPaths == nil {
		return nil
	}
	targets, err := filepath.Glob(filepath.Join(m.podDir(pod), volumeSubpaths, "*", "*", "*"))
	if err != nil {
		return err
	}
	for _, t := range targets {
		if err := m.node.SubPaths.Unmount(t); err != nil {
			return fmt.Errorf("unmounting subpath %s: %w", t, err)
		}
	}
	return nil
}

// imageMount is the CRI mount of an image volume: the runtime mounts the image itself, always
// read-only (the image plugin's attributes), subPath naming a directory of it (kuberuntime
// makeMounts' Image and ImageSubPath).
func imageMount(vm corev1.VolumeMount, v *corev1.Volume, ref string, propagation runtimeapi.MountPropagation) *runtimeapi.Mount {
	return &runtimeapi.Mount{
		ContainerPath: vm.MountPath,
		Image:         &runtimeapi.ImageSpec{Image: ref, UserSpecifiedImage: v.Image.Reference},
		ImageSubPath:  vm.SubPath,
		Readonly:      true,
		Propagation:   propagation,
	}
}

func allContainers(pod *corev1.Pod) []corev1.Container {
	return append(append([]corev1.Container{}, pod.Spec.InitContainers...), pod.Spec.Containers...)
}
