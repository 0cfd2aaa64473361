package events

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	eventsv1 "orch.io/orch/components/apis/events/v1"
	"orch.io/orch/components/apis/events/v1/validation"
)

var start = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// memSink keeps every write, in order, and checks each against the API server's rules.
type memSink struct {
	t      *testing.T
	writes []written
	err    error
}

type written struct {
	verb  string
	event *eventsv1.Event
}

func (s *memSink) Create(_ context.Context, e *eventsv1.Event) (*eventsv1.Event, error) {
	if errs := validation.ValidateCreate(e); len(errs) > 0 {
		s.t.Errorf("created an invalid event: %v", errs)
	}
	s.writes = append(s.writes, written{"create", copyEvent(e)})
	return e, s.err
}

func (s *memSink) Update(_ context.Context, e *eventsv1.Event) (*eventsv1.Event, error) {
	s.writes = append(s.writes, written{"update", copyEvent(e)})
	return e, s.err
}

func (s *memSink) creates() int {
	n := 0
	for _, w := range s.writes {
		if w.verb == "create" {
			n++
		}
	}
	return n
}

// summary renders writes as "verb reason count@lastObserved" lines, times as offsets from start.
func (s *memSink) summary() string {
	var b strings.Builder
	for _, w := range s.writes {
		fmt.Fprintf(&b, "%s %s first=%v", w.verb, w.event.Reason, w.event.EventTime.Sub(start))
		if w.event.Series != nil {
			fmt.Fprintf(&b, " count=%d last=%v", w.event.Series.Count, w.event.Series.LastObservedTime.Sub(start))
		}
		b.WriteString("\n")
	}
	return b.String()
}

func newMock() *clock.Mock {
	clk := clock.NewMock()
	clk.Set(start)
	return clk
}

func mustNew(t *testing.T, o Options) *Recorder {
	t.Helper()
	r, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func pod(name string) *corev1.ObjectReference {
	return PodReference(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "kube-system", UID: types.UID("uid-" + name)}})
}

// chanSink reports each write's verb on c, for tests of Run.
type chanSink struct{ c chan string }

func (s *chanSink) Create(_ context.Context, e *eventsv1.Event) (*eventsv1.Event, error) {
	s.c <- "create"
	return e, nil
}

func (s *chanSink) Update(_ context.Context, e *eventsv1.Event) (*eventsv1.Event, error) {
	s.c <- "update"
	return e, nil
}
