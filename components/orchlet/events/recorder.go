package events

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/benbjohnson/clock"
	"golang.org/x/time/rate"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	apivalidation "k8s.io/apimachinery/pkg/util/validation"

	eventsv1 "orch.io/orch/components/apis/events/v1"
	"orch.io/orch/components/apis/events/v1/validation"
)

// ReportingController is the reportingController of every Event the agent records.
const ReportingController = "orch.io/orchlet"

// Event types.
const (
	Normal  = eventsv1.EventTypeNormal
	Warning = eventsv1.EventTypeWarning
)

// Kubernetes' client-go tools/events periods: an open series is written again every
// DefaultHeartbeat, and the cache is swept every DefaultFinish, ending series and forgetting
// singletons not seen for that long.
const (
	DefaultHeartbeat = 30 * time.Minute
	DefaultFinish    = 6 * time.Minute
)

// Options are what a Recorder needs from the agent.
type Options struct {
	Clock clock.Clock
	// NodeName is the reportingInstance.
	NodeName string
	// QPS and Burst are --event-qps and --event-burst after options' 0-means-5 and 0-means-10 rules:
	// the token bucket every occurrence must take a token from.
	QPS   int32
	Burst int32
	Sink  Sink
	// OnDrop, when set, hears of every occurrence the rate limit drops, with the total dropped so far.
	OnDrop func(e *eventsv1.Event, total uint64)
	// OnError, when set, hears of every Eventf that cannot make a valid Event (e is then what it
	// made, or nil without a regarding object) and every write the Sink refuses.
	OnError func(e *eventsv1.Event, err error)
	// Heartbeat and Finish override DefaultHeartbeat and DefaultFinish when positive.
	Heartbeat time.Duration
	Finish    time.Duration
}

// Recorder records Events; it is safe for concurrent use, and Events are written in the order their
// Eventf calls took its lock.
type Recorder struct {
	clk       clock.Clock
	node      string
	sink      Sink
	onDrop    func(*eventsv1.Event, uint64)
	onError   func(*eventsv1.Event, error)
	heartbeat time.Duration
	finish    time.Duration

	step sync.Mutex // one Step at a time, so writes never interleave

	mu        sync.Mutex
	limiter   *rate.Limiter
	dropped   uint64
	lastNano  int64
	seq       uint64
	cache     map[key]*cached
	queue     []write
	stepping  bool
	nextBeat  time.Time
	nextSweep time.Time
	ready     chan struct{}
}

// key is what makes two occurrences the same event: Kubernetes' key (type, action, reason,
// regarding; the reporting controller and instance are fixed per recorder and related is not
// recorded) plus the note, so occurrences that say different things stay apart.
type key struct {
	regarding                 corev1.ObjectReference
	eventType, reason, action string
	note                      string
}

type cached struct {
	seq   uint64 // creation order, so sweeps write in a fixed order
	event *eventsv1.Event
}

type write struct {
	update bool
	event  *eventsv1.Event
}

