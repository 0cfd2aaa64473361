package pods

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"orch.io/orch/components/orchlet/pods/qos"
)

// housekeepingPeriod is how often the pod cgroups are looked over, as the kubelet's housekeeping.
const housekeepingPeriod = 2 * time.Second

// housekeeping removes the cgroups of pods the agent no longer knows, the part of the kubelet's
// HandlePodCleanups that nothing else here does (cleanupOrphanedPodCgroups): an agent killed, or
// an orphan torn down without its spec, leaves them. It waits, as the kubelet's does, for the
// sources to have sent their pods; the cgroups are listed before the pods known are read.
func (m *Manager) housekeeping() {
	if !m.sourcesDelivered() {
		return
	}
	present, err := m.qos.PodCgroups()
	if err != nil {
		m.log.Error(err, "Listing the pod cgroups failed")
		return
	}
	known := map[types.UID]bool{}
	m.relister.AddPods(known)
	m.shared.Lock()
	for uid := range m.pods {
		known[uid] = true
	}
	m.shared.Unlock()
	volumesLeft := map[types.UID]bool{}
	for _, c := range present {
		if !known[c.UID] && m.podVolumesMounted(c.UID) {
			volumesLeft[c.UID] = true
		}
	}
	do := qos.JudgeOrphans(qos.OrphanInput{Present: present, Known: known, VolumesLeft: volumesLeft,
		UnknownSince: m.cgroupsUnknownSince, Now: m.clk.Now()})
	m.cgroupsUnknownSince = do.UnknownSince
	for _, c := range do.Reduce {
		m.log.V(3).Info("Orphaned pod found, but volumes not yet removed. Reducing cpu to minimum", "podUID", c.UID)
		if err := m.qos.ReducePodCgroup(c); err != nil {
			m.log.Info("Failed to reduce cpu time for pod pending volume cleanup", "podUID", c.UID, "err", err)
		}
	}
	for _, c := range do.Destroy {
		m.log.V(3).Info("Orphaned pod found, removing pod cgroups", "podUID", c.UID, "cgroup", c.Path)
		// A failure is tried again at the next housekeeping.
		if err := m.qos.DestroyPodCgroup(c); err != nil {
			m.log.Info("Failed to remove an orphaned pod cgroup", "podUID", c.UID, "err", err)
		}
	}
}

// podVolumesMounted says a volume of the pod is still mounted under --root-dir/pods/<uid>/volumes
// (<plugin>/<volume>, a mount point by its device, as the kubelet's podVolumesExist reads the
// disk); a directory that cannot be read counts as mounted, as there.
func (m *Manager) podVolumesMounted(uid types.UID) bool {
	dir := filepath.Join(m.node.RootDir, "pods", string(uid), "volumes")
	plugins, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return false
	}
	if err != nil {
		return true
	}
	for _, p := range plugins {
		vols, err := os.ReadDir(filepath.Join(dir, p.Name()))
		if err != nil {
			return true
		}
		for _, v := range vols {
			if mounted, err := isMountPoint(filepath.Join(dir, p.Name(), v.Name())); mounted || err != nil {
				return true
			}
		}
	}
	return false
}

// isMountPoint is mount-utils' IsLikelyNotMountPoint turned round: a directory on another device
// than its parent is a mount point.
func isMountPoint(path string) (bool, error) {
	var st, parent syscall.Stat_t
	if err := syscall.Lstat(path, &st); err != nil {
		return false, err
	}
	if err := syscall.Lstat(filepath.Dir(path), &parent); err != nil {
		return false, err
	}
	return st.Dev != parent.Dev, nil
}
