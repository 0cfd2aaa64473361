package clock

import (
	"context"
	"errors"
	"testing"
	"time"
)

// Ensure that WithDeadline is cancelled when deadline exceeded.
func TestMock_WithDeadline(t *testing.T) {
	m := NewMock()
	ctx, _ := m.WithDeadline(context.Background(), m.Now().Add(time.Second))
	m.Add(time.Second)
	select {
	case <-ctx.Done():
		if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
			t.Error("invalid type of error returned when deadline exceeded")
		}
	default:
		t.Error("context is not cancelled when deadline exceeded")
	}
}

// Ensure that WithDeadline does nothing when the deadline is later than the current deadline.
func TestMock_WithDeadlineLaterThanCurrent(t *testing.T) {
	m := NewMock()
	ctx, _ := m.WithDeadline(context.Background(), m.Now().Add(time.Second))
	ctx, _ = m.WithDeadline(ctx, m.Now().Add(10*time.Second))
	m.Add(time.Second)
	select {
	case <-ctx.Done():
		if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
			t.Error("invalid type of error returned when deadline exceeded")
		}
	default:
		t.Error("context is not cancelled when deadline exceeded")
	}
}

// Ensure that WithDeadline cancel closes Done channel with context.Canceled error.
func TestMock_WithDeadlineCancel(t *testing.T) {
	m := NewMock()
	ctx, cancel := m.WithDeadline(context.Background(), m.Now().Add(time.Second))
	cancel()
	select {
	case <-ctx.Done():
		if !errors.Is(ctx.Err(), context.Canceled) {
			t.Error("invalid type of error returned after cancellation")
		}
	case <-time.After(time.Second):
		t.Error("context is not cancelled after cancel was called")
	}
}

// Ensure that WithDeadline closes child contexts after it was closed.
func TestMock_WithDeadlineCancelledWithParent(t *testing.T) {
	m := NewMock()
	parent, cancel := context.WithCancel(context.Background())
	ctx, _ := m.WithDeadline(parent, m.Now().Add(time.Second))
	cancel()
	select {
	case <-ctx.Done():
		if !errors.Is(ctx.Err(), context.Canceled) {
			t.Error("invalid type of error returned after cancellation")
		}
	case <-time.After(time.Second):
		t.Error("context is not cancelled when parent context is cancelled")
	}
}

// Ensure that WithDeadline cancelled immediately when deadline has already passed.
func TestMock_WithDeadlineImmediate(t *testing.T) {
	m := NewMock()
	ctx, _ := m.WithDeadline(context.Background(), m.Now().Add(-time.Second))
	select {
	case <-ctx.Done():
		if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
			t.Error("invalid type of error returned when deadline has already passed")
		}
	default:
		t.Error("context is not cancelled when deadline has already passed")
	}
}

// Ensure that WithTimeout is cancelled when deadline exceeded.
func TestMock_WithTimeout(t *testing.T) {
	m := NewMock()
	ctx, _ := m.WithTimeout(context.Background(), time.Second)
	m.Add(time.Second)
	select {
	case <-ctx.Done():
		if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
			t.Error("invalid type of error returned when time is over")
		}
	default:
		t.Error("context is not cancelled when time is over")
	}
}

// A deadline context is its own timer on the clock's list once watched (Done called): on it until
// canceled or fired, off it after, and its cancellation after it fired changes nothing. Unwatched,
// it is on no list.
func TestMock_WithDeadlineIsATimer(t *testing.T) {
	m := NewUnyieldingMock()
	canceled, cancel := m.WithTimeout(context.Background(), time.Second)
	if n := timers(m); n != 0 {
		t.Fatalf("%d timers on the clock with an unwatched deadline context, want 0", n)
	}
	canceled.Done()
	if n := timers(m); n != 1 {
		t.Fatalf("%d timers on the clock with a watched deadline context, want 1", n)
	}
	cancel()
	if n := timers(m); n != 0 || canceled.Err() != context.Canceled {
		t.Fatalf("after cancel: %d timers, error %v; want 0, %v", n, canceled.Err(), context.Canceled)
	}
	expiring, cancel := m.WithTimeout(context.Background(), time.Second)
	done := expiring.Done()
	m.Add(time.Second)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the context is not canceled at its deadline")
	}
	cancel()
	if n := timers(m); n != 0 || expiring.Err() != context.DeadlineExceeded {
		t.Errorf("after the deadline and cancel: %d timers, error %v; want 0, %v", n, expiring.Err(), context.DeadlineExceeded)
	}
}

