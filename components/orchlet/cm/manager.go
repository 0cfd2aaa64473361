package cm

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/benbjohnson/clock"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"orch.io/orch/components/apis/orchlet/v1beta1"
	"orch.io/orch/components/orchlet/events"
	"orch.io/orch/components/orchlet/pods/qos"
	"orch.io/orch/components/periodic"
)

// The kubelet's node allocatable events, regarding the Node.
const (
	ReasonSuccessfulNodeAllocatableEnforcement = "NodeAllocatableEnforced"
	ReasonFailedNodeAllocatableEnforcement     = "FailedNodeAllocatableEnforcement"
)

// The container manager's periods: the system containers are checked every minute (as is a
// failed update of the pods' cgroup), the agent's OOM score every 5 minutes when it has no cgroup
// of its own.
const (
	ensurePeriod   = time.Minute
	periodicPeriod = 5 * time.Minute
)

// Recorder records the enforcement's events.
type Recorder interface {
	Eventf(regarding *corev1.ObjectReference, eventType, reason, action, noteFormat string, args ...any)
}

// Options are the container manager's configuration and machine.
type Options struct {
	Clock  clock.Clock
	Logger klog.Logger
	// Node names the Node the events regard.
	Node     string
	Recorder Recorder
	Config   *v1beta1.OrchletConfiguration
	// Resources are the node's (NodeResources).
	Resources Resources
	// Cgroups is the host's cgroup filesystem; nil on a simulated machine, where nothing is
	// written and the agent's own process is not touched.
	Cgroups *Hierarchy
	// Procfs is where procfs is mounted; Pid the agent's process.
	Procfs string
	Pid    int
	// HugePageSizes are the host's huge page sizes in bytes, each given a limit on the cgroups
	// where the hierarchy has the hugetlb controller.
	HugePageSizes []int64
	// SetOpenFiles sets the agent's RLIMIT_NOFILE; nil is SetOpenFiles.
	SetOpenFiles func(uint64) error
	// RuntimeCgroups is --runtime-cgroups, the runtime's cgroup reported in the stats summary.
	RuntimeCgroups string
	// Started is when the agent started, the kubelet system container's start time.
	Started time.Time
}

// Manager is the container manager: it applies the agent's process settings and enforces node
// allocatable at Start, then keeps the system containers and the pods' cgroup as configured.
type Manager struct {
	o       Options
	systemd bool
	system  SystemContainers
	// podsCgroup is orchpods as the driver writes it; "" without --cgroups-per-qos.
	podsCgroup string
	// podsPending: the pods' cgroup limits still to be written (the kubelet retries every minute).
	podsPending bool
	nextEnsure  time.Time
	nextOOM     time.Time

	mu sync.Mutex
	// cpu is each system container's CPU time when last read, for its rate.
	cpu map[string]cpuSample
}

// New checks what the kubelet's container manager refuses at its creation.
func New(o Options) (*Manager, error) {
	c := o.Config
	if o.Clock == nil || c == nil {
		return nil, errors.New("cm: a clock and a configuration are required")
	}
	if c.SystemCgroups == "/" {
		return nil, errors.New("--system-cgroups (systemCgroups): system container cannot be root (\"/\")")
	}
	if o.SetOpenFiles == nil {
		o.SetOpenFiles = SetOpenFiles
	}
	if o.Cgroups != nil && !o.Cgroups.HugeTLB() {
		o.HugePageSizes = nil
	}
	m := &Manager{o: o, systemd: c.CgroupDriver == "systemd", cpu: map[string]cpuSample{}}
	m.system = SystemContainers{Procfs: o.Procfs, Pid: o.Pid, OOMScoreAdj: c.OOMScoreAdj, Orchlet: c.KubeletCgroups, System: c.SystemCgroups}
	if o.Cgroups != nil {
		m.system.Cgroups = *o.Cgroups
	}
	if c.CgroupsPerQOS {
		m.podsCgroup = PodsCgroup(c)
	}
	return m, nil
}

