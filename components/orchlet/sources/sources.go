package sources

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/benbjohnson/clock"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"orch.io/orch/components/apis/orchlet/v1beta1"
)

// Source names, the values of ConfigSourceAnnotation.
const (
	SourceFile = "file"
	SourceHTTP = "http"
	// SourceAPI is the API server in API-server mode: pods bound to the node.
	SourceAPI = "api"
)

// Source is one place static pods come from.
type Source interface {
	// Name is SourceFile or SourceHTTP.
	Name() string
	// Read returns every manifest the source holds now. An error means the source could not be read
	// as a whole; its pods are then left as they were.
	Read(ctx context.Context) ([]Manifest, error)
}

// Manifest is one document read from a source: its pods as written, or why they cannot be used.
type Manifest struct {
	// Origin is the file path or URL, used in reports and hashed into the pods' UIDs.
	Origin string
	Pods   []*corev1.Pod
	Err    error
}

// Reasons a Problem carries, usable as event reasons.
const (
	// ReasonReadFailed: the source could not be read at all (unlistable directory, HTTP error).
	ReasonReadFailed = "ManifestReadFailed"
	// ReasonInvalidManifest: a manifest did not parse or lacks what a pod needs.
	ReasonInvalidManifest = "InvalidManifest"
	// ReasonDuplicate: a pod's name or UID is already taken; Kubernetes' kubelet records this
	// reason for a duplicate pod name.
	ReasonDuplicate = "FailedValidation"
)

// Problem is something a poll could not use. The state it would have changed is left as it was.
type Problem struct {
	Source string
	Origin string
	Reason string
	// Pod is the rejected pod after the static-pod rules, for a duplicate; nil otherwise.
	Pod *corev1.Pod
	Err error
}

func (p Problem) String() string {
	if p.Origin == "" {
		return fmt.Sprintf("%s source: %s: %v", p.Source, p.Reason, p.Err)
	}
	return fmt.Sprintf("%s source %s: %s: %v", p.Source, p.Origin, p.Reason, p.Err)
}

// Reporter hears of every Problem, in the order polls find them, so the agent can log it and record
// an event. It is called from Step and must not call back into Sources.
type Reporter interface {
	Report(Problem)
}

// ReporterFunc adapts a function to Reporter.
type ReporterFunc func(Problem)

// Report calls f.
func (f ReporterFunc) Report(p Problem) { f(p) }

// Op is what an Update does to the desired state.
type Op string

// The operations, as in Kubernetes' incremental pod config notifications.
const (
	OpAdd    Op = "ADD"
	OpUpdate Op = "UPDATE"
	OpRemove Op = "REMOVE"
)

// Update is one change to one pod of the desired state. Pod is the new pod for OpAdd and OpUpdate,
// the last one for OpRemove.
type Update struct {
	Op     Op
	Source string
	Pod    *corev1.Pod
}

func (u Update) String() string {
	return fmt.Sprintf("%s %s %s/%s %s", u.Op, u.Source, u.Pod.Namespace, u.Pod.Name, u.Pod.UID)
}

// Entry is one pod of the desired state and the source that defines it.
type Entry struct {
	Source string
	Pod    *corev1.Pod
}

// Snapshot is the merged desired state of all sources, keyed by pod UID.
type Snapshot map[types.UID]Entry

// Apply changes s as u says, so a consumer of updates can keep its own copy of the state.
func (s Snapshot) Apply(u Update) {
	if u.Op == OpRemove {
		delete(s, u.Pod.UID)
		return
	}
	s[u.Pod.UID] = Entry{Source: u.Source, Pod: u.Pod}
}

// Poll is a source and how often it is read.
type Poll struct {
	Source Source
	Every  time.Duration
}

// Options are what Sources needs from the agent.
type Options struct {
	Clock clock.Clock
	// NodeName is what NodeName returns; it is appended to pod names and hashed into file pods' UIDs.
	NodeName string
	Reporter Reporter
	// Logger hears of watches that fail; the zero Logger discards.
	Logger klog.Logger
}

// Sources polls its sources on the clock and keeps their merged desired state.
type Sources struct {
	clk    clock.Clock
	node   string
	report Reporter
	logger klog.Logger

	step sync.Mutex // one Step at a time, so polls never interleave

	mu       sync.Mutex
	polls    []*poller
	pods     Snapshot
	gen      uint64 // counts the merges that changed pods
	queue    []Update
	stepping bool
	ready    chan struct{}
}

