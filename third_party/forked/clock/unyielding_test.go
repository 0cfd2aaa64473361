package clock

import (
	"context"
	"errors"
	"testing"
	"time"
)

// An unyielding mock keeps every behaviour of the mock but the sleeps: timers fire in order as
// it moves, and contexts end at their deadlines or with their parents.
func TestUnyieldingMock(t *testing.T) {
	m := NewUnyieldingMock()
	t1 := m.Timer(2 * time.Second)
	fired := make(chan time.Time, 1)
	m.AfterFunc(time.Second, func() { fired <- m.Now() })
	ctx, cancel := m.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()

	m.Add(time.Second)
	if at := <-fired; !at.Equal(time.Unix(1, 0)) {
		t.Errorf("AfterFunc ran at %v, want 1s", at)
	}
	m.Add(time.Second)
	if at := <-t1.C; !at.Equal(time.Unix(2, 0)) {
		t.Errorf("timer fired at %v, want 2s", at)
	}
	if ctx.Err() != nil {
		t.Fatalf("context ended at 2s: %v", ctx.Err())
	}
	m.Add(time.Second)
	<-ctx.Done()
	if ctx.Err() != context.DeadlineExceeded {
		t.Errorf("context ended with %v, want DeadlineExceeded", ctx.Err())
	}

	parent, cancelParent := context.WithCancel(context.Background())
	child, cancelChild := m.WithTimeout(parent, time.Hour)
	defer cancelChild()
	cancelParent()
	<-child.Done()
	if child.Err() != context.Canceled {
		t.Errorf("child of a cancelled parent ended with %v, want Canceled", child.Err())
	}
}

// A deadline context made under a parent canceled already is canceled too.
func TestMock_WithDeadlineParentCanceledBefore(t *testing.T) {
	m := NewUnyieldingMock()
	parent, cancel := context.WithCancel(context.Background())
	cancel()
	late, stopLate := m.WithTimeout(parent, time.Minute)
	defer stopLate()
	<-late.Done()
	if !errors.Is(late.Err(), context.Canceled) {
		t.Fatalf("Err() of a context made under a canceled parent = %v, want context.Canceled", late.Err())
	}
}

// The cost of a deadline context under a cancelable parent, made and canceled, as a simulated
// node makes one for every runtime call.
func BenchmarkMock_WithTimeout(b *testing.B) {
	m := NewUnyieldingMock()
	parent, cancel := context.WithCancel(context.Background())
	defer cancel()
	b.ReportAllocs()
	for b.Loop() {
		_, stop := m.WithTimeout(parent, time.Minute)
		stop()
	}
}
