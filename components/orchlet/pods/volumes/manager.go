package volumes

import (
	"context"
	"math/rand/v2"
	"sync"

	"github.com/benbjohnson/clock"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
)

// Node is what the volumes know of the machine and of the agent's command line.
type Node struct {
	// Name is the node's name, spec.nodeName for the downward API.
	Name string
	// HostIPs are the node's addresses, status.hostIP(s) for the downward API.
	HostIPs []string
	// Cores and MemoryCapacity are the node's CPUs and memory in bytes, the downward API's limits
	// of a container that sets none; MemoryCapacity also sizes a memory emptyDir without a limit.
	Cores          int
	MemoryCapacity int64
	// RootDir is --root-dir: pod volumes live under RootDir/pods/<uid>/volumes.
	RootDir string
	// SELinux says the host enforces SELinux, where the kubelet asks for volumes to be relabelled.
	SELinux bool
	// Tmpfs mounts emptyDir volumes of medium Memory; nil refuses them.
	Tmpfs Mounter
	// SubPaths bind-mounts each volume mount's subPath where the runtime mounts it from, as the
	// kubelet's subpather does; nil gives the runtime the path below the volume itself.
	SubPaths SubPathMounter
	// Flex runs the flexVolume drivers of --volume-plugin-dir; nil refuses flexVolume volumes.
	Flex FlexDrivers
}

// FlexDrivers mount and unmount flexVolume volumes by driver name; *flexvolume.Plugins is one.
type FlexDrivers interface {
	Mount(ctx context.Context, driver, dir string, options map[string]string) error
	Unmount(ctx context.Context, driver, dir string) error
}

// SubPathMounter is the kubelet's subpath.Interface on a host that can mount.
type SubPathMounter interface {
	// BindSubPath opens subPath below volume without following a symlink at any step, so that
	// what it opens cannot lie outside the volume, and bind-mounts it on target, made as a file or
	// a directory as the source is. A target that is already mounted is mounted again.
	BindSubPath(volume, subPath, target string) error
	// Unmount undoes BindSubPath; a target that is not mounted is not an error.
	Unmount(target string) error
}

// Mounter mounts the tmpfs of an emptyDir volume of medium Memory, as the kubelet's empty_dir
// plugin does; a host that cannot is given none, and such volumes are refused.
type Mounter interface {
	// MountTmpfs mounts a tmpfs at dir, of at most size bytes when size is positive.
	MountTmpfs(dir string, size int64) error
	// Unmount undoes MountTmpfs.
	Unmount(dir string) error
}

// Recorder records events; *events.Recorder is one.
type Recorder interface {
	Eventf(regarding *corev1.ObjectReference, eventType, reason, action, noteFormat string, args ...any)
}

// Options are what a Manager needs.
type Options struct {
	Clock    clock.Clock
	Recorder Recorder
	Logger   klog.Logger
	Node     Node
	// ImageVolumes is the ImageVolume gate: pods may mount images as volumes.
	ImageVolumes bool
	// ClusterDomain is --cluster-domain, in a pod's hosts file line when it has a subdomain.
	ClusterDomain string
	// ReadFile reads a file of the node by its absolute path: its /etc/hosts.
	ReadFile func(name string) ([]byte, error)
}

// Manager sets up and tears down pods' volumes.
type Manager struct {
	clk          clock.Clock
	rec          Recorder
	log          klog.Logger
	node         Node
	imageVolumes bool
	domain       string
	readFile     func(name string) ([]byte, error)
	objects      Objects       // nil: no API server to read configmaps and secrets from
	tokens       *tokenManager // nil: no API server to ask for service account tokens

	mu    sync.Mutex
	tmpfs map[types.UID]map[string]bool   // the tmpfs volumes mounted, by pod
	flex  map[types.UID]map[string]string // the flexVolume volumes mounted, by pod: their drivers by directory
	// dataDirs is each pod's directory as MakePodDataDirs last found it with its directories made.
	dataDirs map[types.UID]podDirStamp
}

// New is a volume manager.
func New(o Options) *Manager {
	return &Manager{clk: o.Clock, rec: o.Recorder, log: o.Logger, node: o.Node, imageVolumes: o.ImageVolumes,
		domain: o.ClusterDomain, readFile: o.ReadFile, tmpfs: map[types.UID]map[string]bool{}, flex: map[types.UID]map[string]string{},
		dataDirs: map[types.UID]podDirStamp{}}
}

// SetObjects gives the volumes the API's configmaps and secrets; call it before the pods' first
// sync. Without it, pods that read them are refused by name.
func (m *Manager) SetObjects(o Objects) { m.objects = o }

// SetTokens gives the volumes the API's TokenRequest; call it before the pods' first sync. Without
// it, pods with serviceAccountToken projections are refused by name.
func (m *Manager) SetTokens(t Tokens) {
	m.tokens = &tokenManager{client: t, clock: m.clk, cache: map[string]*authenticationv1.TokenRequest{}, jitter: rand.Float64}
}

// Pod is a pod whose volumes are set up: its spec, its sandbox's address, and the image references
// of its image volumes, by volume.
type Pod struct {
	Pod          *corev1.Pod
	PodIP        string
	ImageVolumes map[string]string
}
