package clock

import (
	"context"
	"testing"
	"time"
)

// Err may be called from any goroutine while the deadline passes or the parent is canceled: the
// race detector fails this test when Err reads the error without the context's lock.
func TestMock_WithDeadlineErrWhileCanceled(t *testing.T) {
	m := NewMock()
	parent, cancelParent := context.WithCancel(context.Background())
	byDeadline, cancel1 := m.WithTimeout(context.Background(), time.Second)
	defer cancel1()
	byParent, cancel2 := m.WithTimeout(parent, time.Hour)
	defer cancel2()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for byDeadline.Err() == nil || byParent.Err() == nil {
		}
	}()
	m.Add(time.Second)
	cancelParent()
	<-done
	if byDeadline.Err() != context.DeadlineExceeded || byParent.Err() != context.Canceled {
		t.Errorf("errors %v and %v, want %v and %v", byDeadline.Err(), byParent.Err(), context.DeadlineExceeded, context.Canceled)
	}
}

// Goroutines that ask for Done at once, as the clock reaches the deadline, share one channel,
// closed with DeadlineExceeded, whether they asked before or after the clock got there.
func TestMock_WithDeadlineDoneWhileMoving(t *testing.T) {
	m := NewUnyieldingMock()
	ctx, cancel := m.WithTimeout(context.Background(), time.Second)
	defer cancel()
	chans := make(chan (<-chan struct{}), 8)
	for range cap(chans) {
		go func() { chans <- ctx.Done() }()
	}
	m.Add(time.Second)
	first := <-chans
	for range cap(chans) - 1 {
		if ch := <-chans; ch != first {
			t.Fatal("two channels from Done")
		}
	}
	<-first
	if err := ctx.Err(); err != context.DeadlineExceeded {
		t.Errorf("Err %v, want %v", err, context.DeadlineExceeded)
	}
}
