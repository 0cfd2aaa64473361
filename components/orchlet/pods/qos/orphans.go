package qos

import (
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// OrphanGrace is how long a pod cgroup stays unknown to the agent before it is judged an orphan.
// The kubelet judges at its next housekeeping; a host that runs several agents on one cgroup root
// (a test machine) shows each the others' pod cgroups, and a minute keeps an agent from removing
// those of another agent's pods unless it has itself run a minute beside them.
const OrphanGrace = time.Minute

// PodCgroup is a pod cgroup found under a QoS cgroup on the host.
type PodCgroup struct {
	UID types.UID
	// Path names the cgroup as the driver writes it, from the hierarchy's root.
	Path string
}

// OrphanInput is what the judgement of orphaned pod cgroups reads: the cgroups present (listed
// before the pods known are read, so that a pod added meanwhile is not taken for an orphan), the
// pods the agent knows (its pod workers' and those the runtime still holds), the pods whose
// volumes are still mounted, and since when each cgroup has been unknown.
type OrphanInput struct {
	Present []PodCgroup
	Known   map[types.UID]bool
	// VolumesLeft holds the unknown pods whose volumes are not yet unmounted.
	VolumesLeft map[types.UID]bool
	// UnknownSince is the previous judgement's.
	UnknownSince map[string]time.Time
	Now          time.Time
}

// OrphanActions are the judgement's: cgroups to destroy (their processes killed, then removed),
// cgroups to reduce to the minimum CPU shares while their pods' volumes are unmounted, and since
// when each cgroup still present has been unknown, for the next judgement.
type OrphanActions struct {
	Destroy, Reduce []PodCgroup
	UnknownSince    map[string]time.Time
}

// JudgeOrphans is the kubelet's cleanupOrphanedPodCgroups: a pod cgroup whose pod the agent does
// not know is destroyed, or, while the pod's volumes are still mounted (so that a memory-backed
// volume's charge does not pass to the parent), only reduced to the minimum CPU shares; either
// once the cgroup has been unknown for OrphanGrace. Each list is ordered by path.
func JudgeOrphans(in OrphanInput) OrphanActions {
	out := OrphanActions{UnknownSince: map[string]time.Time{}}
	for _, c := range in.Present {
		if in.Known[c.UID] {
			continue
		}
		since, ok := in.UnknownSince[c.Path]
		if !ok || since.After(in.Now) {
			since = in.Now
		}
		out.UnknownSince[c.Path] = since
		if in.Now.Sub(since) < OrphanGrace {
			continue
		}
		if in.VolumesLeft[c.UID] {
			out.Reduce = append(out.Reduce, c)
		} else {
			out.Destroy = append(out.Destroy, c)
		}
	}
	byPath := func(a, b PodCgroup) int { return strings.Compare(a.Path, b.Path) }
	slices.SortFunc(out.Destroy, byPath)
	slices.SortFunc(out.Reduce, byPath)
	return out
}
