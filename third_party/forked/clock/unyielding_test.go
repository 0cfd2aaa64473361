package clock

import (
	"context"
	"errors"
	"sync"
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

// Now is read without the clock's lock: readers on other goroutines see every move in order,
// never a time the clock was not set to, and a zero Mock reads the zero time.
func TestMock_NowWhileMoving(t *testing.T) {
	if !(&Mock{}).Now().IsZero() {
		t.Fatal("a zero Mock's Now is not the zero time")
	}
	m := NewUnyieldingMock()
	start := m.Now()
	const moves = 10000
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			last := start
			for {
				now := m.Now()
				if now.Before(last) {
					t.Errorf("Now went back from %v to %v", last, now)
					return
				}
				if d := now.Sub(start); d%time.Second != 0 {
					t.Errorf("Now read %v, a time the clock was never set to", now)
					return
				}
				if last = now; now.Equal(start.Add(moves * time.Second)) {
					return
				}
			}
		}()
	}
	timer := m.Timer(moves / 2 * time.Second)
	for i := 1; i <= moves; i++ {
		if i%2 == 0 {
			m.Set(start.Add(time.Duration(i) * time.Second))
		} else {
			m.Add(time.Second)
		}
	}
	wg.Wait()
	if got, want := <-timer.C, start.Add(moves/2*time.Second); !got.Equal(want) {
		t.Errorf("the timer fired at %v, want %v", got, want)
	}
}

// Now from every processor at once, as a simulation's nodes read the one clock.
func BenchmarkMock_NowParallel(b *testing.B) {
	m := NewUnyieldingMock()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			_ = m.Now()
		}
	})
}
