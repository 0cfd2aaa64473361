package calls

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
)

var t0 = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// A call in Step is counted with its deadline on the clock while it runs, hidden from the call
// itself, and cut off with DeadlineExceeded when the clock reaches it.
func TestWithin(t *testing.T) {
	mock := clock.NewMock()
	mock.Set(t0)
	tr := New(mock, time.Minute)
	changed := tr.State().Changed
	entered := make(chan State)
	errc := make(chan error)
	go func() {
		errc <- tr.Request(context.Background(), func(ctx context.Context) error {
			if _, ok := ctx.Deadline(); ok {
				t.Error("the call sees its deadline")
			}
			entered <- tr.State()
			<-ctx.Done()
			return ctx.Err()
		})
	}()
	if s := <-entered; s.InFlight != 1 || !s.InStep || !s.StepDeadline.Equal(t0.Add(time.Minute)) || closed(s.Changed) {
		t.Errorf("in the call: %+v, want one call in Step until %v", s, t0.Add(time.Minute))
	}
	if !closed(changed) {
		t.Error("Changed not closed when the call started")
	}
	changed = tr.State().Changed
	mock.Add(time.Minute)
	if err := <-errc; !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("error %v, want DeadlineExceeded", err)
	}
	if s := tr.State(); s.InFlight != 0 || s.InStep || !s.StepDeadline.IsZero() || !closed(changed) {
		t.Errorf("after the call: %+v, changed %t; want none and a change", s, closed(changed))
	}
	if err := tr.Within(context.Background(), 0, func(ctx context.Context) error {
		if s := tr.State(); !s.InStep || !s.StepDeadline.IsZero() {
			t.Errorf("an unbounded call: %+v", s)
		}
		return nil
	}); err != nil {
		t.Error(err)
	}
}

// A call in the background counts, outside Step, until its result is handed over.
func TestGo(t *testing.T) {
	tr := New(clock.NewMock(), time.Minute)
	release, handed, after := make(chan struct{}), make(chan State), make(chan State)
	tr.Go(context.Background(), func(ctx context.Context) {
		<-release
		handed <- tr.State()
	}, func() { after <- tr.State() })
	if s := tr.State(); s.InFlight != 1 || s.InStep {
		t.Errorf("while it runs: %+v, want one call outside Step", s)
	}
	close(release)
	if s := <-handed; s.InFlight != 1 {
		t.Errorf("handing over: %+v, want the call still counted", s)
	}
	if s := <-after; s.InFlight != 0 {
		t.Errorf("after: %+v, want none", s)
	}
}

// Changed is one channel until the next call starts or ends, however often State is read, and a
// State read after calls no one watched hands out an open one.
func TestChangedIsOneChannelUntilAChange(t *testing.T) {
	tr := New(clock.NewMock(), time.Minute)
	a, b := tr.State().Changed, tr.State().Changed
	if a != b || closed(a) {
		t.Fatalf("two reads without a call between: %v and %v (closed %t), want one open channel", a, b, closed(a))
	}
	for range 3 {
		if err := tr.Request(context.Background(), func(context.Context) error { return nil }); err != nil {
			t.Fatal(err)
		}
	}
	if !closed(a) {
		t.Error("Changed not closed by the calls")
	}
	if c := tr.State().Changed; c == a || closed(c) {
		t.Errorf("after the calls: the old channel again (%t) or a closed one (%t), want a new open one", c == a, closed(c))
	}
}

