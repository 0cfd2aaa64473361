package sim

import (
	"context"
	"fmt"
	"os"
	goruntime "runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/go-logr/logr"

	"orch.io/orch/components/orchlet/agent"
	"orch.io/orch/components/orchlet/pods"
	"orch.io/orch/components/orchlet/pods/calls"
)

// DefaultStart is where a world's clock starts unless told otherwise.
var DefaultStart = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// Options configure a World.
type Options struct {
	// Start is the clock's first reading (default DefaultStart).
	Start time.Time
	// Seed is the world's one source of randomness: node i's fakecri is seeded with Seed+i.
	Seed int64
	// Keep decides which entries the trace keeps (nil keeps all); a long benchmark keeps none and
	// reads Lines.
	Keep func(Entry) bool
	// APIServer runs orch-apiserver in-process on memory storage on the world's clock, for nodes
	// in API-server mode (NodeOptions.API).
	APIServer bool
	// SignalPeriod, when positive, reads every node's eviction signals (Node.Samples) at the
	// instants the world visits, at most once per period of simulated time. Reading them changes
	// nothing the trace records.
	SignalPeriod time.Duration
}

// World is one simulation: nodes on one clock.Mock that never yields (the driver waits for
// quiescence itself), stepped by one driver.
type World struct {
	Clock *clock.Mock

	start  time.Time
	seed   int64
	keep   func(Entry) bool
	ctx    context.Context
	cancel context.CancelFunc
	dir    string
	logger logr.Logger

	api   *apiServer // nil without Options.APIServer
	nodes []*Node
	named map[string]*Node // nodes by name: a scan of them at every AddNode was quadratic
	live  []*Node          // the nodes up at the settle's last look, kept to reuse its array
	dues  bool             // the live nodes' due times are those of the last settle's end (Node.due)
	trace []Entry
	seq   uint64
	lines int

	signalPeriod time.Duration
	sampled      bool
	lastSample   time.Duration
}

// New makes an empty world; Close releases it.
func New(o Options) (*World, error) {
	if o.Start.IsZero() {
		o.Start = DefaultStart
	}
	// The nodes' root and pods' log directories live here.
	dir, err := os.MkdirTemp(scratchDir(), "orchsim-")
	if err != nil {
		return nil, fmt.Errorf("sim: %w", err)
	}
	mock := clock.NewUnyieldingMock()
	mock.Set(o.Start)
	// No deadline on this context: clock.Mock would compare a wall-clock deadline with its own times.
	ctx, cancel := context.WithCancel(context.Background())
	w := &World{Clock: mock, start: o.Start, seed: o.Seed, keep: o.Keep, ctx: ctx, cancel: cancel, dir: dir, logger: logr.New(silent{}), signalPeriod: o.SignalPeriod,
		named: map[string]*Node{}}
	if o.APIServer {
		if w.api, err = newAPIServer(w); err != nil {
			cancel()
			_ = os.RemoveAll(dir)
			return nil, err
		}
	}
	return w, nil
}

// scratchDir is where a world makes its directory: $TMPDIR when set, else /dev/shm when it is a
// tmpfs with room (1 GiB free), else the system's temporary directory. The agent makes and
// removes every pod's directories and writes files at every container start: on the disk's
// (journalled) file system the node-day under pressure spent 0.7 to 2.1 s of CPU in system calls,
// the more the more other processes wrote to it, in memory 0.4 s.
func scratchDir() string {
	if os.Getenv("TMPDIR") != "" {
		return ""
	}
	var st syscall.Statfs_t
	if err := syscall.Statfs("/dev/shm", &st); err != nil || st.Type != tmpfsMagic || st.Bavail*uint64(st.Bsize) < 1<<30 {
		return ""
	}
	return "/dev/shm"
}

const tmpfsMagic = 0x01021994 // statfs(2)'s TMPFS_MAGIC

// Close stops every node's runtime and removes the world's log directories.
func (w *World) Close() error {
	w.cancel()
	for _, n := range w.nodes {
		n.rt.Close()
	}
	if w.api != nil {
		w.api.close()
	}
	return os.RemoveAll(w.dir)
}

