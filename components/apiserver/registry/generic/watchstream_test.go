package generic_test

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/watch"

	"orch.io/orch/components/apiserver/registry/events"
	"orch.io/orch/components/apiserver/registry/generic"
)

// A watch stream calls its reader's idle function only when it is about to wait: changes already
// waiting go out together, and the reader flushes once after them. It ends when its context does.
func TestWatchStreamIsIdleOnlyBeforeWaiting(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	_, s, _, from := newStoreFromNow(t, events.Strategy{})
	stream, err := s.WatchStream(ctx, "default", generic.WatchOptions{ListOptions: from, JSON: true})
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Stop()
	for i := range 3 {
		if _, err := s.Create(ctx, "default", event(i), false); err != nil {
			t.Fatal(err)
		}
	}
	idle := 0
	for i := range 3 {
		ev, ok := stream.Next(func() { idle++ })
		if !ok || ev.Type != watch.Added || ev.JSON == nil {
			t.Fatalf("change %d: %v %v", i, ev.Type, ok)
		}
	}
	if idle != 0 {
		t.Errorf("idle called %d times while changes were waiting", idle)
	}
	ended := make(chan bool)
	go func() {
		_, ok := stream.Next(func() {
			idle++
			cancel()
		})
		ended <- !ok
	}()
	if !<-ended {
		t.Error("the stream went on after its context ended")
	}
	if idle != 1 {
		t.Errorf("idle called %d times before waiting, want 1", idle)
	}
	if _, ok := stream.Next(nil); ok {
		t.Error("an ended stream gave an event")
	}
}