// New checks o and returns a Recorder with a full token bucket.
func New(o Options) (*Recorder, error) {
	var errs []error
	if o.Clock == nil {
		errs = append(errs, errors.New("events: a clock is required"))
	}
	if o.Sink == nil {
		errs = append(errs, errors.New("events: a sink is required"))
	}
	if o.NodeName == "" {
		errs = append(errs, errors.New("events: a node name is required: it is every event's reportingInstance"))
	} else if len(o.NodeName) > validation.ReportingInstanceLengthLimit {
		errs = append(errs, fmt.Errorf("events: node name %q is longer than the %d characters of reportingInstance", o.NodeName, validation.ReportingInstanceLengthLimit))
	}
	if o.QPS <= 0 {
		errs = append(errs, fmt.Errorf("events: --event-qps %d: must be positive once 0 has been read as 5", o.QPS))
	}
	if o.Burst <= 0 {
		errs = append(errs, fmt.Errorf("events: --event-burst %d: must be positive once 0 has been read as 10", o.Burst))
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	r := &Recorder{
		clk: o.Clock, node: o.NodeName, sink: o.Sink, onDrop: o.OnDrop, onError: o.OnError,
		heartbeat: DefaultHeartbeat, finish: DefaultFinish,
		limiter: rate.NewLimiter(rate.Limit(o.QPS), int(o.Burst)),
		cache:   map[key]*cached{},
		ready:   make(chan struct{}, 1),
	}
	if o.Heartbeat > 0 {
		r.heartbeat = o.Heartbeat
	}
	if o.Finish > 0 {
		r.finish = o.Finish
	}
	return r, nil
}

// Eventf records that something of eventType (Normal or Warning) happened to regarding: reason says
// why, action what was done, and the note, formatted from noteFormat and args, says more. The Event
// goes in regarding's namespace, or "default" for a cluster-scoped object. A note longer than the
// 1 kB the API allows is cut at a character boundary.
func (r *Recorder) Eventf(regarding *corev1.ObjectReference, eventType, reason, action, noteFormat string, args ...any) {
	if regarding == nil {
		r.report(nil, errors.New("events: no regarding object"))
		return
	}
	r.mu.Lock()
	now := r.clk.Now()
	e := r.makeEvent(now, regarding, eventType, reason, action, truncate(fmt.Sprintf(noteFormat, args...), validation.NoteLengthLimit))
	if errs := validation.ValidateCreate(e); len(errs) > 0 {
		r.mu.Unlock()
		r.report(e, fmt.Errorf("events: invalid event %s/%s: %w", e.Namespace, e.Name, errs.ToAggregate()))
		return
	}
	if !r.limiter.AllowN(now, 1) {
		r.dropped++
		total := r.dropped
		r.mu.Unlock()
		if r.onDrop != nil {
			r.onDrop(e, total)
		}
		return
	}
	r.fold(now, e)
	r.mu.Unlock()
	select {
	case r.ready <- struct{}{}:
	default:
	}
}

// makeEvent builds the Event as Kubernetes' recorder does. Called with mu held.
func (r *Recorder) makeEvent(now time.Time, regarding *corev1.ObjectReference, eventType, reason, action, note string) *eventsv1.Event {
	ns := regarding.Namespace
	if ns == "" {
		ns = metav1.NamespaceDefault
	}
	// Kubernetes names an event <regarding name>.<hex nanoseconds>; a fake clock can stand still, so
	// the nanoseconds are kept strictly increasing to keep names unique.
	nano := max(now.UnixNano(), r.lastNano+1)
	r.lastNano = nano
	name := fmt.Sprintf("%s.%x", regarding.Name, nano)
	if len(apivalidation.IsDNS1123Subdomain(name)) > 0 {
		name = fmt.Sprintf("event.%x", nano)
	}
	return &eventsv1.Event{
		TypeMeta:            metav1.TypeMeta{APIVersion: eventsv1.SchemeGroupVersion.String(), Kind: "Event"},
		ObjectMeta:          metav1.ObjectMeta{Name: name, Namespace: ns},
		EventTime:           metav1.NewMicroTime(now),
		ReportingController: ReportingController,
		ReportingInstance:   r.node,
		Action:              action,
		Reason:              reason,
		Regarding:           *regarding,
		Note:                note,
		Type:                eventType,
	}
}

// fold queues the write an occurrence needs, as client-go's recordToSink decides it: the first is
// created, the second turns the cached event into a series of 2 and writes it, later ones only count
// until the heartbeat or the end of the series writes them. Called with mu held.
func (r *Recorder) fold(now time.Time, e *eventsv1.Event) {
	k := key{regarding: e.Regarding, eventType: e.Type, reason: e.Reason, action: e.Action, note: e.Note}
	c, ok := r.cache[k]
	switch {
	case !ok:
		if len(r.cache) == 0 {
			// Sweeps are scheduled from the moment there is something to sweep.
			r.nextSweep = now.Add(r.finish)
			r.nextBeat = now.Add(r.heartbeat)
		}
		r.seq++
		r.cache[k] = &cached{seq: r.seq, event: e}
		r.queue = append(r.queue, write{event: copyEvent(e)})
	case c.event.Series == nil:
		c.event.Series = &eventsv1.EventSeries{Count: 2, LastObservedTime: metav1.NewMicroTime(now)}
		r.queue = append(r.queue, write{update: true, event: copyEvent(c.event)})
	default:
		c.event.Series.Count++
		c.event.Series.LastObservedTime = metav1.NewMicroTime(now)
	}
}

// Step writes every queued event in order, then runs the sweeps due at the clock's now: first the
// end of series not seen for Finish (their final count is written and they are forgotten, as are
// singletons that old), then the heartbeat of the series still open. It returns the writes made.
func (r *Recorder) Step(ctx context.Context) int {
	r.step.Lock()
	defer r.step.Unlock()
	r.mu.Lock()
	r.stepping = true
	writes := r.queue
	r.queue = nil
	writes = append(writes, r.sweep(r.clk.Now())...)
	r.mu.Unlock()
	for _, w := range writes {
		var err error
		if w.update {
			_, err = r.sink.Update(ctx, w.event)
		} else {
			_, err = r.sink.Create(ctx, w.event)
		}
		if err != nil {
			r.report(w.event, err)
		}
	}
	r.mu.Lock()
	r.stepping = false
	r.mu.Unlock()
	return len(writes)
}

// sweep returns the writes the sweeps due at now need. Called with mu held.
func (r *Recorder) sweep(now time.Time) []write {
	if len(r.cache) == 0 {
		return nil
	}
	var writes []write
	if !now.Before(r.nextSweep) {
		r.nextSweep = nextAfter(r.nextSweep, r.finish, now)
		stale := now.Add(-r.finish)
		for _, k := range r.ordered() {
			e := r.cache[k].event
			switch {
			case e.Series != nil && e.Series.LastObservedTime.Time.Before(stale):
				writes = append(writes, write{update: true, event: copyEvent(e)})
				delete(r.cache, k)
			case e.Series == nil && e.EventTime.Time.Before(stale):
				delete(r.cache, k)
			}
		}
	}
	if !now.Before(r.nextBeat) {
		r.nextBeat = nextAfter(r.nextBeat, r.heartbeat, now)
		for _, k := range r.ordered() {
			if e := r.cache[k].event; e.Series != nil {
				writes = append(writes, write{update: true, event: copyEvent(e)})
			}
		}
	}
	return writes
}

// ordered lists the cache's keys in creation order: map order must not reach the writes.
func (r *Recorder) ordered() []key {
	keys := make([]key, 0, len(r.cache))
	for k := range r.cache {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b key) int { return cmp.Compare(r.cache[a].seq, r.cache[b].seq) })
	return keys
}