// Now is the simulated time since the world started.
func (w *World) Now() time.Duration { return w.Clock.Now().Sub(w.start) }

// Start is the clock's first reading.
func (w *World) Start() time.Time { return w.start }

// Nodes lists the nodes in the order they were added.
func (w *World) Nodes() []*Node { return w.nodes }

// Node finds a node by name.
func (w *World) Node(name string) (*Node, bool) {
	n, ok := w.named[name]
	return n, ok
}

// Trace is every entry kept so far, in (time, sequence) order.
func (w *World) Trace() []Entry { return w.trace }

// TraceText is the trace, one line per entry.
func (w *World) TraceText() string { return Format(w.trace) }

// Lines counts every entry recorded, kept or not.
func (w *World) Lines() int { return w.lines }

// Note records a change the world's timeline made, as a trace line of the node it concerns.
func (w *World) Note(node, format string, args ...any) {
	w.record(Entry{At: w.Now(), Node: node, Kind: KindWorld, Text: fmt.Sprintf(format, args...)})
}

func (w *World) record(e Entry) {
	w.seq++
	e.Seq = w.seq
	w.lines++
	if w.keep == nil || w.keep(e) {
		e.Text = shortIDs(e.Text)
		w.trace = append(w.trace, e)
	}
}

// Advance runs the world for d of simulated time.
func (w *World) Advance(d time.Duration) error { return w.RunUntil(w.Now() + d) }

// RunUntil runs the world until the simulated time since its start is end: it settles every node,
// jumps the clock to the earliest time anything is due, and again, until nothing is due by end;
// then it moves the clock to end and settles once more.
func (w *World) RunUntil(end time.Duration) error {
	target := w.start.Add(end)
	for {
		if err := w.settle(); err != nil {
			return err
		}
		w.sampleSignals()
		next, ok := w.next()
		if !ok || next.After(target) {
			break
		}
		w.Clock.Set(next)
	}
	if target.After(w.Clock.Now()) {
		w.Clock.Set(target)
		if err := w.settle(); err != nil {
			return err
		}
		w.sampleSignals()
	}
	return nil
}

// settle steps every node with work due now until none has any, then records what each did.
// A node's components are stepped as production's agent.Run runs them, each on its own: sources
// poll and hand their updates over, the pod workers step (in a goroutine, since a CRI call may wait
// for the clock), the recorder writes events. So a pull that holds the pod workers for 30s does not
// hold the sources' polls or the events' writes, as it does not in production either.
func (w *World) settle() error {
	for first := true; ; first = false {
		// Every node's due work is started before any is waited for, so the pod workers of
		// different nodes run at once.
		stepped := w.deliver()
		live := w.live[:0]
		for _, n := range w.nodes {
			if !n.down {
				live = append(live, n)
			}
		}
		w.live = live
		// A node's begin and finish touch only that node (its agent, runtime and observer), and
		// what they did is recorded below in node order: so the nodes are looked at at once.
		// At an instant's first round every node's pod workers are begun before any is finished,
		// so their Steps run while the others are begun and have mostly returned when finished
		// (finishing each at once made waitSettled wait, with its channels, for nearly every
		// Step). Later rounds seldom start a Step: there each node is begun and finished in one
		// visit, half the passes over every node's state.
		looked := false
		if first {
			began, err := eachNode(live, (*Node).beginLife)
			if err != nil {
				return err
			}
			finished, err := eachNode(live, (*Node).finishLife)
			if err != nil {
				return err
			}
			looked = began || finished
		} else {
			var err error
			if looked, err = eachNode(live, (*Node).look); err != nil {
				return err
			}
		}
		stepped = stepped || looked
		// A node's API-server work reads only its own pod workers and runtime, and what it
		// changes in the API server reaches the nodes only through deliver: so the nodes make
		// their requests at once, and what each did is collected after, in order.
		if w.stepAPIs(live) {
			stepped = true
		}
		// What each node did is gathered at once and recorded in node order. After the last
		// round the same visit asks the node its next due time, for next: nothing runs between.
		now := w.Clock.Now()
		_, _ = eachNode(live, func(n *Node) (bool, error) {
			w.gather(n, now)
			if !stepped {
				// A quiet node's own due time is its last look's.
				if n.quiet {
					n.due = n.apiNextDue(now, n.agentDue)
				} else {
					n.due = n.nextDue(now)
				}
			}
			return false, nil
		})
		for _, n := range live {
			w.flush(n)
		}
		if !stepped {
			w.dues = true
			return nil
		}
	}
}

