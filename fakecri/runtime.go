// Package fakecri is a deterministic, clock-driven fake CRI runtime. It
// serves every RPC of the k8s.io/cri-api runtime/v1 RuntimeService and
// ImageService with coherent state machines, usage that follows a script
// over an injected clock, fault injection and a call log.
//
// In-process:
//
//	mock := clock.NewMock()
//	mock.Set(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
//	rt, _ := fakecri.New(fakecri.Options{Clock: mock, Seed: 1, Script: s})
//	resp, err := rt.RunPodSandbox(ctx, req)   // or serve it: fakecri.NewGRPCServer(rt)
//
// Everything that takes time (pulls, run durations, ramps, latencies,
// ExecSync delays, stop grace) is measured on the injected clock, so with a
// clock.Mock it happens when the mock is advanced. Idle, WaitIdle and
// NextWakeup tell a simulator when fakecri has nothing left to do at the
// current time and when it next will.
package fakecri

import (
	"cmp"
	"container/heap"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/benbjohnson/clock"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"orch.io/orch/fakecri/calllog"
	"orch.io/orch/fakecri/script"
	"orch.io/orch/fakecri/streams"
)

// Version is fakecri's version, reported as the runtime version by default.
const Version = "0.1.0"

// Options configure a Runtime.
type Options struct {
	// Clock drives all time-dependent behaviour (default: the wall clock).
	Clock clock.Clock
	// Seed makes ids and seeded faults reproducible (default 1).
	Seed int64
	// Script is the initial behaviour script (default: a healthy runtime).
	Script *script.Script
	// MaxCalls bounds the call log; older calls are dropped (default 100000).
	MaxCalls int
	// CreateLogFiles makes every started container's log file at its (absolute) log path, empty
	// unless the script gives it lines, as a real runtime does: the fakecri command sets it, so an
	// agent's log rotation and log reading find the file. In-process users leave it off, so
	// nothing is written where their log paths point.
	CreateLogFiles bool
}

// Runtime is the fake runtime. It implements every method of
// runtimeapi.RuntimeServiceServer and runtimeapi.ImageServiceServer (use
// NewGRPCServer or RegisterGRPC to serve it). Its methods are safe for
// concurrent use. Responses share read-only data with the runtime: don't
// modify what they return.
type Runtime struct {
	// The log first and then what Idle, InFlight and NextWakeup read: a simulator asks them of
	// every node every simulated second, and fewer cache lines are fewer misses at 10,000 nodes.
	log           calllog.Log
	clk           clock.Clock
	inflight      atomic.Int64
	pendingEvents atomic.Int64
	waitMu        sync.Mutex
	// parked waits and their wake times (zero: until cancelled), a few at most; a slice, so that
	// Idle, which the simulator asks of every node every simulated second, finds none without
	// reading a map's header elsewhere in memory (ranging over the empty map was 1% of the CPU of
	// 10,000 simulated nodes).
	parked []parkedWait
	// faulted has bit m set when the script in force has fault rules for method m: begin reads it
	// here, not on the compiled script's line, cold at every node's first call of a simulated
	// second. Set after the script, under faultMu.
	faulted atomic.Uint64

	// mu guards what follows it; Idle reads sched and logging too, so they come first.
	mu          sync.Mutex
	sched       schedHeap
	logging     []*container // running containers writing scripted log lines
	sandboxes   map[string]*sandbox
	sbOrder     []*sandbox
	sbDead      int
	containers  map[string]*container
	ctrOrder    []*container
	ctrDead     int
	sbLabels    labelIndex[*sandbox]
	ctrLabels   labelIndex[*container]
	names       map[string]string // reserved names -> id
	images      map[string]*image // id -> image
	imageRefs   map[string]string // tag, digest ref -> id
	imgOrder    []*image
	idCounter   uint64
	ipUsed      map[netip.Addr]string
	ipCursor    netip.Addr
	podCIDR     netip.Prefix // from UpdateRuntimeConfig
	timer       *clock.Timer
	timerDue    time.Time
	subs        map[int]*subscriber
	subSeq      int
	checkpoints map[string]*checkpoint
	logged      map[string]bool // every log file made, and the directories above it (LogsUnder)

	seed       int64
	createLogs bool
	waitSeq    uint64

	cur     atomic.Pointer[script.Compiled]
	faultMu sync.Mutex

	// changed is closed whenever something Idle reads changes, so WaitIdle waits for a change
	// instead of polling the wall clock; nil until Changes hands one out.
	changedMu sync.Mutex
	changed   chan struct{}

	streams atomic.Pointer[streams.Server] // set by ServeStreams

	closing   chan struct{}
	closeOnce sync.Once
}

// Close ends every GetContainerEvents stream (with Unavailable) and every
// in-process subscription, so that a gRPC server can stop gracefully. The
// runtime keeps answering other calls.
func (r *Runtime) Close() {
	r.closeOnce.Do(func() { close(r.closing) })
}