type poller struct {
	Poll
	next time.Time
	// woken: its Notifier saw a change, so it is due now without moving its next poll.
	woken bool
	// good holds, per origin, the pods of its last usable manifest, so a broken manifest keeps them.
	good map[string]usable
	// origins of the last merge in order, whether it reported nothing, and gen after it.
	origins []string
	quiet   bool
	gen     uint64
	// polled: the source has been read at least once.
	polled bool
}

// usable is a manifest's pods after the static-pod rules and, from a source of this package, the
// bytes they were decoded from: the same bytes at the same origin give the same pods.
type usable struct {
	data []byte
	pods []*corev1.Pod
}

// New polls each source every Every, starting at once: every source is due on the first Step.
// Sources are polled in the order given when due at the same instant.
func New(o Options, polls ...Poll) (*Sources, error) {
	var errs []error
	if o.Clock == nil {
		errs = append(errs, errors.New("sources: a clock is required"))
	}
	if o.NodeName == "" {
		errs = append(errs, errors.New("sources: a node name is required"))
	}
	if o.Reporter == nil {
		errs = append(errs, errors.New("sources: a reporter is required"))
	}
	s := &Sources{clk: o.Clock, node: o.NodeName, report: o.Reporter, logger: o.Logger, pods: Snapshot{}, ready: make(chan struct{}, 1)}
	seen := map[string]bool{}
	for i, p := range polls {
		switch {
		case p.Source == nil:
			errs = append(errs, fmt.Errorf("sources: poll %d has no source", i))
			continue
		case p.Every <= 0:
			errs = append(errs, fmt.Errorf("sources: %s source: period %v must be positive", p.Source.Name(), p.Every))
		case seen[p.Source.Name()]:
			errs = append(errs, fmt.Errorf("sources: %s source given twice", p.Source.Name()))
		}
		seen[p.Source.Name()] = true
		if o.Clock != nil {
			s.polls = append(s.polls, &poller{Poll: p, next: o.Clock.Now(), good: map[string]usable{}})
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return s, nil
}

// FromConfig returns the polls the configuration asks for: the file source when StaticPodPath is
// set, then the HTTP source when StaticPodURL is set. fsys holds the manifest path; nil means the
// machine's filesystem.
func FromConfig(c *v1beta1.OrchletConfiguration, fsys fs.FS, client *http.Client) ([]Poll, error) {
	var polls []Poll
	if c.StaticPodPath != "" {
		var src *FileSource
		if fsys == nil {
			var err error
			if src, err = OSFileSource(c.StaticPodPath); err != nil {
				return nil, err
			}
		} else {
			src = &FileSource{FS: fsys, Path: c.StaticPodPath}
		}
		polls = append(polls, Poll{Source: src, Every: c.FileCheckFrequency.Duration})
	}
	if c.StaticPodURL != "" {
		if client == nil {
			return nil, errors.New("--manifest-url: an HTTP client is required")
		}
		polls = append(polls, Poll{
			Source: &HTTPSource{Client: client, URL: c.StaticPodURL, Header: c.StaticPodURLHeader},
			Every:  c.HTTPCheckFrequency.Duration,
		})
	}
	return polls, nil
}

// Step runs every poll due at the clock's now, one after another in the order given to New, and
// queues the updates each produces. It returns the number of polls run.
func (s *Sources) Step(ctx context.Context) int {
	s.step.Lock()
	defer s.step.Unlock()
	s.mu.Lock()
	s.stepping = true
	now := s.clk.Now()
	var due []*poller
	for _, p := range s.polls {
		if p.woken || !now.Before(p.next) {
			p.woken = false // a change seen from now on wakes it again
			due = append(due, p)
		}
	}
	s.mu.Unlock()
	for _, p := range due {
		docs, err := readDocs(ctx, p.Source)
		s.mu.Lock()
		// The next poll is a whole period after this one; a late Step does not make up missed polls.
		// A read woken by a change leaves the poll's schedule as it was.
		if !now.Before(p.next) {
			p.next = p.next.Add(p.Every)
			if !p.next.After(now) {
				p.next = now.Add(p.Every)
			}
		}
		p.polled = true
		var problems []Problem
		if err != nil {
			problems = []Problem{{Source: p.Source.Name(), Reason: ReasonReadFailed, Err: err}}
		} else {
			problems = s.merge(p, docs)
		}
		s.mu.Unlock()
		for _, pr := range problems {
			s.report.Report(pr)
		}
	}
	s.mu.Lock()
	s.stepping = false
	s.mu.Unlock()
	return len(due)
}

// merge replaces p's pods with what docs define and queues the differences. Called with mu held.
func (s *Sources) merge(p *poller, docs []doc) []Problem {
	if s.settled(p, docs) {
		return nil
	}
	name := p.Source.Name()
	var problems []Problem
	good := make(map[string]usable, len(docs))
	origins := make([]string, 0, len(docs))
	count := 0 // pods to claim, to size the maps below
	for _, d := range docs {
		origins = append(origins, d.origin)
		if last, ok := p.cached(d); ok {
			// Keeping the very pods skips decoding and tells the diff below that they did not change.
			good[d.origin] = last
			count += len(last.pods)
			continue
		}
		pods, err := s.applyRules(name, d)
		if err != nil {
			problems = append(problems, Problem{Source: name, Origin: d.origin, Reason: ReasonInvalidManifest, Err: err})
			if last, had := p.good[d.origin]; had {
				good[d.origin] = last
				count += len(last.pods)
			}
			continue
		}
		good[d.origin] = usable{data: d.data, pods: pods}
		count += len(pods)
	}
	p.good = good

	// Claim names and UIDs in manifest order; a pod whose name or UID another source already holds,
	// or an earlier manifest of this source claimed, is rejected as Kubernetes does. No two pods of
	// the desired state share a name, so each name other sources hold has one holder.
	held := make(map[podName]string, len(s.pods))
	for _, e := range s.pods {
		if e.Source != name {
			held[nameOf(e.Pod)] = e.Source
		}
	}
	want := make(map[types.UID]*corev1.Pod, count)
	names := make(map[podName]bool, count)
	for _, origin := range origins {
		for _, pod := range good[origin].pods {
			full := nameOf(pod)
			if err := s.taken(name, full, pod.UID, names, want, held); err != nil {
				problems = append(problems, Problem{Source: name, Origin: origin, Reason: ReasonDuplicate, Pod: pod.DeepCopy(), Err: err})
				continue
			}
			names[full] = true
			want[pod.UID] = pod
		}
	}

	var removed, changed []Update
	for uid, e := range s.pods {
		if e.Source != name {
			continue
		}
		if _, ok := want[uid]; !ok {
			removed = append(removed, Update{Op: OpRemove, Source: name, Pod: e.Pod})
		}
	}
	for uid, pod := range want {
		old, ok := s.pods[uid]
		switch {
		case !ok:
			changed = append(changed, Update{Op: OpAdd, Source: name, Pod: pod})
		case old.Pod != pod && !equality.Semantic.DeepEqual(old.Pod, pod):
			changed = append(changed, Update{Op: OpUpdate, Source: name, Pod: pod})
		}
	}
	// Removals first, then additions and changes, each by namespace/name then UID: map order must
	// not reach the updates.
	sortUpdates(removed)
	sortUpdates(changed)
	for _, u := range append(removed, changed...) {
		s.pods.Apply(u)
		s.queue = append(s.queue, Update{Op: u.Op, Source: u.Source, Pod: u.Pod.DeepCopy()})
	}
	if len(removed)+len(changed) > 0 {
		s.gen++
		select {
		case s.ready <- struct{}{}:
		default:
		}
	}
	p.origins, p.quiet, p.gen = origins, len(problems) == 0, s.gen
	return problems
}

// cached is p's pods of d's origin when d holds the very bytes they were decoded from.
func (p *poller) cached(d doc) (usable, bool) {
	last, ok := p.good[d.origin]
	return last, ok && d.err == nil && !d.decoded && bytes.Equal(d.data, last.data)
}

// settled says merging docs would change and report nothing: p's last merge reported nothing, the
// desired state is as it left it, and docs hold the same bytes at the same origins in the same order.
func (s *Sources) settled(p *poller, docs []doc) bool {
	if !p.quiet || p.gen != s.gen || len(docs) != len(p.origins) {
		return false
	}
	for i, d := range docs {
		if _, ok := p.cached(d); !ok || d.origin != p.origins[i] {
			return false
		}
	}
	return true
}

func (s *Sources) applyRules(source string, d doc) ([]*corev1.Pod, error) {
	raws, err := d.decode()
	if err != nil {
		return nil, err
	}
	pods := make([]*corev1.Pod, 0, len(raws))
	for _, raw := range raws {
		pod, err := staticPod(raw, source, d.origin, s.node)
		if err != nil {
			return nil, err
		}
		pods = append(pods, pod)
	}
	return pods, nil
}

// podName is a pod's namespace and name, a map key that costs no allocation.
type podName struct{ namespace, name string }

func nameOf(p *corev1.Pod) podName { return podName{p.Namespace, p.Name} }

func (n podName) String() string { return n.namespace + "/" + n.name }

// taken says why a pod of source may not have full name and uid; held maps the names other sources
// hold to their source. Called with mu held.
func (s *Sources) taken(source string, full podName, uid types.UID, names map[podName]bool, want map[types.UID]*corev1.Pod, held map[podName]string) error {
	if names[full] {
		return fmt.Errorf("duplicate pod name %q in the %s source, ignoring", full, source)
	}
	if _, ok := want[uid]; ok {
		return fmt.Errorf("duplicate pod UID %q in the %s source, ignoring", uid, source)
	}
	if e, ok := s.pods[uid]; ok && e.Source != source {
		return fmt.Errorf("pod UID %q is already defined by the %s source, ignoring", uid, e.Source)
	}
	if other, ok := held[full]; ok {
		return fmt.Errorf("duplicate pod name %q: already defined by the %s source, ignoring", full, other)
	}
	return nil
}

func sortUpdates(us []Update) {
	slices.SortFunc(us, func(a, b Update) int {
		if c := strings.Compare(a.Pod.Namespace+"/"+a.Pod.Name, b.Pod.Namespace+"/"+b.Pod.Name); c != 0 {
			return c
		}
		return strings.Compare(string(a.Pod.UID), string(b.Pod.UID))
	})
}

// Drain takes every queued update, oldest first.
func (s *Sources) Drain() []Update {
	s.mu.Lock()
	defer s.mu.Unlock()
	q := s.queue
	s.queue = nil
	return q
}

// Pending is the number of queued updates Drain would return.
func (s *Sources) Pending() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.queue)
}

