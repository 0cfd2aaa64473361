package eviction

import (
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Kubernetes' reason and message formats (helpers.go, eviction_manager.go), kept to the byte.
const (
	// Reason is the pod status reason and event reason of an eviction and of an admission refusal.
	Reason = "Evicted"
	// ReasonThresholdMet is the node event when a threshold is met and reclaim begins.
	ReasonThresholdMet = "EvictionThresholdMet"

	nodeLowMessageFmt                   = "The node was low on resource: %v. "
	nodeConditionMessageFmt             = "The node had condition: %v. "
	thresholdMetMessageFmt              = "Threshold quantity: %v, available: %v. "
	containerMessageFmt                 = "Container %s was using %s, request is %s, has larger consumption of %v. "
	containerEphemeralStorageMessageFmt = "Container %s exceeded its local ephemeral storage limit %q. "
	podEphemeralStorageMessageFmt       = "Pod ephemeral local storage usage exceeds the total limit of containers %s. "
	emptyDirMessageFmt                  = "Usage of EmptyDir volume %q exceeds the limit %q. "

	// immediateEvictionGracePeriodSeconds is eviction_manager.go's grace for hard thresholds.
	immediateEvictionGracePeriodSeconds = 1
)

// Config is what the core decides by.
type Config struct {
	Thresholds []Threshold
	// PressureTransitionPeriod keeps a condition set this long after its signal clears.
	PressureTransitionPeriod time.Duration
	// MaxPodGracePeriodSeconds caps the grace of a soft eviction.
	MaxPodGracePeriodSeconds int64
	// LocalStorageCapacityIsolation evicts pods over their ephemeral-storage limits or emptyDir
	// size limits.
	LocalStorageCapacityIsolation bool
	// KernelMemcgNotification arms the memory thresholds with the kernel, so a crossing makes a
	// round due at once (the Manager's; the core decides the same either way).
	KernelMemcgNotification bool
}

// Eviction is a pod the core chose to evict.
type Eviction struct {
	Pod *corev1.Pod
	// GracePeriodSeconds is the kill's grace period override.
	GracePeriodSeconds int64
	// Signal is the threshold's signal, or the local storage limit the pod went over.
	Signal string
	// Message is the pod status message and Evicted event note, as Kubernetes writes them.
	Message string
}

// Round is what one synchronize decided.
type Round struct {
	// Conditions are the node's pressure conditions now, in the order MemoryPressure,
	// DiskPressure, PIDPressure.
	Conditions []corev1.NodeConditionType
	// Met are the thresholds met past their grace period.
	Met []Threshold
	// Reclaiming is the resource the round tries to reclaim (empty when none): the
	// EvictionThresholdMet event says "Attempting to reclaim <it>".
	Reclaiming corev1.ResourceName
	// Reclaim asks for node-level reclaim; the caller does it, observes again and calls
	// AfterReclaim, which decides whether a pod must still go.
	Reclaim Reclaim
	// Evictions are the pods to kill: at most one for pressure, or each pod over a local
	// storage limit (localStorageEviction evicts them all in one round, as Kubernetes does).
	Evictions []Eviction
}

// Core is eviction_manager.go's managerImpl without its I/O: fed stats, pods and the time, it
// keeps the thresholds' and conditions' history and decides.
type Core struct {
	cfg Config

	conditions          []corev1.NodeConditionType
	thresholdsFirstSeen map[Signal]map[time.Duration]time.Time // by signal and grace period
	conditionsLastSeen  map[corev1.NodeConditionType]time.Time
	thresholdsMet       []Threshold
	lastObservations    map[Signal]observation
	pending             *pendingReclaim
}

// pendingReclaim is a round waiting for the observation after node-level reclaim.
type pendingReclaim struct {
	threshold Threshold
	resource  corev1.ResourceName
	pods      []*corev1.Pod
	stats     Stats
}

// NewCore returns a core with no history.
func NewCore(cfg Config) *Core {
	return &Core{cfg: cfg, thresholdsFirstSeen: map[Signal]map[time.Duration]time.Time{}, conditionsLastSeen: map[corev1.NodeConditionType]time.Time{}}
}

// Conditions are the node's pressure conditions as of the last round.
func (c *Core) Conditions() []corev1.NodeConditionType { return slices.Clone(c.conditions) }

// thresholdsMet is helpers.go's: each threshold whose signal is below its value (plus the minimum
// reclaim when enforceMinReclaim).
func thresholdsMet(ts []Threshold, obs map[Signal]observation, enforceMinReclaim bool) []Threshold {
	var out []Threshold
	for _, t := range ts {
		o, ok := obs[t.Signal]
		if !ok {
			continue
		}
		q := t.Value.quantity(o.capacity)
		if enforceMinReclaim && t.MinReclaim != nil {
			q.Add(*t.MinReclaim.quantity(o.capacity))
		}
		if q.Cmp(*o.available) > 0 {
			out = append(out, t)
		}
	}
	return out
}

func sameThreshold(a, b Threshold) bool {
	return a.Signal == b.Signal && a.GracePeriod == b.GracePeriod && a.Value.String() == b.Value.String()
}

// mergeThresholds is helpers.go's: b's thresholds not already in a.
func mergeThresholds(a, b []Threshold) []Threshold {
	out := slices.Clone(a)
	for _, t := range b {
		if !slices.ContainsFunc(out, func(x Threshold) bool { return sameThreshold(x, t) }) {
			out = append(out, t)
		}
	}
	return out
}

// conditionOrder is the order conditions are reported in.
var conditionOrder = []corev1.NodeConditionType{corev1.NodeMemoryPressure, corev1.NodeDiskPressure, corev1.NodePIDPressure}

// Synchronize is eviction_manager.go's synchronize up to node-level reclaim: thresholds met (those
// met before stay met until their signal is above threshold plus minimum reclaim), conditions with
// the transition period (nodeConditionsObservedSince), grace periods (thresholdsMetGracePeriod),
// local storage limits, then the threshold to reclaim (getReclaimableThreshold) and, unless node
// reclaim comes first, the pod to evict. pods are the active pods in the order the caller keeps.
func (c *Core) Synchronize(now time.Time, stats Stats, pods []*corev1.Pod) Round {
	c.pending = nil
	obs := makeSignalObservations(stats)
	met := thresholdsMet(c.cfg.Thresholds, obs, false)
	if len(c.thresholdsMet) > 0 {
		met = mergeThresholds(met, thresholdsMet(c.thresholdsMet, obs, true))
	}
	// thresholdsFirstObservedAt
	firstSeen := map[Signal]map[time.Duration]time.Time{}
	for _, t := range met {
		at, ok := c.thresholdsFirstSeen[t.Signal][t.GracePeriod]
		if !ok {
			at = now
		}
		if firstSeen[t.Signal] == nil {
			firstSeen[t.Signal] = map[time.Duration]time.Time{}
		}
		firstSeen[t.Signal][t.GracePeriod] = at
	}
	// nodeConditions, nodeConditionsLastObservedAt, nodeConditionsObservedSince
	for _, t := range met {
		c.conditionsLastSeen[signalToNodeCondition[t.Signal]] = now
	}
	var conds []corev1.NodeConditionType
	for _, cond := range conditionOrder {
		if at, ok := c.conditionsLastSeen[cond]; ok {
			if now.Sub(at) < c.cfg.PressureTransitionPeriod {
				conds = append(conds, cond)
			} else {
				delete(c.conditionsLastSeen, cond)
			}
		}
	}
	// thresholdsMetGracePeriod, in configuration order so a round is the same every run.
	var graced []Threshold
	for _, t := range c.cfg.Thresholds {
		if at, ok := firstSeen[t.Signal][t.GracePeriod]; ok && now.Sub(at) >= t.GracePeriod && slices.ContainsFunc(met, func(x Threshold) bool { return sameThreshold(x, t) }) {
			graced = append(graced, t)
		}
	}
	c.conditions, c.thresholdsFirstSeen, c.thresholdsMet, c.lastObservations = conds, firstSeen, graced, obs
	r := Round{Conditions: slices.Clone(conds), Met: slices.Clone(graced)}

	byUID := map[string]*PodStats{}
	for i := range stats.Pods {
		byUID[string(stats.Pods[i].UID)] = &stats.Pods[i]
	}
	if c.cfg.LocalStorageCapacityIsolation {
		if ev := localStorageEviction(pods, byUID); len(ev) > 0 {
			r.Evictions = ev
			return r
		}
	}
	if len(graced) == 0 {
		return r
	}
	t, res, ok := getReclaimableThreshold(graced)
	if !ok {
		return r
	}
	r.Reclaiming = res
	c.pending = &pendingReclaim{threshold: t, resource: res, pods: pods, stats: stats}
	if rc := layoutOf(stats).reclaimFor(t.Signal); rc != (Reclaim{}) {
		r.Reclaim = rc
		return r
	}
	r.Evictions = c.evict()
	return r
}

// AfterReclaim is reclaimNodeLevelResources' second half and the rest of synchronize: with the
// observation after node-level reclaim, no pod is evicted when every threshold is met no more,
// minimum reclaim included; otherwise the first pod in rank order that may be evicted is, ranked
// and described by the round's first observation, as Kubernetes does.
func (c *Core) AfterReclaim(stats Stats) []Eviction {
	if c.pending == nil {
		return nil
	}
	if len(thresholdsMet(c.cfg.Thresholds, makeSignalObservations(stats), true)) == 0 {
		c.pending = nil
		return nil
	}
	return c.evict()
}

// byEvictionPriority is helpers.go's order: memory first, then thresholds with a resource to
// reclaim before those without.
func getReclaimableThreshold(ts []Threshold) (Threshold, corev1.ResourceName, bool) {
	sorted := slices.Clone(ts)
	slices.SortStableFunc(sorted, func(a, b Threshold) int {
		am := a.Signal == SignalMemoryAvailable || a.Signal == SignalAllocatableMemoryAvailable
		bm := b.Signal == SignalMemoryAvailable || b.Signal == SignalAllocatableMemoryAvailable
		return cmpBool(am, bm)
	})
	for _, t := range sorted {
		if res, ok := signalToResource[t.Signal]; ok {
			return t, res, true
		}
	}
	return Threshold{}, "", false
}

// evict ranks the pods for the pending threshold and picks the first that is not critical, with
// its grace period and message (the loop at the end of synchronize, and evictPod's refusal of
// critical pods).
func (c *Core) evict() []Eviction {
	p := c.pending
	c.pending = nil
	byUID := map[string]*PodStats{}
	for i := range p.stats.Pods {
		byUID[string(p.stats.Pods[i].UID)] = &p.stats.Pods[i]
	}
	cands := make([]*candidate, len(p.pods))
	for i, pod := range p.pods {
		cands[i] = &candidate{pod: pod, stats: byUID[string(pod.UID)]}
	}
	layoutOf(p.stats).rankFunc(p.threshold.Signal)(cands)
	for _, cand := range cands {
		if IsCriticalPod(cand.pod) {
			continue
		}
		grace := int64(immediateEvictionGracePeriodSeconds)
		if !p.threshold.Hard() {
			grace = c.cfg.MaxPodGracePeriodSeconds
			if g := cand.pod.Spec.TerminationGracePeriodSeconds; g != nil && *g < grace {
				grace = *g
			}
		}
		return []Eviction{{
			Pod: cand.pod, GracePeriodSeconds: grace, Signal: string(p.threshold.Signal),
			Message: evictionMessage(p.resource, cand.pod, cand.stats, c.thresholdsMet, c.lastObservations),
		}}
	}
	return nil
}

// evictionMessage is helpers.go's: the resource, the threshold and what was available, and each
// container using more than it requests.
func evictionMessage(res corev1.ResourceName, pod *corev1.Pod, stats *PodStats, met []Threshold, obs map[Signal]observation) string {
	msg := fmt.Sprintf(nodeLowMessageFmt, res)
	// getThresholdMetInfo: the first met threshold of that resource.
	for _, t := range met {
		if signalToResource[t.Signal] != res {
			continue
		}
		if o, ok := obs[t.Signal]; ok {
			msg += fmt.Sprintf(thresholdMetMessageFmt, t.Value.quantity(o.capacity), o.available)
			break
		}
	}
	if stats == nil {
		return msg
	}
	for _, cs := range stats.Containers {
		for i := range pod.Spec.Containers {
			ctr := &pod.Spec.Containers[i]
			if ctr.Name != cs.Name {
				continue
			}
			req := ctr.Resources.Requests[res]
			var usage *resource.Quantity
			switch res {
			case corev1.ResourceEphemeralStorage:
				usage = bytesQ(cs.RootfsBytes + cs.LogsBytes)
			case corev1.ResourceMemory:
				usage = bytesQ(cs.MemoryWorkingSetBytes)
			}
			if usage != nil && usage.Cmp(req) > 0 {
				msg += fmt.Sprintf(containerMessageFmt, ctr.Name, usage.String(), req.String(), res)
			}
		}
	}
	return msg
}

// localStorageEviction is eviction_manager.go's: each pod over an emptyDir size limit, its
// pod-level ephemeral-storage limit or a container's is evicted at once (grace 0).
func localStorageEviction(pods []*corev1.Pod, stats map[string]*PodStats) []Eviction {
	var out []Eviction
	for _, pod := range pods {
		s := stats[string(pod.UID)]
		if s == nil || IsCriticalPod(pod) {
			continue
		}
		if msg, ok := emptyDirLimitEviction(pod, s); ok {
			out = append(out, Eviction{Pod: pod, Signal: "emptydirfs.limit", Message: msg})
			continue
		}
		if msg, ok := podEphemeralStorageLimitEviction(pod, s); ok {
			out = append(out, Eviction{Pod: pod, Signal: "ephemeralpodfs.limit", Message: msg})
			continue
		}
		if msg, ok := containerEphemeralStorageLimitEviction(pod, s); ok {
			out = append(out, Eviction{Pod: pod, Signal: "ephemeralcontainerfs.limit", Message: msg})
		}
	}
	return out
}

func emptyDirLimitEviction(pod *corev1.Pod, s *PodStats) (string, bool) {
	for _, v := range pod.Spec.Volumes {
		ed := v.EmptyDir
		if ed == nil || ed.SizeLimit == nil || ed.SizeLimit.Sign() <= 0 || ed.Medium == corev1.StorageMediumMemory {
			continue
		}
		for _, vs := range s.Volumes {
			if vs.Name == v.Name && bytesQ(vs.UsedBytes).Cmp(*ed.SizeLimit) > 0 {
				return fmt.Sprintf(emptyDirMessageFmt, v.Name, ed.SizeLimit.String()), true
			}
		}
	}
	return "", false
}

// podEphemeralStorageLimitEviction: usage counts every container's writable layer and logs and
// the pod's local volumes other than memory-backed emptyDirs, against the containers' limits.
func podEphemeralStorageLimitEviction(pod *corev1.Pod, s *PodStats) (string, bool) {
	var limit resource.Quantity
	found := false
	for _, c := range pod.Spec.Containers {
		if q, ok := c.Resources.Limits[corev1.ResourceEphemeralStorage]; ok {
			limit.Add(q)
			found = true
		}
	}
	if !found {
		return "", false
	}
	memoryVolumes := map[string]bool{}
	for _, v := range pod.Spec.Volumes {
		if v.EmptyDir != nil && v.EmptyDir.Medium == corev1.StorageMediumMemory {
			memoryVolumes[v.Name] = true
		}
	}
	var used uint64
	for _, c := range s.Containers {
		used += c.RootfsBytes + c.LogsBytes
	}
	for _, v := range s.Volumes {
		if !memoryVolumes[v.Name] {
			used += v.UsedBytes
		}
	}
	if bytesQ(used).Cmp(limit) > 0 {
		return fmt.Sprintf(podEphemeralStorageMessageFmt, limit.String()), true
	}
	return "", false
}

func containerEphemeralStorageLimitEviction(pod *corev1.Pod, s *PodStats) (string, bool) {
	for _, cs := range s.Containers {
		for _, c := range pod.Spec.Containers {
			if c.Name != cs.Name {
				continue
			}
			if q, ok := c.Resources.Limits[corev1.ResourceEphemeralStorage]; ok && bytesQ(cs.RootfsBytes+cs.LogsBytes).Cmp(q) > 0 {
				return fmt.Sprintf(containerEphemeralStorageMessageFmt, c.Name, q.String()), true
			}
		}
	}
	return "", false
}

// Admit is eviction_manager.go's Admit: with no pressure every pod; critical pods always; under
// memory pressure alone every pod but a BestEffort one that does not tolerate the memory-pressure
// taint; under any other pressure none. A refusal carries Kubernetes' reason and message.
func (c *Core) Admit(pod *corev1.Pod) (ok bool, reason, message string) {
	if len(c.conditions) == 0 || IsCriticalPod(pod) {
		return true, "", ""
	}
	if len(c.conditions) == 1 && c.conditions[0] == corev1.NodeMemoryPressure {
		if !isBestEffort(pod) {
			return true, "", ""
		}
		for _, t := range pod.Spec.Tolerations {
			if toleratesMemoryPressure(t) {
				return true, "", ""
			}
		}
	}
	names := make([]string, len(c.conditions))
	for i, cond := range c.conditions {
		names[i] = string(cond)
	}
	return false, Reason, fmt.Sprintf(nodeConditionMessageFmt, "["+strings.Join(names, " ")+"]")
}

// TaintMemoryPressure is the memory-pressure condition's taint (Kubernetes'
// node.kubernetes.io/memory-pressure, renamed), which a BestEffort pod may tolerate to be admitted.
const TaintMemoryPressure = "node.orch.io/memory-pressure"

// toleratesMemoryPressure is Toleration.ToleratesTaint for the memory-pressure NoSchedule taint
// (which carries no value).
func toleratesMemoryPressure(t corev1.Toleration) bool {
	if t.Effect != "" && t.Effect != corev1.TaintEffectNoSchedule {
		return false
	}
	if t.Key == "" {
		return t.Operator == corev1.TolerationOpExists
	}
	return t.Key == TaintMemoryPressure && (t.Operator == corev1.TolerationOpExists || t.Value == "")
}