// PodsCgroup is the cgroup every pod's sits under, orchpods under --cgroup-root (the kubelet's
// NodeAllocatableRoot), as --cgroup-driver writes it.
func PodsCgroup(c *v1beta1.OrchletConfiguration) string {
	var name []string
	for _, p := range strings.Split(c.CgroupRoot, "/") {
		if p != "" {
			name = append(name, p)
		}
	}
	return qos.CgroupPath(append(name, "orchpods"), c.CgroupDriver == "systemd")
}

// ReservedCgroup is a --kube-reserved-cgroup or --system-reserved-cgroup as the driver writes
// it: with systemd a slice name is parsed into its components and expanded again
// ("/system.slice", "/orch-reserved.slice" as "/orch.slice/orch-reserved.slice").
func ReservedCgroup(name string, systemd bool) string {
	if !systemd {
		return path.Clean("/" + name)
	}
	base := strings.TrimSuffix(path.Base(name), ".slice")
	if base == "" || base == "/" {
		return "/"
	}
	parts := strings.Split(base, "-")
	for i, p := range parts {
		parts[i] = strings.ReplaceAll(p, "_", "-")
	}
	return qos.CgroupPath(parts, true)
}

// Start is what the kubelet does before it runs pods: its OOM score adjustment and open-files
// limit (a failure logged, as the kubelet logs it), then the pods' cgroup sized to node
// allocatable and the reserved cgroups limited to their reservations (a reserved cgroup that
// does not exist, or refuses its limits, stops the start), then the system containers.
func (m *Manager) Start() error {
	if m.o.Cgroups == nil {
		return nil
	}
	c, log := m.o.Config, m.o.Logger
	if err := ApplyOOMScoreAdj(m.o.Procfs, m.o.Pid, c.OOMScoreAdj); err != nil {
		log.Info("Failed to ApplyOOMScoreAdj", "err", err)
	}
	if err := m.o.SetOpenFiles(uint64(c.MaxOpenFiles)); err != nil {
		log.Error(err, "Failed to set rlimit on max file handles", "maxOpenFiles", c.MaxOpenFiles)
	}
	if m.podsCgroup != "" {
		m.podsPending = true
		if err := m.updatePods(); err != nil {
			if verr := m.o.Cgroups.Validate(m.podsCgroup); verr != nil {
				return fmt.Errorf("creating the pods' cgroup %s: %w", m.podsCgroup, err)
			}
		}
	}
	if err := m.enforceReserved(); err != nil {
		return err
	}
	now := m.o.Clock.Now()
	m.ensure(now)
	m.nextEnsure, m.nextOOM = now.Add(ensurePeriod), now.Add(periodicPeriod)
	return nil
}

// updatePods writes the pods' cgroup limits, with the kubelet's events: an update refused (a
// limit below what the pods use) is retried every minute until the evictions bring them under.
func (m *Manager) updatePods() error {
	cfg := CgroupConfig(m.o.Resources.PodsLimits, false, m.o.HugePageSizes)
	err := m.o.Cgroups.Set(m.podsCgroup, cfg)
	node := events.NodeReference(m.o.Node)
	if err != nil {
		m.event(node, corev1.EventTypeWarning, ReasonFailedNodeAllocatableEnforcement, "Failed to update Node Allocatable Limits %q: %v", m.podsCgroup, err)
		return err
	}
	m.podsPending = false
	m.event(node, corev1.EventTypeNormal, ReasonSuccessfulNodeAllocatableEnforcement, "Updated Node Allocatable limit across pods")
	return nil
}

