package sim

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing/fstest"
	"time"

	"github.com/benbjohnson/clock"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	apiversion "k8s.io/apimachinery/pkg/version"

	"orch.io/orch/components/apis/orchlet/v1beta1"
	"orch.io/orch/components/featuregates"
	"orch.io/orch/components/orchlet/agent"
	"orch.io/orch/components/orchlet/cm"
	"orch.io/orch/components/orchlet/cpumanager"
	"orch.io/orch/components/orchlet/eviction"
	"orch.io/orch/components/orchlet/memorymanager"
	"orch.io/orch/components/orchlet/options"
	"orch.io/orch/components/orchlet/pods"
	"orch.io/orch/components/orchlet/sources"
	"orch.io/orch/fakecri"
	"orch.io/orch/fakecri/calllog"
	"orch.io/orch/fakecri/script"
)

// NodeOptions describe one node.
type NodeOptions struct {
	Name string
	// Args are orchlet command-line options, parsed by the production parser; with Config nil they
	// are the node's configuration (the manifest directory and URL they name are the world's).
	Args []string
	// Config, when set, is used instead of Args.
	Config *v1beta1.OrchletConfiguration
	// Script is the node's fakecri behaviour (nil: a healthy runtime).
	Script *script.Script
	// Cores is the node's CPU count, for --pods-per-core (default 2).
	Cores int
	// API runs the node in API-server mode against the world's API server (Options.APIServer):
	// it registers its Node, posts its status, renews its Lease and runs the pods bound to it.
	API bool
	// Host is the machine's memory and processes for the eviction manager (nil: the defaults).
	Host *Host
	// replies, when set, sees and may change every answer of the runtime before the agent reads
	// it: the seam through which a test feeds the agent answers no runtime gives.
	replies replyHook
}

// Node is one orchlet on its own fakecri.
type Node struct {
	// What the driver reads at every look of every node comes first, on the struct's first five
	// cache lines (a Node is 64-byte aligned): at 10,000 nodes every pass over them misses each
	// line it reads, and the fields were spread over all nine.

	stepping bool
	// quiet: the last look left the node with nothing to do now (rest), and nothing reached it
	// since (wake); began says begin stepped something.
	quiet, began bool
	updated      bool // the sources sent updates since the desired state was last compared: it changed
	stepped      bool // the pod workers finished a Step, publishing statuses, since the last look
	read         bool // a reader stepped or the agent started since the last look: the conditions may have moved
	down         bool // the agent is killed
	// timedKnown: the timed readers' deadline was read since the agent booted, timedAny: they have
	// one (timedDue); feedKnown and feedAny the same of the feeders (feedDue).
	timedKnown, timedAny bool
	feedKnown, feedAny   bool
	background           bool // the agent pulls images in the background (not --serialize-image-pulls)
	// noCalls: the last rest found no Step running and no call of the pod workers' in progress,
	// and no Step started since.
	noCalls bool
	// pvFresh: pv is the pod workers' PodsVersion, read with no Step running and none started
	// since (podsVersionNow).
	pvFresh bool
	// timed has bit i set when readers[i] is a timed reader (timedReader); a reader past the 16th
	// is not marked, and is asked at every look as an untimed one is.
	timed uint16
	// obsWaiting is how many of the observer's lines wait to be read (linesWaiting), kept here by
	// the observer for the looks; quietLines was it when the node went quiet.
	quietLines int32
	obsWaiting atomic.Int32
	clk        *clock.Mock
	rt         *fakecri.Runtime
	obs        *observer
	// pods is the agent's, which the driver reads at every look: kept here, the looks do not read
	// the agent's struct, a cache line missed a pass at 10,000 nodes.
	pods  *pods.Manager
	memcg *simMemcg
	api   *apiNode // nil in standalone mode
	// apiAt, when not zero, is the UnixNano before which the node's API-server mode has nothing
	// due (stepAPI's timed work), as the last stepAPI left it with the pods version synced and
	// fresh; a pod change handed over (deliver) or a Step started (which may publish; a new
	// agent's first among them) clears it. Until then the API pass skips the node without
	// reading its apiNode, a cold line at every round of every node.
	apiAt int64

	quietSeq uint64        // the runtime's LastSeq when the node went quiet
	pv       uint64        // see pvFresh
	lastCall uint64        // the last call the trace has said (and every one before it)
	done     chan struct{} // the running Step's: a value once it returned
	steps    chan step     // to stepLoop
	stepDone chan struct{} // stepLoop's Steps' done, made again by Restart
	// life is the context of everything the agent does, ended by Kill.
	life context.Context

	agentDue time.Time // when the node went quiet, its agent's and runtime's next due time
	// feedDue is the feeders' earliest NextDeadline as the last begin left them.
	feedDue     time.Time
	podsVersion uint64 // the pod workers' PodsVersion that podState reflects

	// timedDue is the earliest NextDeadline of the timed readers. Until it passes none of them is
	// due, nor moved (only their Step moves it): their structs, a cold line each, are not read.
	timedDue time.Time
	// The agent's components but its pod workers, which the driver steps apart: those that feed
	// them and those that read what they did.
	readers  []agent.Component
	inFlight map[uint64]bool // timed calls whose start is traced and whose end is not

	due     time.Time         // nextDue's answer, for the world's next
	pending []pending         // gather's lines for flush, kept to reuse the array
	lines   map[string]string // gather's recent lines of untimed calls, each made once
	ended   map[uint64]bool   // calls after lastCall whose end is traced

	// The rest is read when the node does something (flush reads Name and gather text at most
	// instants: next to the above).

	Name    string
	text    []byte // gather's buffer for a call's line, kept to reuse the array
	Config  *v1beta1.OrchletConfiguration
	Agent   *agent.Agent
	Runtime *fakecri.Runtime

	world *World
	cri   inProcess // the agent's client of rt
	fs    *memFS
	url   *manifestServer
	// sampler reads the node's signals for the world's Options.SignalPeriod; nil without it.
	sampler *sampler
	feeders []agent.Component
	sources *sources.Sources // read with the feeders, when their poll is due

	// boot makes the agent on the node's runtime and directories; link is its connection to the
	// runtime, ended by Kill.
	boot func() error
	link *link
	stop context.CancelFunc
	// attach wires the agent to the world's API server (attachAPI), again by Restart; nil in
	// standalone mode.
	attach func() error

	// What the trace has already said.
	podState map[string]tracedPod
	desired  sources.Snapshot
	pressure string // the eviction manager's conditions last traced
}