// eachNode runs f for every node of nodes, at once in as many goroutines as the process has
// processors, each taking the next run of nodes in order; it reports whether f did anything for
// any node, or the error of the first node in order that failed. f must touch its node alone.
func eachNode(nodes []*Node, f func(*Node) (bool, error)) (bool, error) {
	workers := min(goruntime.GOMAXPROCS(0), len(nodes))
	if workers < 2 {
		did := false
		for _, n := range nodes {
			d, err := f(n)
			if err != nil {
				return false, err
			}
			did = did || d
		}
		return did, nil
	}
	// Runs of nodes rather than one at a time: fewer turns at the shared counter, and a worker's
	// nodes next to each other in memory.
	run := max(1, len(nodes)/(8*workers))
	var next atomic.Int64
	var did atomic.Bool
	var mu sync.Mutex
	failed, firstErr := len(nodes), error(nil)
	work := func() {
		for i := int(next.Add(int64(run))) - run; i < len(nodes); i = int(next.Add(int64(run))) - run {
			for j := i; j < min(i+run, len(nodes)); j++ {
				d, err := f(nodes[j])
				if err != nil {
					mu.Lock()
					if j < failed {
						failed, firstErr = j, err
					}
					mu.Unlock()
					break
				}
				if d {
					did.Store(true)
				}
			}
		}
	}
	var wg sync.WaitGroup
	for range workers - 1 {
		wg.Go(work)
	}
	work() // the driver is a worker too
	wg.Wait()
	if firstErr != nil {
		return false, firstErr
	}
	return did.Load(), nil
}

func (n *Node) beginLife() (bool, error)  { return n.begin(n.life) }
func (n *Node) finishLife() (bool, error) { return n.finish(n.life) }

// look begins and finishes the node in one visit. Nodes are independent, so finishing each before
// the next is begun changes nothing but which goroutine waits for a Step. A node its last look
// left quiet, and nothing woke since, is not looked at: the look would find nothing.
func (n *Node) look() (bool, error) {
	if n.asleep() {
		return false, nil
	}
	began, err := n.begin(n.life)
	if err != nil {
		return false, err
	}
	finished, err := n.finish(n.life)
	return began || finished, err
}

// begin steps the components that feed the node's pod workers (the sources' polls) if due, hands
// their updates to the pod workers and starts the pod workers' Step if they have work due; it
// reports whether it did any of that.
func (n *Node) begin(ctx context.Context) (bool, error) {
	did := false
	// A node that rested with no call of its pod workers' in progress, and no Step since (only a
	// Step starts one), is settled once its runtime is: waitSettled would read the call tracker,
	// a line cold since the last look, to find them none.
	if !n.stepping && !(n.noCalls && n.rt.InFlight() == 0 && n.rt.Idle() && n.rt.InFlight() == 0) {
		if _, err := n.waitSettled(ctx); err != nil {
			return false, err
		}
	}
	// The sources queue updates only in their Step, which only begin runs, and their next poll
	// moves only there too (the simulation runs no watches): until the deadline kept at the last
	// begin they are idle and drained, and their struct, a cold line, is not read.
	if !n.feedKnown || n.feedAny && !n.clk.Now().Before(n.feedDue) {
		n.feedDue, n.feedAny = time.Time{}, false
		for _, c := range n.feeders {
			if !c.Idle() {
				c.Step(ctx)
				did = true
			}
			if t, ok := c.NextDeadline(); ok && (!n.feedAny || t.Before(n.feedDue)) {
				n.feedDue, n.feedAny = t, true
			}
		}
		n.feedKnown = true
		if us := n.sources.Drain(); len(us) > 0 {
			n.pods.Update(us...)
			n.updated = true
			did = true
		}
	}
	if !n.stepping && !n.pods.Idle() {
		n.startStep(ctx)
		did = true
	}
	n.began = did
	return did, nil
}