// Polled reports that every source has been read at least once and its updates drained: until then
// a pod the runtime has may be one a source is about to name (the kubelet's sourcesReady).
func (s *Sources) Polled() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range s.polls {
		if !p.polled {
			return false
		}
	}
	return len(s.queue) == 0
}

// Ready receives a value after a Step queues updates, for a consumer that waits instead of polling.
func (s *Sources) Ready() <-chan struct{} { return s.ready }

// Snapshot is a copy of the merged desired state after the updates queued so far.
func (s *Sources) Snapshot() Snapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(Snapshot, len(s.pods))
	for uid, e := range s.pods {
		out[uid] = Entry{Source: e.Source, Pod: e.Pod.DeepCopy()}
	}
	return out
}

// NextDeadline is when the next poll is due; false when there are no sources.
func (s *Sources) NextDeadline() (time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.nextDeadline()
}

func (s *Sources) nextDeadline() (time.Time, bool) {
	var next time.Time
	for i, p := range s.polls {
		due := p.next
		if p.woken {
			due = s.clk.Now()
		}
		if i == 0 || due.Before(next) {
			next = due
		}
	}
	return next, len(s.polls) > 0
}

// Idle reports that no poll is running or due at the clock's now and no update waits to be drained.
// It reads the clock rather than waiting for a timer, so it turns false the moment a fake clock
// reaches a deadline.
func (s *Sources) Idle() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stepping || len(s.queue) > 0 {
		return false
	}
	next, ok := s.nextDeadline()
	return !ok || s.clk.Now().Before(next)
}

// Run steps whenever a poll is due, or a watched source changed, until ctx ends. The simulator
// calls Step itself instead and so watches nothing.
func (s *Sources) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	var watches sync.WaitGroup
	defer watches.Wait()
	defer cancel()
	wake := make(chan struct{}, 1)
	for _, p := range s.polls {
		if w, ok := p.Source.(watched); ok && w.notifier() != nil {
			watches.Go(func() { s.watch(ctx, p, w.notifier(), wake) })
		}
	}
	for {
		s.Step(ctx)
		next, ok := s.NextDeadline()
		if !ok {
			<-ctx.Done()
			return ctx.Err()
		}
		d := s.clk.Until(next)
		if d <= 0 {
			continue
		}
		t := s.clk.Timer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		case <-wake:
			t.Stop()
		}
	}
}
