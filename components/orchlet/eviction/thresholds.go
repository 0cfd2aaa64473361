package eviction

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Signal is an eviction signal, as Kubernetes' evictionapi names them.
type Signal string

// The signals Kubernetes' eviction manager observes.
const (
	SignalMemoryAvailable            Signal = "memory.available"
	SignalAllocatableMemoryAvailable Signal = "allocatableMemory.available"
	SignalNodeFsAvailable            Signal = "nodefs.available"
	SignalNodeFsInodesFree           Signal = "nodefs.inodesFree"
	SignalImageFsAvailable           Signal = "imagefs.available"
	SignalImageFsInodesFree          Signal = "imagefs.inodesFree"
	SignalContainerFsAvailable       Signal = "containerfs.available"
	SignalContainerFsInodesFree      Signal = "containerfs.inodesFree"
	SignalPIDAvailable               Signal = "pid.available"
)

// Signals lists every signal in the order Kubernetes' evictionapi declares them.
var Signals = []Signal{
	SignalMemoryAvailable, SignalAllocatableMemoryAvailable, SignalNodeFsAvailable, SignalNodeFsInodesFree,
	SignalImageFsAvailable, SignalImageFsInodesFree, SignalContainerFsAvailable, SignalContainerFsInodesFree,
	SignalPIDAvailable,
}

// Resources eviction reclaims besides memory and ephemeral storage (helpers.go: resourceInodes,
// resourcePids).
const (
	resourceInodes corev1.ResourceName = "inodes"
	resourcePids   corev1.ResourceName = "pids"
)

// signalToResource is helpers.go's map of the resource each signal reclaims.
var signalToResource = map[Signal]corev1.ResourceName{
	SignalMemoryAvailable:            corev1.ResourceMemory,
	SignalAllocatableMemoryAvailable: corev1.ResourceMemory,
	SignalNodeFsAvailable:            corev1.ResourceEphemeralStorage,
	SignalNodeFsInodesFree:           resourceInodes,
	SignalImageFsAvailable:           corev1.ResourceEphemeralStorage,
	SignalImageFsInodesFree:          resourceInodes,
	SignalContainerFsAvailable:       corev1.ResourceEphemeralStorage,
	SignalContainerFsInodesFree:      resourceInodes,
	SignalPIDAvailable:               resourcePids,
}

// signalToNodeCondition is helpers.go's map of the node condition each signal raises.
var signalToNodeCondition = map[Signal]corev1.NodeConditionType{
	SignalMemoryAvailable:            corev1.NodeMemoryPressure,
	SignalAllocatableMemoryAvailable: corev1.NodeMemoryPressure,
	SignalNodeFsAvailable:            corev1.NodeDiskPressure,
	SignalNodeFsInodesFree:           corev1.NodeDiskPressure,
	SignalImageFsAvailable:           corev1.NodeDiskPressure,
	SignalImageFsInodesFree:          corev1.NodeDiskPressure,
	SignalContainerFsAvailable:       corev1.NodeDiskPressure,
	SignalContainerFsInodesFree:      corev1.NodeDiskPressure,
	SignalPIDAvailable:               corev1.NodePIDPressure,
}

// Value is a threshold or minimum reclaim: a quantity, or a fraction of the signal's capacity.
type Value struct {
	Quantity   *resource.Quantity
	Percentage float32
}

// quantity is evictionapi.GetThresholdQuantity: the value in the units of capacity.
func (v Value) quantity(capacity *resource.Quantity) *resource.Quantity {
	if v.Quantity != nil {
		q := v.Quantity.DeepCopy()
		return &q
	}
	return resource.NewQuantity(int64(float64(capacity.Value())*float64(v.Percentage)), resource.BinarySI)
}

func (v Value) String() string {
	if v.Quantity != nil {
		return v.Quantity.String()
	}
	// Rounded to what a flag can say: the float32 fraction of 15% is not exactly 0.15.
	return strconv.FormatFloat(math.Round(float64(v.Percentage)*1e6)/1e4, 'f', -1, 64) + "%"
}

