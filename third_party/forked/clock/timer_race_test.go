package clock

import (
	"testing"
	"time"
)

// A timer two goroutines both picked as the next to run fires once: the second Tick returns
// without sending, rather than block on the full channel while holding the clock's lock, which
// stopped every other user of the clock.
func TestMock_TimerTickedTwiceFiresOnce(t *testing.T) {
	m := NewMock()
	timer := m.Timer(time.Second)
	now := m.Now().Add(time.Second)
	(*internalTimer)(timer).Tick(now)
	second := make(chan struct{})
	go func() {
		(*internalTimer)(timer).Tick(now)
		close(second)
	}()
	select {
	case <-second:
	case <-time.After(10 * time.Second):
		t.Fatal("the second Tick of a fired timer blocked")
	}
	if got := <-timer.C; !got.Equal(now) {
		t.Errorf("fired at %v, want %v", got, now)
	}
	select {
	case got := <-timer.C:
		t.Errorf("fired twice: again at %v", got)
	default:
	}
	m.Add(time.Minute) // the clock is not held
}

// A stopped timer that a goroutine had already picked as the next does not fire.
func TestMock_StoppedTimerDoesNotFire(t *testing.T) {
	m := NewMock()
	timer := m.Timer(time.Second)
	timer.Stop()
	(*internalTimer)(timer).Tick(m.Now().Add(time.Second))
	select {
	case got := <-timer.C:
		t.Errorf("a stopped timer fired at %v", got)
	default:
	}
}