// finish waits until the node's pod workers are settled, then steps the components that read what
// they did (the garbage collectors, the eviction manager, the events' writes) if due; it reports
// whether a Step returned or those components left the pod workers work.
func (n *Node) finish(ctx context.Context) (bool, error) {
	did, returned := false, false
	if n.stepping {
		// A node already blocked in a call may have been released by the last clock move.
		done, err := n.waitSettled(ctx)
		if err != nil {
			return false, err
		}
		did, returned = done, done
	}
	// In the driver's goroutine once the pod workers are settled, so the collections' CRI calls
	// come in the same order every run, and the eviction manager's round reads settled pod
	// workers, as each round reads the last status a real node published; the events the others
	// recorded are written in the same look.
	stepped := false
	timedIdle := n.timedKnown && (!n.timedAny || n.clk.Now().Before(n.timedDue))
	for i, c := range n.readers {
		notified := false
		if c.Name() == agent.ComponentEviction {
			// The simulated kernel's notifications of this instant, before the round: one wakes
			// the eviction manager before its deadline.
			notified = n.memcg.check()
		}
		if n.timed&(1<<i) != 0 && timedIdle && !notified {
			continue
		}
		if !c.Idle() {
			c.Step(ctx)
			stepped = true
			if notified {
				n.timedKnown = false // stepped before the kept deadline, which it may have moved
			}
		}
	}
	n.read = n.read || stepped
	// What the readers do feeds back only through the pod workers (an eviction to carry out): the
	// world looks at this instant again when it left them work. While a Step is parked in a call
	// it holds their lock, and Idle would wait for it.
	if stepped && (n.stepping || !n.pods.Idle()) {
		did = true
	}
	n.rest(n.began || returned || stepped, stepped)
	return did, nil
}

// rest ends a look: it marks the node quiet when a look now would find nothing (no Step running
// nor call in flight, every component idle), and then asks its agent's and runtime's next due
// time while their state is in the cache (nextDue asked it again, a pass later, of every node).
// acted says the look stepped something, readers that it stepped a reader: what did not step was
// asked Idle in this look, after whatever ran, and is idle still. The feeders (the sources' polls)
// are not asked again: begin stepped them and drained what they read, and only their own next
// poll (or production's watches, which the simulation does not run) queues more.
func (n *Node) rest(acted, readers bool) {
	n.quiet = false
	// Only a Step (its workers done when it returns) and a background pull make the pod workers'
	// calls: with serialized pulls and no Step running none is in progress, and the call tracker,
	// written by the Step's goroutine on the other core, is not read.
	n.noCalls = !n.stepping && (!n.background || n.pods.PeekCalls().InFlight == 0)
	if !n.noCalls {
		return
	}
	if acted {
		if !n.pods.Idle() {
			return
		}
		for _, c := range n.readers {
			if readers && !c.Idle() {
				return
			}
		}
	}
	n.quiet, n.quietSeq, n.quietLines = true, n.rt.LastSeq(), n.linesWaiting()
	n.agentDue = n.agentNextDue(n.clk.Now())
}

// wake ends the node's quiet when something reached it after its last look: a runtime call (a
// status post's reads) or a line of its observer (a request to the API server, a pod handed
// over). seq and lines are its runtime's LastSeq and its observer's count, read by gather, which
// empties the observer.
func (n *Node) wake(seq uint64, lines int32) {
	if n.quiet && (seq != n.quietSeq || lines != n.quietLines) {
		n.quiet = false
	}
	n.quietLines = 0
}

// asleep tells that the node is quiet and nothing reached it since gather looked (deliver, which
// hands it pod changes, writes its observer a line for each).
func (n *Node) asleep() bool { return n.quiet && n.linesWaiting() == 0 }

// linesWaiting is how many lines the node's observer holds for gather, read off the Node: through
// the observer it was a cold line at every node at every look.
func (n *Node) linesWaiting() int32 { return n.obsWaiting.Load() }