// nextAfter is the first tick of the grid next + n*period that is after now.
func nextAfter(next time.Time, period time.Duration, now time.Time) time.Time {
	return next.Add((now.Sub(next)/period + 1) * period)
}

func (r *Recorder) report(e *eventsv1.Event, err error) {
	if r.onError != nil {
		r.onError(e, err)
	}
}

// Dropped is how many occurrences the rate limit has dropped.
func (r *Recorder) Dropped() uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.dropped
}

// Pending is the number of writes queued for the next Step.
func (r *Recorder) Pending() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.queue)
}

// NextDeadline is when the next sweep is due; false while no event is cached, when nothing will
// become due by the clock alone.
func (r *Recorder) NextDeadline() (time.Time, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.nextDeadline()
}

func (r *Recorder) nextDeadline() (time.Time, bool) {
	if len(r.cache) == 0 {
		return time.Time{}, false
	}
	if r.nextBeat.Before(r.nextSweep) {
		return r.nextBeat, true
	}
	return r.nextSweep, true
}

// Idle reports that no write is queued or running and no sweep is due at the clock's now.
func (r *Recorder) Idle() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stepping || len(r.queue) > 0 {
		return false
	}
	next, ok := r.nextDeadline()
	return !ok || r.clk.Now().Before(next)
}

// Run steps whenever events are queued or a sweep is due, until ctx ends. The simulator calls Step
// itself instead.
func (r *Recorder) Run(ctx context.Context) error {
	for {
		r.Step(ctx)
		var fire <-chan time.Time
		var t *clock.Timer
		if next, ok := r.NextDeadline(); ok {
			d := r.clk.Until(next)
			if d <= 0 {
				continue
			}
			t = r.clk.Timer(d)
			fire = t.C
		}
		select {
		case <-ctx.Done():
			if t != nil {
				t.Stop()
			}
			return ctx.Err()
		case <-r.ready:
		case <-fire:
		}
		if t != nil {
			t.Stop()
		}
	}
}

// truncate cuts s to at most n bytes without splitting a character.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// PodReference refers to pod, for Eventf.
func PodReference(pod *corev1.Pod) *corev1.ObjectReference {
	return &corev1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID}
}

// ContainerReference refers to the pod's container name for Eventf, by its field path in the spec:
// spec.initContainers{name} for an init container, else spec.containers{name}.
func ContainerReference(pod *corev1.Pod, name string) *corev1.ObjectReference {
	r := PodReference(pod)
	r.FieldPath = fmt.Sprintf("spec.containers{%s}", name)
	for _, c := range pod.Spec.InitContainers {
		if c.Name == name {
			r.FieldPath = fmt.Sprintf("spec.initContainers{%s}", name)
		}
	}
	return r
}

// NodeReference refers to the node named name, for Eventf; Kubernetes' kubelet uses the node name as
// the UID of its node reference too.
func NodeReference(name string) *corev1.ObjectReference {
	return &corev1.ObjectReference{Kind: "Node", Name: name, UID: types.UID(name)}
}

// copyEvent copies e deeply enough that the cache can go on counting a series while the copy waits
// in the queue (the events/v1 types have no generated DeepCopy).
func copyEvent(e *eventsv1.Event) *eventsv1.Event {
	c := *e
	e.ObjectMeta.DeepCopyInto(&c.ObjectMeta)
	if e.Series != nil {
		s := *e.Series
		c.Series = &s
	}
	if e.Related != nil {
		rel := *e.Related
		c.Related = &rel
	}
	return &c
}