// Peek is the state without a channel; its Seq moves at every call's start and end, where
// Changed would be closed, and not otherwise.
func TestPeekSeqMovesWhereChangedCloses(t *testing.T) {
	tr := New(clock.NewMock(), time.Minute)
	before := tr.Peek()
	if before.Changed != nil {
		t.Fatalf("Peek made a channel: %v", before.Changed)
	}
	if again, st := tr.Peek().Seq, tr.State().Seq; again != before.Seq || st != before.Seq {
		t.Fatalf("Seq moved without a call: %d, then %d and %d", before.Seq, again, st)
	}
	changed := tr.State().Changed
	var during State
	if err := tr.Request(context.Background(), func(context.Context) error {
		during = tr.Peek()
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if during.Seq != before.Seq+1 || during.InFlight != 1 || !during.InStep {
		t.Errorf("inside a call: %+v, want Seq %d, one call in Step", during, before.Seq+1)
	}
	if after := tr.Peek(); after.Seq != before.Seq+2 || after.InFlight != 0 || !closed(changed) {
		t.Errorf("after the call: %+v (Changed closed %t), want Seq %d, none in flight, Changed closed", after, closed(changed), before.Seq+2)
	}
}

// A call's context, watched (Done asked for) or not: it carries its parent's values, hides its
// deadline, and ends with the parent's cancellation or at the sooner of its deadline and its
// parent's on the clock, whichever comes first, with that error; a call that returned in time
// leaves it Canceled.
func TestCallContext(t *testing.T) {
	type key struct{}
	for _, tc := range []struct {
		name          string
		watch         bool
		parentIn      time.Duration // the parent's deadline from now (0: none)
		cancelParent  bool
		advance       time.Duration // the clock moved in the call
		wantDeadline  time.Duration // StepDeadline from now
		wantErr       error         // the context's Err in the call, after the move
		wantReturned  error         // what Within returns for a call returning ctx.Err()
		wantAfterCall error
	}{
		{name: "in time", advance: 59 * time.Second, wantDeadline: time.Minute, wantAfterCall: context.Canceled},
		{name: "in time, watched", watch: true, advance: 59 * time.Second, wantDeadline: time.Minute, wantAfterCall: context.Canceled},
		{name: "past the deadline", advance: time.Minute, wantDeadline: time.Minute, wantErr: context.DeadlineExceeded, wantReturned: context.DeadlineExceeded, wantAfterCall: context.DeadlineExceeded},
		{name: "past the deadline, watched", watch: true, advance: time.Minute, wantDeadline: time.Minute, wantErr: context.DeadlineExceeded, wantReturned: context.DeadlineExceeded, wantAfterCall: context.DeadlineExceeded},
		{name: "parent canceled", cancelParent: true, wantDeadline: time.Minute, wantErr: context.Canceled, wantReturned: context.Canceled, wantAfterCall: context.Canceled},
		{name: "parent canceled, watched", watch: true, cancelParent: true, wantDeadline: time.Minute, wantErr: context.Canceled, wantReturned: context.Canceled, wantAfterCall: context.Canceled},
		{name: "the parent's sooner deadline", parentIn: 10 * time.Second, advance: 10 * time.Second, wantDeadline: 10 * time.Second, wantErr: context.DeadlineExceeded, wantReturned: context.DeadlineExceeded, wantAfterCall: context.DeadlineExceeded},
		{name: "the parent's sooner deadline, watched", watch: true, parentIn: 10 * time.Second, advance: 10 * time.Second, wantDeadline: 10 * time.Second, wantErr: context.DeadlineExceeded, wantReturned: context.DeadlineExceeded, wantAfterCall: context.DeadlineExceeded},
		{name: "the parent's later deadline", parentIn: 2 * time.Minute, advance: time.Minute, wantDeadline: time.Minute, wantErr: context.DeadlineExceeded, wantReturned: context.DeadlineExceeded, wantAfterCall: context.DeadlineExceeded},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mock := clock.NewMock()
			mock.Set(t0)
			tr := New(mock, time.Minute)
			parent, cancel := context.WithCancel(context.WithValue(context.Background(), key{}, "v"))
			defer cancel()
			if tc.parentIn > 0 {
				var stop context.CancelFunc
				parent, stop = mock.WithTimeout(parent, tc.parentIn)
				defer stop()
			}
			var callCtx context.Context
			err := tr.Request(parent, func(ctx context.Context) error {
				callCtx = ctx
				if _, ok := ctx.Deadline(); ok {
					t.Error("the call sees its deadline")
				}
				if ctx.Value(key{}) != "v" {
					t.Error("the parent's value is lost")
				}
				if s := tr.State(); !s.StepDeadline.Equal(t0.Add(tc.wantDeadline)) {
					t.Errorf("StepDeadline %v, want %v", s.StepDeadline, t0.Add(tc.wantDeadline))
				}
				var done <-chan struct{}
				if tc.watch {
					done = ctx.Done()
				}
				if tc.cancelParent {
					cancel()
				}
				mock.Add(tc.advance)
				if tc.watch && tc.wantErr != nil {
					<-done // closed by the parent's cancellation or the clock's timer, in a goroutine
				}
				if err := ctx.Err(); err != tc.wantErr {
					t.Errorf("Err in the call %v, want %v", err, tc.wantErr)
				}
				if tc.watch && closed(done) != (tc.wantErr != nil) {
					t.Errorf("Done closed %t, want %t", closed(done), tc.wantErr != nil)
				}
				return ctx.Err()
			})
			if !errors.Is(err, tc.wantReturned) || (err == nil) != (tc.wantReturned == nil) {
				t.Errorf("Within returned %v, want %v", err, tc.wantReturned)
			}
			if err := callCtx.Err(); err != tc.wantAfterCall {
				t.Errorf("Err after the call %v, want %v", err, tc.wantAfterCall)
			}
			if !closed(callCtx.Done()) {
				t.Error("Done not closed after the call")
			}
		})
	}
}

// On the wall clock, as in production, a call waiting past its deadline is cut off.
func TestWithinWallClock(t *testing.T) {
	tr := New(clock.New(), 10*time.Millisecond)
	err := tr.Request(context.Background(), func(ctx context.Context) error {
		<-ctx.Done()
		return ctx.Err()
	})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("error %v, want DeadlineExceeded", err)
	}
}