// AddNode starts a node: the production agent, wired as the orchlet app wires it, on its own
// fakecri called in-process.
func (w *World) AddNode(o NodeOptions) (*Node, error) {
	if o.Name == "" {
		return nil, errors.New("sim: a node needs a name")
	}
	if _, dup := w.Node(o.Name); dup {
		return nil, fmt.Errorf("sim: node %q added twice", o.Name)
	}
	// A node given a Config keeps the command-line-only options at their defaults; its gates are
	// the Config's.
	var args []string
	if o.Config == nil {
		args = o.Args
	}
	opts, err := options.Parse(args, apiversion.Info{GitVersion: "v0.0.0-sim"})
	if err != nil {
		return nil, fmt.Errorf("sim: node %s: %w", o.Name, err)
	}
	cfg := o.Config
	if cfg == nil {
		if opts.Action != options.ActionRun {
			return nil, fmt.Errorf("sim: node %s: the options ask for help or the version, not a run", o.Name)
		}
		if err := checkHost(o.Name, o.Host, opts); err != nil {
			return nil, err
		}
		cfg = opts.Config
	} else if opts.Gates, err = featuregates.New(cfg.FeatureGates); err != nil {
		return nil, fmt.Errorf("sim: node %s: featureGates: %w", o.Name, err)
	}
	separateDiskGC := opts.Gates.Enabled(featuregates.OrchletSeparateDiskGC)
	if o.Cores == 0 {
		o.Cores = 2
	}
	i := len(w.nodes)
	rt, err := fakecri.New(fakecri.Options{Clock: w.Clock, Seed: w.seed + int64(i), Script: o.Script})
	if err != nil {
		return nil, fmt.Errorf("sim: node %s: fakecri: %w", o.Name, err)
	}
	n := &Node{Name: o.Name, Config: cfg, Runtime: rt, world: w, clk: w.Clock, rt: rt, cri: inProcess{rt: rt, reply: o.replies},
		inFlight: map[uint64]bool{}, ended: map[uint64]bool{}, lines: map[string]string{}, podState: map[string]tracedPod{}, desired: sources.Snapshot{},
		steps: make(chan step), stepDone: make(chan struct{}, 1), read: true, background: !cfg.SerializeImagePulls}
	go n.stepLoop(w.ctx)
	n.obs = &observer{now: w.Clock.Now, waiting: &n.obsWaiting}
	n.fs = &memFS{dir: strings.TrimPrefix(filepath.ToSlash(filepath.Clean("/"+cfg.StaticPodPath)), "/"), obs: n.obs, m: fstest.MapFS{}}
	if n.fs.dir == "" {
		n.fs.dir = "."
	}
	n.url = &manifestServer{url: cfg.StaticPodURL, obs: n.obs, status: http.StatusNotFound}
	logs := filepath.Join(w.dir, "logs", fmt.Sprint(i))
	if err := os.MkdirAll(logs, 0o755); err != nil {
		return nil, fmt.Errorf("sim: %w", err)
	}
	observer, memcg := newObserver(n.cri, w.Clock.Now, o.Host, cfg, separateDiskGC)
	n.memcg = memcg
	if w.signalPeriod > 0 {
		n.sampler = newSampler(n, o.Host, separateDiskGC)
	}
	var sourcesReady func() bool
	if o.API {
		// As production: the runtime's pods wait for the API's pods before any is an orphan.
		sourcesReady = func() bool { return n.api != nil && n.api.synced.Load() }
	}
	root := filepath.Join(w.dir, "root", fmt.Sprint(i))
	var cpuTopology func() (*cpumanager.Topology, error)
	var numaNodes func() ([]memorymanager.Node, error)
	if o.Host != nil && o.Host.CPUs != nil {
		layout, memory := *o.Host.CPUs, o.Host.memory()
		cpuTopology = layout.topology
		numaNodes = func() ([]memorymanager.Node, error) { return layout.numaNodes(memory) }
	}
	// Node allocatable's reservation, which the Static memory manager's --reserved-memory must
	// add up to, as the app's.
	var reservation corev1.ResourceList
	if cfg.MemoryManagerPolicy == memorymanager.PolicyStatic {
		res, err := cm.NodeResources(cfg, opts.Flags.ExperimentalAllocatableIgnoreEviction, cm.Machine{Cores: o.Cores, Memory: int64(o.Host.memory())})
		if err != nil {
			return nil, fmt.Errorf("sim: node %s: %w", o.Name, err)
		}
		reservation = res.Reservation
	}
	// The agent is made here and again by Restart, on the same runtime, root and log directories.
	n.boot = func() error {
		n.link = &link{inProcess: n.cri}
		a, err := agent.New(cfg, agent.Deps{
			Clock: w.Clock, NodeName: o.Name, Runtime: n.link, Images: n.link, Gates: opts.Gates, Sink: traceSink{n.obs}, OnEventDropped: traceDrop(n.obs),
			FS: n.fs, HTTP: &http.Client{Transport: n.url}, Dial: refuseDial, Cores: o.Cores,
			PodLogsDir: logs, Logger: w.logger, SourcesReady: sourcesReady, Observer: observer,
			Memcg: &eviction.MemcgNotifications{Factory: memcg, MemoryRoot: simMemoryRoot, PodsCgroup: simPodsCgroup}, DiskUsage: diskUsage(rt, logs),
			// The node's --root-dir (volumes, hosts and termination files) goes with the world's directory.
			PodNode: pods.Node{Name: o.Name, RootDir: root}, RootDir: root, CPUTopology: cpuTopology,
			NUMANodes: numaNodes, Reservation: reservation,
		})
		if err != nil {
			return err
		}
		n.Agent = a
		if err := n.enableGC(opts, logs, sourcesReady); err != nil {
			return err
		}
		cs := n.Agent.Components()
		workers := slices.IndexFunc(cs, func(c agent.Component) bool { return c.Name() == agent.ComponentPodWorkers })
		n.feeders, n.readers = cs[:workers], cs[workers+1:]
		n.timed, n.timedKnown, n.feedKnown, n.noCalls = 0, false, false, false
		for i, c := range n.readers {
			if timedReader[c.Name()] {
				n.timed |= 1 << i
			}
		}
		n.pods, n.sources = a.Pods, a.Sources
		n.life, n.stop = context.WithCancel(w.ctx)
		return nil
	}
	if err := n.boot(); err != nil {
		return nil, fmt.Errorf("sim: node %s: %w", o.Name, err)
	}
	if o.API {
		n.attach = func() error { return w.attachAPI(n, i, o.Cores, opts.Flags.ExperimentalAllocatableIgnoreEviction) }
		if err := n.attach(); err != nil {
			return nil, err
		}
	}
	// As production does before its loops: the runtime gets --pod-cidr before any sandbox.
	if err := n.Agent.Start(context.Background()); err != nil {
		return nil, fmt.Errorf("sim: node %s: %w", o.Name, err)
	}
	w.nodes = append(w.nodes, n)
	w.named[n.Name] = n
	return n, nil
}