func timers(m *Mock) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.timers)
}

// An unwatched context answers as a watched one would have: Err and a later Done say what
// happened first among the deadline, the parent's cancellation and cancel, and cancel after either
// keeps its error. It never goes on the clock's list.
func TestMock_WithDeadlineUnwatched(t *testing.T) {
	for _, tc := range []struct {
		name   string
		events []string // "deadline": the clock reaches it; "parent": the parent is canceled; "cancel"
		want   error    // Err after the events (nil: not canceled)
	}{
		{"nothing happened", nil, nil},
		{"the clock short of the deadline", []string{"short"}, nil},
		{"the deadline", []string{"deadline"}, context.DeadlineExceeded},
		{"the parent", []string{"parent"}, context.Canceled},
		{"cancel", []string{"cancel"}, context.Canceled},
		{"the deadline, then cancel", []string{"deadline", "cancel"}, context.DeadlineExceeded},
		{"cancel, then the deadline", []string{"cancel", "deadline"}, context.Canceled},
		{"the parent, then cancel", []string{"parent", "cancel"}, context.Canceled},
	} {
		for _, read := range []string{"Err", "Done"} {
			t.Run(tc.name+", read by "+read, func(t *testing.T) {
				m := NewUnyieldingMock()
				parent, cancelParent := context.WithCancelCause(context.Background())
				defer cancelParent(nil)
				ctx, cancel := m.WithTimeout(parent, time.Second)
				for _, e := range tc.events {
					switch e {
					case "short":
						m.Add(time.Second - time.Nanosecond)
					case "deadline":
						m.Add(time.Second)
					case "parent":
						cancelParent(nil)
					case "cancel":
						cancel()
					}
				}
				if read == "Done" {
					select {
					case <-ctx.Done():
						if tc.want == nil {
							t.Errorf("Done closed, Err %v; want open", ctx.Err())
						}
					default:
						if tc.want != nil {
							t.Errorf("Done open, want closed with %v", tc.want)
						}
					}
				}
				if err := ctx.Err(); err != tc.want {
					t.Errorf("Err %v, want %v", err, tc.want)
				}
				want := 0 // watched and running: the one timer
				if read == "Done" && tc.want == nil {
					want = 1
				}
				if n := timers(m); n != want {
					t.Errorf("%d timers on the clock, want %d", n, want)
				}
			})
		}
	}
}

// A child made from an unwatched context watches it, and is canceled at the deadline; so is a
// function registered with context.AfterFunc, in deadline order among the clock's other timers.
func TestMock_WithDeadlineWatchedByChildren(t *testing.T) {
	m := NewUnyieldingMock()
	ctx, cancel := m.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	child, cancelChild := context.WithCancel(ctx)
	defer cancelChild()
	fired := make(chan string, 3)
	context.AfterFunc(ctx, func() { fired <- "context" })
	m.AfterFunc(time.Second, func() { fired <- "before" })
	m.Add(time.Second)
	if got := <-fired; got != "before" {
		t.Fatalf("first %q, want the timer due before the deadline", got)
	}
	m.AfterFunc(2*time.Second, func() { fired <- "after" })
	m.Add(time.Second)
	if got := <-fired; got != "context" {
		t.Fatalf("at the deadline %q, want the context's function", got)
	}
	<-child.Done()
	if child.Err() != context.DeadlineExceeded || ctx.Err() != context.DeadlineExceeded {
		t.Errorf("child %v, context %v; want both %v", child.Err(), ctx.Err(), context.DeadlineExceeded)
	}
	select {
	case got := <-fired:
		t.Errorf("%q fired before its time", got)
	default:
	}
}
