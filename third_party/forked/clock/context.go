package clock

import (
	"context"
	"fmt"
	"sync"
	"time"
)

func (m *Mock) WithTimeout(parent context.Context, timeout time.Duration) (context.Context, context.CancelFunc) {
	return m.WithDeadline(parent, m.Now().Add(timeout))
}

func (m *Mock) WithDeadline(parent context.Context, deadline time.Time) (context.Context, context.CancelFunc) {
	if cur, ok := parent.Deadline(); ok && cur.Before(deadline) {
		// The current deadline is already sooner than the new one.
		return context.WithCancel(parent)
	}
	ctx := &timerCtx{clock: m, parent: parent, deadline: deadline, done: make(chan struct{})}
	propagateCancel(parent, ctx)
	dur := m.Until(deadline)
	if dur <= 0 {
		ctx.cancel(context.DeadlineExceeded) // deadline has already passed
		return ctx, func() {}
	}
	ctx.Lock()
	defer ctx.Unlock()
	if ctx.err == nil {
		// The context is its own timer on the clock's list, where AfterFunc's Timer and its
		// function were two allocations more at every call (a simulated node makes a deadline
		// context for every runtime call).
		m.mu.Lock()
		ctx.armed, ctx.timed = true, true
		m.timers = append(m.timers, ctx)
		m.mu.Unlock()
	}
	return ctx, ctx.stop
}

// propagateCancel arranges for child to be canceled when parent is. context.AfterFunc registers
// with the parent rather than starting a goroutine that waits on both (upstream's way): a
// simulated node makes a deadline context for every runtime call, and the goroutines cost more
// than the calls.
func propagateCancel(parent context.Context, child *timerCtx) {
	if parent.Done() == nil {
		return // parent is never canceled
	}
	stop := context.AfterFunc(parent, func() { child.cancel(parent.Err()) })
	child.Lock()
	defer child.Unlock()
	if child.err != nil {
		stop() // canceled already: the registration is not needed
		return
	}
	child.stopParent = stop
}

type timerCtx struct {
	sync.Mutex

	clock    *Mock
	parent   context.Context
	deadline time.Time
	done     chan struct{}

	err        error
	armed      bool        // on the clock's list of timers; under clock.mu, not the context's lock
	timed      bool        // was put on the list and not yet taken off by cancel
	stopParent func() bool // ends propagateCancel's registration with the parent
}

// Next and Tick make the context a timer of the clock (clockTimer): at its deadline it is
// canceled in a goroutine of its own, as a Timer made by AfterFunc runs its function.
func (c *timerCtx) Next() time.Time { return c.deadline }

func (c *timerCtx) Tick(time.Time) {
	defer c.clock.gosched()
	c.clock.mu.Lock()
	if !c.armed {
		// Stopped, or fired already (see internalTimer.Tick).
		c.clock.mu.Unlock()
		return
	}
	c.clock.removeClockTimer(c)
	c.armed = false
	c.clock.mu.Unlock()
	go c.cancel(context.DeadlineExceeded)
}

// stop is the context's CancelFunc.
func (c *timerCtx) stop() { c.cancel(context.Canceled) }

func (c *timerCtx) cancel(err error) {
	c.Lock()
	defer c.Unlock()
	if c.err != nil {
		return // already canceled
	}
	c.err = err
	close(c.done)
	if c.timed {
		// Off the clock's list as a Timer's Stop took it, fired or not: the list sorted again
		// (an unstable sort: its order of timers due at one time is kept as it was). The
		// clock's lock is never held while a context's is taken: Tick releases it first.
		c.clock.mu.Lock()
		c.clock.removeClockTimer(c)
		c.armed = false
		c.clock.mu.Unlock()
		c.timed = false
	}
	if c.stopParent != nil {
		c.stopParent()
		c.stopParent = nil
	}
}

func (c *timerCtx) Deadline() (deadline time.Time, ok bool) { return c.deadline, true }

func (c *timerCtx) Done() <-chan struct{} { return c.done }

func (c *timerCtx) Err() error {
	c.Lock()
	defer c.Unlock()
	return c.err
}

func (c *timerCtx) Value(key interface{}) interface{} { return c.parent.Value(key) }

func (c *timerCtx) String() string {
	return fmt.Sprintf("clock.WithDeadline(%s [%s])", c.deadline, c.deadline.Sub(c.clock.Now()))
}
