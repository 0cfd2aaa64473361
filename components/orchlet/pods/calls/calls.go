// Package calls bounds the pod workers' calls to the container runtime (and their probes' and
// hooks' calls to containers) by deadlines on the injected clock, and counts them, so that a
// simulator can tell when every one is parked in its runtime.
//
// The runtime's deadlines are on the injected clock, which gRPC would misread as wall-clock times,
// so the deadline is kept out of the context handed to the CRI client and enforced by cancellation:
// a request cut off at its deadline fails with context.DeadlineExceeded.
//
// A simulator steps the pod workers in a goroutine, since a call may wait on the clock (a pull that
// takes 30s, a call the runtime holds until its deadline), and waits until Step has returned or
// every call is parked in its runtime: the runtime's calls in flight number the State's InFlight
// and the runtime has nothing to run, with no call started or ended meanwhile (the State's Changed
// still open). It then moves the clock to the earlier of the runtime's next wakeup and the
// deadline of Step's call, never past that deadline.
package calls

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/benbjohnson/clock"
)

// State is the calls in progress.
type State struct {
	// InFlight counts the calls in progress: Step's, and those running in the background until
	// their result is handed over.
	InFlight int
	// InStep is true while Step is inside a call; StepDeadline is when that call is cancelled on
	// the clock (zero: it has none, as a pull).
	InStep       bool
	StepDeadline time.Time
	// Changed is closed when a call next starts or ends (nil from Peek).
	Changed <-chan struct{}
	// Seq counts the calls' starts and ends so far: a later Seq of the same number says none
	// started or ended since, as Changed still open does.
	Seq uint64
}

// Tracker makes and counts the calls.
type Tracker struct {
	clk     clock.Clock
	timeout time.Duration

	mu        sync.Mutex
	state     State // its Changed is not kept: see changed
	stepCalls int   // Step's calls in progress, from its pod workers
	// changed is the channel State last handed out, closed at the next call's start or end; nil
	// when none was asked for since, so a call that no one watches makes no channel (two a call
	// were half the allocations of a simulated node's relist).
	changed chan struct{}
}

// New is a tracker whose requests are bounded by timeout (--runtime-request-timeout) on clk.
func New(clk clock.Clock, timeout time.Duration) *Tracker {
	return &Tracker{clk: clk, timeout: timeout}
}

// Timeout is the runtime request timeout.
func (t *Tracker) Timeout() time.Duration { return t.timeout }

// State reports the calls in progress.
func (t *Tracker) State() State {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.changed == nil {
		t.changed = make(chan struct{})
	}
	st := t.state
	st.Changed = t.changed
	return st
}

// Peek is State without a Changed channel, for a reader that needs one only when it must wait
// (a simulator looks at every node at every instant, and most are parked already): Seq tells
// whether a call started or ended since.
func (t *Tracker) Peek() State {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.state
}

// Request runs fn with the runtime request timeout as a deadline on the clock.
func (t *Tracker) Request(ctx context.Context, fn func(ctx context.Context) error) error {
	return t.Within(ctx, t.timeout, fn)
}

// Within runs fn as one of Step's calls, bounded by d on the clock (d <= 0: unbounded). fn sees a
// context without the deadline, only its cancellation.
func (t *Tracker) Within(ctx context.Context, d time.Duration, fn func(ctx context.Context) error) error {
	if d <= 0 {
		t.count(true, 1, time.Time{})
		defer t.count(true, -1, time.Time{})
		return fn(WithoutDeadline(ctx))
	}
	c := newBounded(ctx, t.clk, t.clk.Now().Add(d))
	defer c.stop()
	t.count(true, 1, c.deadline)
	defer t.count(true, -1, time.Time{})
	err := fn(c)
	if err != nil && c.Err() == context.DeadlineExceeded {
		return fmt.Errorf("%w after %v: %v", context.DeadlineExceeded, d, err)
	}
	return err
}