// New makes a Runtime.
func New(opts Options) (*Runtime, error) {
	if opts.Clock == nil {
		opts.Clock = clock.New()
	}
	if opts.Seed == 0 {
		opts.Seed = 1
	}
	if opts.MaxCalls <= 0 {
		opts.MaxCalls = 100000
	}
	r := &Runtime{
		clk:         opts.Clock,
		seed:        opts.Seed,
		createLogs:  opts.CreateLogFiles,
		sandboxes:   map[string]*sandbox{},
		containers:  map[string]*container{},
		sbLabels:    labelIndex[*sandbox]{},
		ctrLabels:   labelIndex[*container]{},
		names:       map[string]string{},
		images:      map[string]*image{},
		imageRefs:   map[string]string{},
		ipUsed:      map[netip.Addr]string{},
		subs:        map[int]*subscriber{},
		checkpoints: map[string]*checkpoint{},
		closing:     make(chan struct{}),
	}
	r.log.Init(opts.MaxCalls)
	if err := r.SetScript(opts.Script); err != nil {
		return nil, err
	}
	return r, nil
}

// Clock returns the runtime's clock.
func (r *Runtime) Clock() clock.Clock { return r.clk }

// SetScript replaces the behaviour script. Node settings, image, exec and
// fault rules apply from the next call on (fault counters restart);
// container rules apply to containers started from now on. A nil script is
// the healthy default.
func (r *Runtime) SetScript(s *script.Script) error {
	c, err := script.Compile(s, r.seed)
	if err != nil {
		return err
	}
	c.RuntimeVersion = cmp.Or(c.RuntimeVersion, Version)
	var faulted uint64
	for m, rules := range c.Faults {
		if len(rules) > 0 {
			faulted |= 1 << m
		}
	}
	r.faultMu.Lock()
	r.cur.Store(c)
	r.faulted.Store(faulted)
	r.faultMu.Unlock()
	r.mu.Lock()
	for _, ref := range c.Preload {
		r.ensureImageLocked(c, ref, false)
	}
	r.mu.Unlock()
	return nil
}

// Script returns the script in force (nil parts are defaults).
func (r *Runtime) Script() *script.Script { return r.cur.Load().Source }

func (r *Runtime) now() time.Time { return r.clk.Now() }

// ts converts a time to CRI nanoseconds. Times at or before the Unix epoch
// (a fresh clock.Mock) become 1ns, since clients reject a zero CreatedAt.
func ts(t time.Time) int64 {
	n := t.UnixNano()
	if n <= 0 {
		return 1
	}
	return n
}

// newID returns a fresh 64-hex id, derived from the seed and a counter.
func (r *Runtime) newIDLocked(kind string) string {
	for {
		r.idCounter++
		var b [8]byte
		binary.BigEndian.PutUint64(b[:], r.idCounter)
		h := sha256.New()
		fmt.Fprintf(h, "fakecri/%d/%s/", r.seed, kind)
		h.Write(b[:])
		id := hex.EncodeToString(h.Sum(nil))
		if r.sandboxes[id] == nil && r.containers[id] == nil {
			return id
		}
	}
}

// ---- waiting on the clock ----

// parkedWait is a call waiting on the clock.
type parkedWait struct {
	id    uint64
	until time.Time
}

func (r *Runtime) park(until time.Time) uint64 {
	r.waitMu.Lock()
	r.waitSeq++
	id := r.waitSeq
	r.parked = append(r.parked, parkedWait{id, until})
	r.waitMu.Unlock()
	r.signalChange()
	return id
}

func (r *Runtime) unpark(id uint64) {
	r.waitMu.Lock()
	for i, w := range r.parked {
		if w.id == id {
			r.parked = slices.Delete(r.parked, i, i+1)
			break
		}
	}
	r.waitMu.Unlock()
	r.signalChange()
}

// signalChange wakes every WaitIdle to look at Idle again.
func (r *Runtime) signalChange() {
	r.changedMu.Lock()
	if r.changed != nil {
		close(r.changed)
		r.changed = nil // Changes makes the next when asked: most changes have no one waiting
	}
	r.changedMu.Unlock()
}

// Changes returns a channel closed at the next change of what Idle and InFlight read (a call
// ending, parking or resuming, an event sent), so a driver can wait instead of polling.
func (r *Runtime) Changes() <-chan struct{} {
	r.changedMu.Lock()
	defer r.changedMu.Unlock()
	if r.changed == nil {
		r.changed = make(chan struct{})
	}
	return r.changed
}

// sleep waits d on the runtime clock, or until ctx ends.
func (r *Runtime) sleep(ctx context.Context, d time.Duration) error {
	_, err := r.sleepOr(ctx, d, nil)
	return err
}

// sleepOr is sleep that also ends when done closes (then it reports true).
func (r *Runtime) sleepOr(ctx context.Context, d time.Duration, done <-chan struct{}) (bool, error) {
	if d <= 0 {
		return false, ctx.Err()
	}
	t := r.clk.Timer(d)
	id := r.park(r.now().Add(d))
	defer r.unpark(id)
	select {
	case <-t.C:
		return false, nil
	case <-done:
		t.Stop()
		return true, nil
	case <-ctx.Done():
		t.Stop()
		return false, ctx.Err()
	}
}