// next is the earliest time after now at which any node or runtime has something due. RunUntil
// calls it after a settle, whose live nodes are those up (nothing looks at the runtime while the
// agent is killed); they are asked at once (each reads its own components alone), and the earliest
// of their answers does not depend on the order they came in.
func (w *World) next() (time.Time, bool) {
	if !w.dues { // settle's last gather asked them, unless a sample was read since
		now := w.Clock.Now()
		_, _ = eachNode(w.live, func(n *Node) (bool, error) {
			n.due = n.nextDue(now)
			return false, nil
		})
	}
	w.dues = false
	var next time.Time
	for _, n := range w.live {
		if !n.due.IsZero() && (next.IsZero() || n.due.Before(next)) {
			next = n.due
		}
	}
	return next, !next.IsZero()
}

// nextDue is the earliest time after now at which the node or its runtime has something due, zero
// when nothing is.
func (n *Node) nextDue(now time.Time) time.Time {
	return n.apiNextDue(now, n.agentNextDue(now))
}

// apiNextDue is next, or the node's API-server mode's next due time after now when earlier.
func (n *Node) apiNextDue(now, next time.Time) time.Time {
	if n.apiQuiet(now) { // the earliest of the times below, all after now, without reading them
		if at := now.Add(time.Duration(n.apiAt - now.UnixNano())); next.IsZero() || at.Before(next) { // now's location
			next = at
		}
	} else if n.api != nil {
		n.api.next(func(t time.Time, ok bool) {
			if ok && t.After(now) && (next.IsZero() || t.Before(next)) {
				next = t
			}
		})
	}
	return next
}

// timedReader names the readers whose Idle is only their clock before their NextDeadline, which
// only their own Step moves (the collectors', the volume stats' and the eviction manager's
// periods): a node keeps the earliest of their deadlines and asks them again only once it passed
// (kept too early, it only asks more often; a new agent's are asked afresh). The eviction
// manager's Idle is also a memory threshold's notification waiting, which only the simulated
// kernel's check sends: finish asks it at a look whose check sent one.
var timedReader = map[string]bool{agent.ComponentContainerGC: true, agent.ComponentImageGC: true, agent.ComponentVolumeStats: true,
	agent.ComponentEviction: true}

// agentNextDue is nextDue without the API-server mode's.
func (n *Node) agentNextDue(now time.Time) time.Time {
	var next time.Time
	consider := func(t time.Time, ok bool) {
		if ok && t.After(now) && (next.IsZero() || t.Before(next)) {
			next = t
		}
	}
	consider(n.rt.NextWakeup())
	if n.feedKnown {
		consider(n.feedDue, n.feedAny)
	} else {
		for _, c := range n.feeders {
			consider(c.NextDeadline())
		}
	}
	// The kept earliest timed deadline, while after now, is the earliest of theirs after now.
	kept := n.timedKnown && (!n.timedAny || n.timedDue.After(now))
	if kept {
		consider(n.timedDue, n.timedAny)
	} else {
		n.timedDue, n.timedAny = time.Time{}, false
	}
	for i, c := range n.readers {
		if n.timed&(1<<i) != 0 && kept {
			continue
		}
		t, ok := c.NextDeadline()
		consider(t, ok)
		if n.timed&(1<<i) != 0 && ok && (!n.timedAny || t.Before(n.timedDue)) {
			n.timedDue, n.timedAny = t, true
		}
	}
	n.timedKnown = true
	consider(n.memcg.next(now))
	if n.stepping {
		c := n.pods.PeekCalls()
		consider(c.StepDeadline, c.InStep && !c.StepDeadline.IsZero())
	} else {
		consider(n.pods.NextDeadline())
	}
	return next
}

// startStep runs one Step of the node's pod workers in a goroutine: a CRI call inside may wait for
// the clock, which only the driver moves. The goroutine is the node's stepLoop when it waits for
// work, which signals on the node's stepDone (a channel made for every Step was an allocation at
// every Step of every node); a new one, with a channel of its own, when it is still busy (a killed
// agent's Step ending after the restart's begins).
func (n *Node) startStep(ctx context.Context) {
	n.stepping, n.noCalls, n.pvFresh, n.apiAt = true, false, false, 0 // a Step may publish: see apiAt
	s := step{ctx: ctx, pods: n.pods, done: n.stepDone}
	select {
	case n.steps <- s:
	default:
		s.done = make(chan struct{}, 1)
		go s.run()
	}
	n.done = s.done
}