// Threshold is one eviction threshold: signal < value. A hard threshold has no grace period.
type Threshold struct {
	Signal      Signal
	Value       Value
	GracePeriod time.Duration
	MinReclaim  *Value
}

// Hard is isHardEvictionThreshold: a threshold without a grace period acts at once.
func (t Threshold) Hard() bool { return t.GracePeriod == 0 }

func (t Threshold) String() string {
	s := string(t.Signal) + "<" + t.Value.String()
	if !t.Hard() {
		s += " for " + t.GracePeriod.String()
	}
	return s
}

// DefaultHard are Kubernetes' hard thresholds when --eviction-hard (evictionHard) is not given at
// all. A partial setting replaces them whole: the signals it leaves out have no threshold.
var DefaultHard = map[string]string{
	string(SignalMemoryAvailable):  "100Mi",
	string(SignalNodeFsAvailable):  "10%",
	string(SignalNodeFsInodesFree): "5%",
	string(SignalImageFsAvailable): "15%",
}

// OptionError names the option and file field a parse error is about.
type OptionError struct {
	Option, Field string
	Err           error
}

func (e *OptionError) Error() string { return fmt.Sprintf("--%s (%s): %v", e.Option, e.Field, e.Err) }
func (e *OptionError) Unwrap() error { return e.Err }

// ParseThresholdConfig is helpers.go's ParseThresholdConfig: the hard thresholds, then the soft
// ones with their grace periods (a soft threshold without one is refused), each with its minimum
// reclaim; with "pods" in enforceNodeAllocatable each hard memory.available threshold also applies
// to allocatableMemory.available (addAllocatableThresholds). Thresholds come in a stable order:
// hard before soft, each by signal.
func ParseThresholdConfig(enforceNodeAllocatable []string, hard, soft, softGrace, minReclaim map[string]string) ([]Threshold, error) {
	hardT, err := parseThresholdStatements(hard)
	if err != nil {
		return nil, &OptionError{"eviction-hard", "evictionHard", err}
	}
	if slices.Contains(enforceNodeAllocatable, "pods") {
		hardT = addAllocatableThresholds(hardT)
	}
	softT, err := parseThresholdStatements(soft)
	if err != nil {
		return nil, &OptionError{"eviction-soft", "evictionSoft", err}
	}
	graces, err := parseGracePeriods(softGrace)
	if err != nil {
		return nil, &OptionError{"eviction-soft-grace-period", "evictionSoftGracePeriod", err}
	}
	reclaims, err := parseMinimumReclaims(minReclaim)
	if err != nil {
		return nil, &OptionError{"eviction-minimum-reclaim", "evictionMinimumReclaim", err}
	}
	for i := range softT {
		g, ok := graces[softT[i].Signal]
		if !ok {
			return nil, &OptionError{"eviction-soft", "evictionSoft", fmt.Errorf("grace period must be specified for the soft eviction threshold %v in --eviction-soft-grace-period (evictionSoftGracePeriod)", softT[i].Signal)}
		}
		softT[i].GracePeriod = g
	}
	out := append(hardT, softT...)
	for i := range out {
		if r, ok := reclaims[out[i].Signal]; ok {
			out[i].MinReclaim = &r
		}
	}
	return out, nil
}

func validSignal(s Signal) bool { return slices.Contains(Signals, s) }

func signalNames() string {
	names := make([]string, len(Signals))
	for i, s := range Signals {
		names[i] = strconv.Quote(string(s))
	}
	return strings.Join(names, ", ")
}

func parseThresholdStatements(m map[string]string) ([]Threshold, error) {
	var out []Threshold
	for _, k := range slices.Sorted(maps.Keys(m)) {
		t, err := ParseThresholdStatement(Signal(k), m[k])
		if err != nil {
			return nil, err
		}
		if t != nil {
			out = append(out, *t)
		}
	}
	return out, nil
}