// enforceReserved limits --system-reserved-cgroup and --kube-reserved-cgroup to their
// reservations for the levels of --enforce-node-allocatable that name them (the compressible
// levels: cpu shares only). The cgroups must exist: the kubelet does not make them.
func (m *Manager) enforceReserved() error {
	c := m.o.Config
	for _, e := range []struct {
		level, label, cgroup string
		reserved             corev1.ResourceList
		compressible         bool
	}{
		{"system-reserved", "System Reserved", c.SystemReservedCgroup, m.o.Resources.SystemReserved, false},
		{"kube-reserved", "Kube Reserved", c.KubeReservedCgroup, m.o.Resources.KubeReserved, false},
		{"system-reserved-compressible", "System Reserved Compressible", c.SystemReservedCgroup, m.o.Resources.SystemReserved, true},
		{"kube-reserved-compressible", "Kube Reserved Compressible", c.KubeReservedCgroup, m.o.Resources.KubeReserved, true},
	} {
		if !enforced(c.EnforceNodeAllocatable, e.level) {
			continue
		}
		name := ReservedCgroup(e.cgroup, m.systemd)
		err := m.o.Cgroups.Validate(name)
		if err == nil {
			err = m.o.Cgroups.Set(name, CgroupConfig(e.reserved, e.compressible, m.o.HugePageSizes))
		}
		node := events.NodeReference(m.o.Node)
		if err != nil {
			msg := fmt.Sprintf("Failed to enforce %s Cgroup Limits on %q: %v", e.label, name, err)
			m.event(node, corev1.EventTypeWarning, ReasonFailedNodeAllocatableEnforcement, "%s", msg)
			return fmt.Errorf("--enforce-node-allocatable (enforceNodeAllocatable) %s: %s", e.level, msg)
		}
		who := "system reserved"
		if strings.HasPrefix(e.level, "kube") {
			who = "kube reserved"
		}
		m.event(node, corev1.EventTypeNormal, ReasonSuccessfulNodeAllocatableEnforcement, "Updated limits on %s cgroup %v", who, name)
	}
	return nil
}

// enforced says whether a level is on, orch's spelling of the product's levels (orch-reserved)
// counting as Kubernetes' (kube-reserved).
func enforced(levels []string, level string) bool {
	return slices.Contains(levels, level) || slices.Contains(levels, strings.Replace(level, "kube-", "orch-", 1))
}

// ensure moves the agent and the system's processes into their cgroups and applies the agent's
// OOM score adjustment, logging what fails, as the kubelet's ensure-state functions do.
func (m *Manager) ensure(time.Time) {
	c := m.o.Config
	if c.KubeletCgroups != "" {
		if err := m.system.EnsureOrchlet(); err != nil {
			m.o.Logger.Info("Failed to ensure state", "containerName", c.KubeletCgroups, "err", err)
		}
	}
	if c.SystemCgroups != "" {
		if err := m.system.EnsureSystem(); err != nil {
			m.o.Logger.Info("Failed to ensure state", "containerName", c.SystemCgroups, "err", err)
		}
	}
}

// Step does what is due at now: the system containers and a pending update of the pods' cgroup
// every minute, the agent's OOM score every 5 minutes when it has no cgroup of its own.
func (m *Manager) Step(now time.Time) {
	if !now.Before(m.nextEnsure) {
		m.ensure(now)
		if m.podsPending {
			_ = m.updatePods()
		}
		m.nextEnsure = now.Add(ensurePeriod)
	}
	if !now.Before(m.nextOOM) {
		if m.o.Config.KubeletCgroups == "" {
			if err := m.system.EnsureOrchlet(); err != nil {
				m.o.Logger.Error(err, "Failed to ensure process in container with oom score")
			}
		}
		m.nextOOM = now.Add(periodicPeriod)
	}
}

// NextDeadline is when Step has something to do next.
func (m *Manager) NextDeadline() time.Time {
	if m.nextOOM.Before(m.nextEnsure) {
		return m.nextOOM
	}
	return m.nextEnsure
}

// Run steps the manager at its deadlines until ctx ends; on a simulated machine it waits.
func (m *Manager) Run(ctx context.Context) error {
	if m.o.Cgroups == nil {
		<-ctx.Done()
		return ctx.Err()
	}
	return periodic.Run(ctx, m.o.Clock, func(context.Context) { m.Step(m.o.Clock.Now()) }, m.NextDeadline)
}

func (m *Manager) event(regarding *corev1.ObjectReference, eventType, reason, format string, args ...any) {
	if m.o.Recorder != nil {
		m.o.Recorder.Eventf(regarding, eventType, reason, "Enforce", format, args...)
	}
}