// WriteManifest writes (or replaces) a file in the node's manifest directory.
func (n *Node) WriteManifest(name string, data []byte) {
	n.fs.write(name, data)
	n.world.Note(n.Name, "write manifest %s (%d bytes)", name, len(data))
}

// DeleteManifest removes a file from the node's manifest directory.
func (n *Node) DeleteManifest(name string) {
	n.fs.remove(name)
	n.world.Note(n.Name, "delete manifest %s", name)
}

// Serve sets what the node's manifest URL answers from now on.
func (n *Node) Serve(status int, body []byte) {
	n.url.serve(status, body)
	n.world.Note(n.Name, "manifest URL serves %d (%d bytes)", status, len(body))
}

// SetScript replaces the node's fakecri script: usage, faults, container behaviours.
func (n *Node) SetScript(s *script.Script) error {
	if err := n.rt.SetScript(s); err != nil {
		return fmt.Errorf("sim: node %s: %w", n.Name, err)
	}
	n.world.Note(n.Name, "fakecri script replaced")
	return nil
}

// Pod returns the node's pod of that namespace/name as the agent last published it.
func (n *Node) Pod(key string) (corev1.Pod, bool) {
	for _, p := range n.Agent.Pods.Pods() {
		if p.Namespace+"/"+p.Name == key {
			return p, true
		}
	}
	return corev1.Pod{}, false
}