// ParseThresholdStatement is helpers.go's parseThresholdStatement: a positive quantity or a
// percentage; 0% and 100% mean no threshold (nil).
func ParseThresholdStatement(signal Signal, val string) (*Threshold, error) {
	if !validSignal(signal) {
		return nil, fmt.Errorf("unsupported eviction signal %v: must be one of %s", signal, signalNames())
	}
	if strings.HasSuffix(val, "%") {
		if val == "0%" || val == "100%" {
			return nil, nil
		}
		p, err := parsePercentage(val)
		if err != nil {
			return nil, err
		}
		if p < 0 {
			return nil, fmt.Errorf("eviction percentage threshold %v must be >= 0%%: %s", signal, val)
		}
		if p > 1 {
			return nil, fmt.Errorf("eviction percentage threshold %v must be <= 100%%: %s", signal, val)
		}
		return &Threshold{Signal: signal, Value: Value{Percentage: p}}, nil
	}
	q, err := resource.ParseQuantity(val)
	if err != nil {
		return nil, fmt.Errorf("eviction threshold %v: %q is neither a quantity nor a percentage", signal, val)
	}
	if q.Sign() <= 0 {
		return nil, fmt.Errorf("eviction threshold %v must be positive: %s", signal, &q)
	}
	return &Threshold{Signal: signal, Value: Value{Quantity: &q}}, nil
}

// parsePercentage is helpers.go's: "10%" is 0.1.
func parsePercentage(v string) (float32, error) {
	f, err := strconv.ParseFloat(strings.TrimRight(v, "%"), 32)
	if err != nil {
		return 0, fmt.Errorf("invalid percentage %q", v)
	}
	return float32(f) / 100, nil
}

// parseGracePeriods is helpers.go's: each a non-negative duration.
func parseGracePeriods(m map[string]string) (map[Signal]time.Duration, error) {
	out := map[Signal]time.Duration{}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		s := Signal(k)
		if !validSignal(s) {
			return nil, fmt.Errorf("unsupported eviction signal %v: must be one of %s", s, signalNames())
		}
		d, err := time.ParseDuration(m[k])
		if err != nil {
			return nil, fmt.Errorf("%v: %q is not a duration", s, m[k])
		}
		if d < 0 {
			return nil, fmt.Errorf("invalid eviction grace period specified: %v, must be a positive value", m[k])
		}
		out[s] = d
	}
	return out, nil
}

// parseMinimumReclaims is helpers.go's, one statement at a time (ParseMinimumReclaim).
func parseMinimumReclaims(m map[string]string) (map[Signal]Value, error) {
	out := map[Signal]Value{}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		v, err := ParseMinimumReclaim(Signal(k), m[k])
		if err != nil {
			return nil, err
		}
		out[Signal(k)] = v
	}
	return out, nil
}

// ParseMinimumReclaim is one statement of helpers.go's parseMinimumReclaims: a positive
// percentage or a non-negative quantity.
func ParseMinimumReclaim(s Signal, val string) (Value, error) {
	if !validSignal(s) {
		return Value{}, fmt.Errorf("unsupported eviction signal %v: must be one of %s", s, signalNames())
	}
	if strings.HasSuffix(val, "%") {
		p, err := parsePercentage(val)
		if err != nil {
			return Value{}, err
		}
		if p <= 0 {
			return Value{}, fmt.Errorf("eviction percentage minimum reclaim %v must be positive: %s", s, val)
		}
		if p > 1 {
			return Value{}, fmt.Errorf("eviction percentage minimum reclaim %v must be <= 100%%: %s", s, val)
		}
		return Value{Percentage: p}, nil
	}
	q, err := resource.ParseQuantity(val)
	if err != nil {
		return Value{}, fmt.Errorf("eviction minimum reclaim %v: %q is neither a quantity nor a percentage", s, val)
	}
	if q.Sign() < 0 {
		return Value{}, fmt.Errorf("negative eviction minimum reclaim specified for %v", s)
	}
	return Value{Quantity: &q}, nil
}

// addAllocatableThresholds is helpers.go's: node allocatable enforcement watches the pods' memory
// against the hard memory.available threshold too.
func addAllocatableThresholds(ts []Threshold) []Threshold {
	out := slices.Clone(ts)
	for _, t := range ts {
		if t.Signal == SignalMemoryAvailable && t.Hard() {
			a := t
			a.Signal = SignalAllocatableMemoryAvailable
			out = append(out, a)
		}
	}
	return out
}