// hang waits until ctx ends.
func (r *Runtime) hang(ctx context.Context) {
	id := r.park(time.Time{})
	defer r.unpark(id)
	<-ctx.Done()
}

// InFlight is the number of calls being served, including those waiting on
// the clock (pull durations, latencies, ExecSync delays, stop grace) or
// hanging. Open GetContainerEvents streams are not counted.
func (r *Runtime) InFlight() int { return int(r.inflight.Load()) }

// PendingEvents is the number of container events queued but not yet sent
// to GetContainerEvents streams.
func (r *Runtime) PendingEvents() int { return int(r.pendingEvents.Load()) }

// Idle reports whether fakecri has nothing left to do at the current clock
// time: every call in flight is waiting for a later clock time (or hanging
// until its caller gives up), every transition due by now has been applied
// and every event has been sent. A simulator that advances a clock.Mock
// should wait for Idle (WaitIdle) before looking or advancing again.
func (r *Runtime) Idle() bool {
	now := r.now()
	r.mu.Lock()
	r.reconcileLocked(now)
	r.mu.Unlock()
	if r.pendingEvents.Load() != 0 {
		return false
	}
	r.waitMu.Lock()
	sleeping := 0
	for _, w := range r.parked {
		if w.until.IsZero() || w.until.After(now) {
			sleeping++
		}
	}
	r.waitMu.Unlock()
	return r.inflight.Load() <= int64(sleeping)
}

// WaitIdle blocks until Idle, or ctx ends, waking only when something Idle reads has changed.
func (r *Runtime) WaitIdle(ctx context.Context) error {
	for {
		changed := r.Changes()
		if r.Idle() {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-changed:
		}
	}
}

// NextWakeup is the earliest clock time after now at which fakecri will do
// something by itself: a waiting call resumes or a container exits.
func (r *Runtime) NextWakeup() (time.Time, bool) {
	now := r.now()
	var next time.Time
	consider := func(t time.Time) {
		if t.After(now) && (next.IsZero() || t.Before(next)) {
			next = t
		}
	}
	r.waitMu.Lock()
	for _, w := range r.parked {
		if !w.until.IsZero() {
			consider(w.until)
		}
	}
	r.waitMu.Unlock()
	r.mu.Lock()
	r.reconcileLocked(now)
	if len(r.sched) > 0 {
		consider(r.sched[0].due)
	}
	r.mu.Unlock()
	return next, !next.IsZero()
}

// ---- scheduled transitions ----

type schedItem struct {
	due time.Time
	seq uint64
	c   *container
	gen uint64
}

type schedHeap []schedItem

func (h schedHeap) Len() int { return len(h) }
func (h schedHeap) Less(i, j int) bool {
	if !h[i].due.Equal(h[j].due) {
		return h[i].due.Before(h[j].due)
	}
	return h[i].seq < h[j].seq
}
func (h schedHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *schedHeap) Push(x any)   { *h = append(*h, x.(schedItem)) }
func (h *schedHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// scheduleLocked arranges for c's planned exit to happen at due.
func (r *Runtime) scheduleLocked(c *container, due time.Time) {
	heap.Push(&r.sched, schedItem{due: due, seq: c.seq, c: c, gen: c.gen})
	r.armTimerLocked()
}

// armTimerLocked keeps one clock timer set for the earliest due transition,
// so exits (and their events) happen without waiting for a call.
func (r *Runtime) armTimerLocked() {
	if len(r.sched) == 0 {
		return
	}
	due := r.sched[0].due
	if r.timer != nil && !due.Before(r.timerDue) {
		return
	}
	if r.timer != nil {
		r.timer.Stop()
	}
	d := due.Sub(r.now())
	if d < time.Nanosecond {
		d = time.Nanosecond
	}
	r.timerDue = due
	r.timer = r.clk.AfterFunc(d, r.onTimer)
}

func (r *Runtime) onTimer() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.timer = nil
	r.reconcileLocked(r.now())
	r.armTimerLocked()
}

// reconcileLocked applies every transition due at or before now, in order.
func (r *Runtime) reconcileLocked(now time.Time) {
	for len(r.sched) > 0 && !r.sched[0].due.After(now) {
		it := heap.Pop(&r.sched).(schedItem)
		c := it.c
		if c.removed || c.gen != it.gen || c.state != runtimeapi.ContainerState_CONTAINER_RUNNING || c.plan == nil {
			continue
		}
		p := c.plan
		r.exitLocked(c, it.due, p.code, p.reason, p.message)
	}
	r.writeLogsLocked(now)
}

func sat(v float64) uint64 {
	if v <= 0 || math.IsNaN(v) {
		return 0
	}
	if v >= math.MaxUint64 {
		return math.MaxUint64
	}
	return uint64(v)
}