// podsVersionNow is the pod workers' PodsVersion, read from them only when a Step started since
// the last read or was running at it: only a Step publishes, and the read was two cold lines (the
// pod workers' struct and their status cache's) at every node at every round of every simulated
// second (stepAPI's and gather's).
func (n *Node) podsVersionNow() uint64 {
	if !n.pvFresh {
		n.pv = n.pods.PodsVersion()
		n.pvFresh = !n.stepping
	}
	return n.pv
}

// step is one Step of a node's pod workers, handed to its stepLoop as a value (a closure was an
// allocation at every Step of every node).
type step struct {
	ctx  context.Context
	pods *pods.Manager
	done chan struct{} // sent to once Step returns: its one buffered slot, for waitSettled to take
}

func (s step) run() {
	s.pods.Step(s.ctx)
	s.done <- struct{}{}
}

// stepLoop runs the node's Steps until the world closes. A goroutine started for each Step began
// with a small stack and grew it, copying it, at every Step (the runtime's copystack was 2.5% of
// the node-day's CPU); this one keeps the stack it grew.
func (n *Node) stepLoop(ctx context.Context) {
	for {
		select {
		case s := <-n.steps:
			s.run()
		case <-ctx.Done():
			return
		}
	}
}

// waitSettled waits until the node's pod workers' Step, if one runs, has returned or is blocked
// in a call its runtime holds until a later time, and every image pull running in the background
// is held there too or has ended and been recorded for the next Step; it reports whether a Step
// returned. Between looks it waits for the runtime or the pod workers' calls to change: a Step
// either returns or reaches the runtime with its next call, and calls ending or parking there are
// changes. No wall time passes in the simulation's logic.
func (n *Node) waitSettled(ctx context.Context) (bool, error) {
	returned := false
	for {
		// A look without the channels first: at most looks the node's Step has returned or is
		// parked already, and the channels, made for a wait that does not come, were two
		// allocations a node a look.
		if n.stepping {
			select {
			case <-n.done:
				n.stepping, n.stepped, returned = false, true, true
			default:
			}
		}
		if n.callsParked(n.pods.PeekCalls()) {
			return returned, nil
		}
		rtChanged, c := n.rt.Changes(), n.pods.Calls()
		var done <-chan struct{}
		if n.stepping {
			select {
			case <-n.done:
				n.stepping, n.stepped, returned = false, true, true
			default:
				done = n.done
			}
		}
		if n.callsParked(c) {
			return returned, nil
		}
		select {
		case <-done:
			n.stepping, n.stepped, returned = false, true, true
		case <-rtChanged:
		case <-c.Changed:
		case <-ctx.Done():
			return returned, ctx.Err()
		}
	}
}

// callsParked reports that a running Step is in a call, that every CRI call the node's pod
// workers have in progress (c: Step's and background pulls) is in the runtime waiting for a later
// time or hanging until a deadline still ahead, and that the runtime is otherwise idle. No call
// starting or ending since c was read (its Changed still open, or its Seq still the calls') makes
// sure the calls there are these.
func (n *Node) callsParked(c calls.State) bool {
	if n.stepping && !c.InStep || c.InStep && !c.StepDeadline.IsZero() && !c.StepDeadline.After(n.clk.Now()) {
		return false // Step is between calls (it will make one or return), or its call is due to end
	}
	if n.rt.InFlight() != c.InFlight || !n.rt.Idle() || n.rt.InFlight() != c.InFlight {
		return false
	}
	if c.Changed == nil { // from PeekCalls
		return n.pods.PeekCalls().Seq == c.Seq
	}
	select {
	case <-c.Changed:
		return false
	default:
		return true
	}
}

// silent is a log sink that drops everything: the trace is the simulation's record, and a nil sink
// (logr.Discard) would make the pod workers fall back to klog's.
type silent struct{}

func (silent) Init(logr.RuntimeInfo)            {}
func (silent) Enabled(int) bool                 { return false }
func (silent) Info(int, string, ...any)         {}
func (silent) Error(error, string, ...any)      {}
func (s silent) WithValues(...any) logr.LogSink { return s }
func (s silent) WithName(string) logr.LogSink   { return s }
