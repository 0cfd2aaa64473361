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

// WithDeadline is a context canceled when the clock reaches deadline. It watches its parent and
// the clock only once Done is called (by a waiter, or a child context or AfterFunc that needs the
// channel): a simulated node makes one for every runtime call, and most calls return without
// anyone waiting, where the channel, the parent's registration and the clock's timer were most of
// a call's cost. Until then Err answers from the clock's time and the parent's Err, as the timer
// and the registration would have by then.
func (m *Mock) WithDeadline(parent context.Context, deadline time.Time) (context.Context, context.CancelFunc) {
	if cur, ok := parent.Deadline(); ok && cur.Before(deadline) {
		// The current deadline is already sooner than the new one.
		return context.WithCancel(parent)
	}
	ctx := &timerCtx{clock: m, parent: parent, deadline: deadline}
	if m.Until(deadline) <= 0 {
		ctx.err = context.DeadlineExceeded // deadline has already passed
	}
	return ctx, ctx.stop
}

// closedchan is the Done of a context canceled before anyone asked for its channel.
var closedchan = func() chan struct{} {
	ch := make(chan struct{})
	close(ch)
	return ch
}()

type timerCtx struct {
	sync.Mutex

	clock    *Mock
	parent   context.Context
	deadline time.Time
	done     chan struct{} // nil until Done is called: the context watches nothing until then

	err        error
	armed      bool        // on the clock's list of timers; under clock.mu, not the context's lock
	timed      bool        // was put on the list and not yet taken off by cancel
	stopParent func() bool // ends the registration with the parent (context.AfterFunc)
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
func (c *timerCtx) stop() {
	c.Lock()
	defer c.Unlock()
	c.settleLocked() // a deadline passed or a parent canceled unwatched keeps its error
	c.cancelLocked(context.Canceled)
}

func (c *timerCtx) cancel(err error) {
	c.Lock()
	defer c.Unlock()
	c.cancelLocked(err)
}

func (c *timerCtx) cancelLocked(err error) {
	if c.err != nil {
		return // already canceled
	}
	c.err = err
	if c.done != nil {
		close(c.done)
	}
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

// settleLocked cancels an unwatched context whose deadline has passed or whose parent is done, as
// its timer or its registration with the parent would have by now. A watched one has both.
func (c *timerCtx) settleLocked() {
	if c.err != nil || c.done != nil {
		return
	}
	if !c.clock.Now().Before(c.deadline) {
		c.cancelLocked(context.DeadlineExceeded)
	} else if err := c.parent.Err(); err != nil {
		c.cancelLocked(err)
	}
}

func (c *timerCtx) Deadline() (deadline time.Time, ok bool) { return c.deadline, true }

// Done makes the channel at the first call and starts watching: the parent with context.AfterFunc
// rather than a goroutine of its own (upstream's way: the goroutines cost more than the calls),
// and the clock with the context as its own timer on the clock's list (AfterFunc's Timer and its
// function were two allocations more).
func (c *timerCtx) Done() <-chan struct{} {
	c.Lock()
	defer c.Unlock()
	if c.done != nil {
		return c.done
	}
	if c.settleLocked(); c.err != nil {
		c.done = closedchan
		return c.done
	}
	c.done = make(chan struct{})
	if c.parent.Done() != nil {
		// AfterFunc never runs its function in this goroutine, which holds the context's lock.
		c.stopParent = context.AfterFunc(c.parent, func() { c.cancel(c.parent.Err()) })
	}
	m := c.clock
	m.mu.Lock()
	if m.now.Before(c.deadline) {
		c.armed, c.timed = true, true
		m.timers = append(m.timers, c)
	}
	m.mu.Unlock()
	if !c.timed {
		c.cancelLocked(context.DeadlineExceeded) // the clock passed the deadline meanwhile
	}
	return c.done
}

func (c *timerCtx) Err() error {
	c.Lock()
	defer c.Unlock()
	c.settleLocked()
	return c.err
}

func (c *timerCtx) Value(key interface{}) interface{} { return c.parent.Value(key) }

func (c *timerCtx) String() string {
	return fmt.Sprintf("clock.WithDeadline(%s [%s])", c.deadline, c.deadline.Sub(c.clock.Now()))
}