// bounded is a call's context: its parent's values and cancellation, canceled at deadline on the
// clock, which it does not show (Deadline reports none). It watches nothing until Done is asked
// for: until then Err answers from the clock and the parent, as the timer and the parent's
// cancellation would have by then. Most calls return without anyone waiting, and the clock's
// deadline context, its CancelFunc and the wrapper hiding the deadline were three allocations at
// every runtime call.
type bounded struct {
	parent   context.Context
	clk      clock.Clock
	deadline time.Time // the sooner of the call's and its parent's

	mu         sync.Mutex
	done       chan struct{} // nil until Done is asked for
	err        error
	timer      *clock.Timer
	stopParent func() bool
}

func newBounded(parent context.Context, clk clock.Clock, deadline time.Time) *bounded {
	if cur, ok := parent.Deadline(); ok && cur.Before(deadline) {
		deadline = cur
	}
	return &bounded{parent: parent, clk: clk, deadline: deadline}
}

func (c *bounded) Deadline() (time.Time, bool) { return time.Time{}, false }

func (c *bounded) Value(key any) any { return c.parent.Value(key) }

// Done makes the channel at the first call and starts watching the parent and the clock.
func (c *bounded) Done() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done != nil {
		return c.done
	}
	c.settleLocked()
	c.done = make(chan struct{})
	if c.err != nil {
		close(c.done)
		return c.done
	}
	if c.parent.Done() != nil {
		// AfterFunc never runs its function in this goroutine, which holds the lock.
		c.stopParent = context.AfterFunc(c.parent, func() { c.cancel(c.parent.Err()) })
	}
	c.timer = c.clk.AfterFunc(c.clk.Until(c.deadline), func() { c.cancel(context.DeadlineExceeded) })
	if !c.clk.Now().Before(c.deadline) {
		c.cancelLocked(context.DeadlineExceeded) // the clock passed the deadline meanwhile
	}
	return c.done
}

func (c *bounded) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.settleLocked()
	return c.err
}

// settleLocked cancels an unwatched context whose deadline has passed or whose parent is done, as
// its timer or the parent's cancellation would have by now. A watched one is told by both.
func (c *bounded) settleLocked() {
	if c.err != nil || c.done != nil {
		return
	}
	if !c.clk.Now().Before(c.deadline) {
		c.err = context.DeadlineExceeded
	} else if err := c.parent.Err(); err != nil {
		c.err = err
	}
}

// stop ends the call's context, keeping a deadline passed or a parent's cancellation as its error.
func (c *bounded) stop() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.settleLocked()
	c.cancelLocked(context.Canceled)
}

func (c *bounded) cancel(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cancelLocked(err)
}

func (c *bounded) cancelLocked(err error) {
	if c.err == nil {
		c.err = err
		if c.done != nil {
			close(c.done)
		}
	}
	if c.timer != nil {
		c.timer.Stop()
		c.timer = nil
	}
	if c.stopParent != nil {
		c.stopParent()
		c.stopParent = nil
	}
}

// Go runs fn in a goroutine of its own, without a deadline (a background pull): a call that counts
// until fn has handed its result over and returned; then runs after.
func (t *Tracker) Go(ctx context.Context, fn func(ctx context.Context), after func()) {
	t.count(false, 1, time.Time{})
	go func() {
		fn(WithoutDeadline(ctx))
		t.count(false, -1, time.Time{})
		after()
	}()
}

// count adds delta (1 as a call starts, -1 as it ends) to the calls in progress, Step's own when
// step (with deadline, as it starts), and closes Changed.
func (t *Tracker) count(step bool, delta int, deadline time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.state.InFlight += delta
	t.state.Seq++
	if step {
		t.stepCalls += delta
		if delta > 0 {
			t.state.StepDeadline = deadline
		} else if t.stepCalls == 0 {
			t.state.StepDeadline = time.Time{}
		}
		t.state.InStep = t.stepCalls > 0
	}
	if t.changed != nil {
		close(t.changed)
		t.changed = nil
	}
}

// WithoutDeadline hides ctx's deadline and keeps its cancellation.
func WithoutDeadline(ctx context.Context) context.Context { return withoutDeadline{ctx} }

type withoutDeadline struct{ context.Context }

func (withoutDeadline) Deadline() (time.Time, bool) { return time.Time{}, false }
