package sim

import (
	"fmt"
	"slices"
	"time"

	"orch.io/orch/components/orchlet/eviction"
)

// The simulated host's memory controller, where --kernel-memcg-notification arms thresholds.
const (
	simMemoryRoot = "/sys/fs/cgroup/memory"
	simPodsCgroup = "/orchpods"
)

// simMemcg is the simulated kernel's memcg threshold notifications (eviction.NotifierFactory):
// each armed threshold on the root cgroup's usage (what runs outside pods and the pods) or the
// pods' cgroup is looked at every simulated second, and at every instant the world visits; a
// crossing, either way as the kernel notifies, is sent at the first look past it. Usage curves
// change at whole seconds unless a ramp says otherwise, so a step is seen at its instant.
type simMemcg struct {
	node  *simNode
	armed []*simThreshold
}

type simThreshold struct {
	m         *simMemcg
	podsOnly  bool
	threshold uint64
	above     bool
	ch        chan<- struct{}
}

func (m *simMemcg) NewCgroupNotifier(path, attribute string, threshold int64) (eviction.CgroupNotifier, error) {
	if attribute != "memory.usage_in_bytes" || (path != simMemoryRoot && path != simMemoryRoot+simPodsCgroup) {
		return nil, fmt.Errorf("the simulated host has no %s/%s to watch", path, attribute)
	}
	t := &simThreshold{m: m, podsOnly: path != simMemoryRoot, threshold: uint64(max(threshold, 0))}
	m.armed = append(m.armed, t)
	return t, nil
}

// Start takes the usage now as the side the threshold is on.
func (t *simThreshold) Start(ch chan<- struct{}) {
	t.ch = ch
	t.above = t.m.node.usage(t.podsOnly) >= t.threshold
}

func (t *simThreshold) Stop() {
	t.m.armed = slices.DeleteFunc(t.m.armed, func(x *simThreshold) bool { return x == t })
}

// check sends a notification for each threshold the usage crossed since the last look, and
// reports whether it sent any.
func (m *simMemcg) check() bool {
	sent := false
	for _, t := range m.armed {
		if t.ch == nil {
			continue
		}
		if above := m.node.usage(t.podsOnly) >= t.threshold; above != t.above {
			t.above = above
			select {
			case t.ch <- struct{}{}:
			default:
			}
			sent = true
		}
	}
	return sent
}

// next is the next whole second while a threshold is armed.
func (m *simMemcg) next(now time.Time) (time.Time, bool) {
	if len(m.armed) == 0 {
		return time.Time{}, false
	}
	return now.Truncate(time.Second).Add(time.Second), true
}