// Trace classes order the lines of one node at one instant as a Step makes them: sources are read,
// their changes reach the pod workers, background pulls that ended are taken up, CRI calls are
// made (background pulls starting after them), statuses published, events written. Background
// pulls (--serialize-image-pulls=false) run side by side, so which reaches the runtime first is
// the scheduler's choice: their lines are ordered by text within their class.
const (
	classSource = iota
	classDesired
	classPullEnd
	classCRI
	classPullStart
	classPod
	classAPI
	classEvent
	classDrop
)

type pending struct {
	observed
	class int
	order int
}

// collect records what the node did since the last look, in (time, class, order) order. The driver
// calls it only when the node is settled, so what it reads is fixed by the simulation alone.
func (w *World) collect(n *Node) {
	w.gather(n, w.Clock.Now())
	w.flush(n)
}

// flush records the lines gather left the node, in their order.
func (w *World) flush(n *Node) {
	for _, p := range n.pending {
		w.record(Entry{At: p.at.Sub(w.start), Node: n.Name, Kind: p.kind, Text: p.text})
	}
	clear(n.pending)
	n.pending = n.pending[:0]
}

// line is a call's line as a string. An untimed call's (a relist's, a status post's) is mostly the
// one the node's last calls of its method made: those are made once and kept, a few a node, where
// copying each was an allocation at every call of every node.
func (n *Node) line(text []byte, timed bool) string {
	if timed {
		return string(text)
	}
	if l, ok := n.lines[string(text)]; ok {
		return l
	}
	if len(n.lines) >= maxLines {
		clear(n.lines)
	}
	l := string(text)
	n.lines[l] = l
	return l
}

// maxLines bounds a node's kept lines: an empty node's relists and status posts have about six.
const maxLines = 16

// callBuffers are gather's copies of a node's new runtime calls, kept to reuse their arrays.
var callBuffers = sync.Pool{New: func() any { return new([]calllog.Call) }}

// gather puts what the node did since the last look in n.pending, in (time, class, order) order,
// for flush to record. It reads and changes that node alone (and nothing of the world's but its
// start), so the nodes gather at once.
func (w *World) gather(n *Node, now time.Time) {
	seq, lines := n.rt.LastSeq(), n.linesWaiting()
	n.wake(seq, lines)
	if !n.updated && !n.stepped && !n.read && len(n.inFlight) == 0 && seq == n.lastCall && lines == 0 {
		// Nothing happened since the last look (the second look at each instant, most often):
		// no line waits, no call was made and the log is empty, the desired pods, the published
		// statuses and the conditions are as traced. What follows would find nothing.
		return
	}
	read := n.read
	n.read = false
	out := n.pending[:0]
	add := func(class int, at time.Time, kind, text string) {
		out = append(out, pending{observed: observed{at: at, kind: kind, text: text}, class: class, order: len(out)})
	}
	for _, o := range n.obs.take() {
		class := classSource
		switch {
		case o.kind == KindEvent && strings.HasPrefix(o.text, dropPrefix):
			class = classDrop
		case o.kind == KindEvent:
			class = classEvent
		case o.kind == KindAPI:
			class = classAPI
		}
		add(class, o.at, o.kind, o.text)
	}

	if n.updated {
		n.updated = false
		w.diffDesired(n, now, add)
	}

	advance := true // every call up to this one has ended and been traced: lastCall may move
	buf := callBuffers.Get().(*[]calllog.Call)
	calls := n.rt.AppendCalls((*buf)[:0], calllog.Filter{Since: n.lastCall})
	defer func() { clear(calls); *buf = calls[:0]; callBuffers.Put(buf) }() // the log's requests are not kept alive
	for _, c := range calls {
		if n.ended[c.Seq] {
			if advance {
				delete(n.ended, c.Seq)
				n.lastCall = c.Seq
			}
			continue
		}
		startClass, endClass := classCRI, classCRI
		if n.background && c.Method == "PullImage" {
			startClass, endClass = classPullStart, classPullEnd
		}
		timed := c.End.IsZero() || c.End.After(c.Start)
		if timed && !n.inFlight[c.Seq] {
			n.inFlight[c.Seq] = true
			add(startClass, c.Start, KindCRI, fmt.Sprintf("%s %s ...", c.Method, c.Request))
		}
		if c.End.IsZero() {
			advance = false // a background pull still runs; calls after it may have ended
			continue
		}
		// Most lines of a long simulation are these, one a call: built in the node's buffer, not
		// by fmt (a strings.Builder given to fmt escaped, and grew a buffer, at every call), and
		// copied once into the line.
		text := n.text[:0]
		if timed {
			delete(n.inFlight, c.Seq)
			text = append(append(append(append(text, c.Method...), " -> "...), c.Code...), " after "...)
			text = append(text, c.End.Sub(c.Start).String()...)
		} else {
			text = append(append(append(append(text, c.Method...), ' '), c.Request...), " -> "...)
			text = append(text, c.Code...)
		}
		if c.Response != "" {
			text = append(append(text, ' '), c.Response...)
		}
		if c.Error != "" {
			text = append(append(text, ": "...), c.Error...)
		}
		if c.Fault != "" {
			text = append(append(append(text, " ["...), c.Fault...), ']')
		}
		n.text = text
		add(endClass, c.End, KindCRI, n.line(text, timed))
		if advance {
			n.lastCall = c.Seq
		} else {
			n.ended[c.Seq] = true
		}
	}
	if len(n.inFlight) == 0 {
		// Everything logged is traced: emptying the log keeps a long simulation's memory flat.
		n.rt.ResetCalls()
	}

	// The pressure conditions change only in the eviction manager's round, a reader's Step, and
	// with a new agent: both set read. Reading them at every other look was a lock on the eviction
	// manager's struct, cold at every node a second.
	if read {
		if p := pressureText(n); p != n.pressure {
			n.pressure = p
			add(classPod, now, KindNode, "conditions "+p)
		}
	}

	if n.stepped {
		n.stepped = false
		if v := n.podsVersionNow(); v != n.podsVersion {
			n.podsVersion = v
			w.diffPods(n, now, add)
		}
	}

	// slices' stable sort rather than sort's: the same order (a stable sort's result is the
	// comparison's alone), without sort.SliceStable's reflection and boxing at every look.
	slices.SortStableFunc(out, func(a, b pending) int {
		if c := a.at.Compare(b.at); c != 0 {
			return c
		}
		if a.class != b.class {
			return cmp.Compare(a.class, b.class)
		}
		if a.class == classPullStart || a.class == classPullEnd {
			if c := strings.Compare(a.text, b.text); c != 0 {
				return c
			}
		}
		return cmp.Compare(a.order, b.order)
	})
	n.pending = out
}

// diffDesired traces how the node's desired pods changed with the last polls.
func (w *World) diffDesired(n *Node, now time.Time, add func(int, time.Time, string, string)) {
	snap := n.Agent.Sources.Snapshot()
	for _, uid := range desiredKeys(n.desired) {
		if _, ok := snap[uid]; !ok {
			e := n.desired[uid]
			add(classDesired, now, KindSource, fmt.Sprintf("REMOVE %s %s/%s", e.Source, e.Pod.Namespace, e.Pod.Name))
		}
	}
	for _, uid := range desiredKeys(snap) {
		e := snap[uid]
		switch old, ok := n.desired[uid]; {
		case !ok:
			add(classDesired, now, KindSource, fmt.Sprintf("ADD %s %s/%s", e.Source, e.Pod.Namespace, e.Pod.Name))
		case !equality.Semantic.DeepEqual(old.Pod, e.Pod):
			add(classDesired, now, KindSource, fmt.Sprintf("UPDATE %s %s/%s", e.Source, e.Pod.Namespace, e.Pod.Name))
		}
	}
	n.desired = snap
}

// longID is a runtime id or digest; the trace keeps the first 13 characters, as crictl shows them.
var longID = regexp.MustCompile(`\b([0-9a-f]{13})[0-9a-f]{51}\b`)

func shortIDs(s string) string { return longID.ReplaceAllString(s, "$1") }

// diffPods traces the pods whose status changed since the last look, and those gone. The pod
// workers publish a pod they did not touch as the same pointer: only the others are summarized.
func (w *World) diffPods(n *Node, now time.Time, add func(int, time.Time, string, string)) {
	seen := map[string]bool{}
	for _, p := range n.Agent.Pods.SharedPods() {
		key := p.Namespace + "/" + p.Name
		seen[key] = true
		t, ok := n.podState[key]
		if ok && t.pod == p {
			continue
		}
		s := podSummary(p)
		if t.summary != s {
			add(classPod, now, KindPod, key+" "+s)
		}
		if ok || s != "" {
			n.podState[key] = tracedPod{pod: p, summary: s}
		}
	}
	gone := []string{}
	for key := range n.podState {
		if !seen[key] {
			gone = append(gone, key)
		}
	}
	sort.Strings(gone)
	for _, key := range gone {
		delete(n.podState, key)
		add(classPod, now, KindPod, key+" gone")
	}
}

// tracedPod is a pod's last traced summary and the published pod it was read from.
type tracedPod struct {
	pod     *corev1.Pod
	summary string
}

// podSummary is the part of a pod's status the trace follows. Init containers (init/<name>),
// readiness (ready=) and startedness (started=) appear only for pods whose spec has them, and the
// pod's Ready condition only when a container has a readiness or startup probe.
func podSummary(p *corev1.Pod) string {
	var b strings.Builder
	b.WriteString(string(p.Status.Phase))
	if p.Status.Reason != "" {
		b.WriteString(" reason=" + p.Status.Reason)
	}
	probed := false
	for _, list := range [][]corev1.Container{p.Spec.InitContainers, p.Spec.Containers} {
		for _, c := range list {
			probed = probed || c.ReadinessProbe != nil || c.StartupProbe != nil
		}
	}
	if probed {
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady {
				b.WriteString(" Ready=" + string(c.Status))
			}
		}
	}
	specs := map[string]corev1.Container{}
	for _, c := range append(slices.Clone(p.Spec.InitContainers), p.Spec.Containers...) {
		specs[c.Name] = c
	}
	write := func(prefix string, cs corev1.ContainerStatus) {
		b.WriteString(" " + prefix + cs.Name + "=")
		switch s := cs.State; {
		case s.Running != nil:
			b.WriteString("running")
		case s.Terminated != nil:
			fmt.Fprintf(&b, "terminated(%s,%d)", s.Terminated.Reason, s.Terminated.ExitCode)
		case s.Waiting != nil:
			fmt.Fprintf(&b, "waiting(%s)", s.Waiting.Reason)
		default:
			b.WriteString("unknown")
		}
		if cs.RestartCount > 0 {
			fmt.Fprintf(&b, ",restarts=%d", cs.RestartCount)
		}
		spec := specs[cs.Name]
		if spec.StartupProbe != nil && cs.Started != nil {
			fmt.Fprintf(&b, ",started=%v", *cs.Started)
		}
		if spec.ReadinessProbe != nil || spec.StartupProbe != nil {
			fmt.Fprintf(&b, ",ready=%v", cs.Ready)
		}
	}
	for _, cs := range p.Status.InitContainerStatuses {
		write("init/", cs)
	}
	for _, cs := range p.Status.ContainerStatuses {
		write("", cs)
	}
	return b.String()
}

func desiredKeys(s sources.Snapshot) []types.UID {
	keys := make([]types.UID, 0, len(s))
	for uid := range s {
		keys = append(keys, uid)
	}
	sort.Slice(keys, func(i, j int) bool {
		a, b := s[keys[i]].Pod, s[keys[j]].Pod
		if a.Namespace+"/"+a.Name != b.Namespace+"/"+b.Name {
			return a.Namespace+"/"+a.Name < b.Namespace+"/"+b.Name
		}
		return keys[i] < keys[j]
	})
	return keys
}
