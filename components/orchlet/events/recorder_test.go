package events

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	eventsv1 "orch.io/orch/components/apis/events/v1"
)

// TestEventFields: what an Event says about who reported it, when, and about what.
func TestEventFields(t *testing.T) {
	clk := newMock()
	clk.Add(1500 * time.Microsecond)
	sink := &memSink{t: t}
	r := mustNew(t, Options{Clock: clk, NodeName: "node-a", Sink: sink, QPS: 50, Burst: 100})
	r.Eventf(pod("web"), Warning, "BackOff", "StartContainer", "back-off %ds restarting %s", 10, "c")
	r.Eventf(NodeReference("node-a"), Normal, "Starting", "Start", "starting orchlet")
	r.Eventf(pod("web"), Normal, "Pulled", "Pull", "%s", strings.Repeat("é", 600))
	r.Step(context.Background())
	if len(sink.writes) != 3 {
		t.Fatalf("got %d writes, want 3", len(sink.writes))
	}
	at := metav1.NewMicroTime(start.Add(1500 * time.Microsecond))
	podEv, nodeEv, longEv := sink.writes[0].event, sink.writes[1].event, sink.writes[2].event
	cases := []struct {
		what      string
		got, want any
	}{
		{"apiVersion", podEv.APIVersion, "events.orch.io/v1"},
		{"kind", podEv.Kind, "Event"},
		{"name", podEv.Name, fmt.Sprintf("web.%x", at.UnixNano())},
		{"same-instant name stays unique", longEv.Name, fmt.Sprintf("web.%x", at.UnixNano()+2)},
		{"namespace of the regarded pod", podEv.Namespace, "kube-system"},
		{"reportingController", podEv.ReportingController, "orch.io/orchlet"},
		{"reportingInstance", podEv.ReportingInstance, "node-a"},
		{"eventTime from the clock", podEv.EventTime, at},
		{"regarding", podEv.Regarding, corev1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: "kube-system", Name: "web", UID: "uid-web"}},
		{"type", podEv.Type, "Warning"},
		{"reason", podEv.Reason, "BackOff"},
		{"action", podEv.Action, "StartContainer"},
		{"note formatted", podEv.Note, "back-off 10s restarting c"},
		{"no series", podEv.Series == nil, true},
		{"node event namespace", nodeEv.Namespace, "default"},
		{"node regarding", nodeEv.Regarding, corev1.ObjectReference{Kind: "Node", Name: "node-a", UID: "node-a"}},
		{"note cut to 1 kB on a character boundary", len(longEv.Note), 1024},
		{"note still valid UTF-8", strings.ToValidUTF8(longEv.Note, "?"), longEv.Note},
	}
	for _, c := range cases {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.what, c.got, c.want)
		}
	}
}

// TestInvalidEventf: an Eventf that cannot make a valid Event reports why and writes nothing, and
// costs no token.
func TestInvalidEventf(t *testing.T) {
	cases := []struct {
		name      string
		regarding *corev1.ObjectReference
		eventType string
		reason    string
		action    string
		want      string
	}{
		{"no regarding", nil, Normal, "R", "A", "events: no regarding object"},
		{"unknown type", pod("web"), "Error", "R", "A", "type: Invalid value: \"\": has invalid value: Error"},
		{"no type", pod("web"), "", "R", "A", "type: Required value"},
		{"no reason", pod("web"), Normal, "", "A", "reason: Required value"},
		{"no action", pod("web"), Normal, "R", "", "action: Required value"},
		{"long reason", pod("web"), Normal, strings.Repeat("r", 129), "A", "reason: Invalid value: \"\": can have at most 128 characters"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sink := &memSink{t: t}
			var errs []error
			r := mustNew(t, Options{Clock: newMock(), NodeName: "node-a", Sink: sink, QPS: 1, Burst: 1,
				OnError: func(_ *eventsv1.Event, err error) { errs = append(errs, err) }})
			r.Eventf(tc.regarding, tc.eventType, tc.reason, tc.action, "note")
			r.Step(context.Background())
			if len(sink.writes) != 0 {
				t.Errorf("wrote %d events", len(sink.writes))
			}
			if len(errs) != 1 || !strings.Contains(errs[0].Error(), tc.want) {
				t.Errorf("errors %v, want one saying %q", errs, tc.want)
			}
			// The only token is still there for a valid event.
			r.Eventf(pod("web"), Normal, "R", "A", "note")
			r.Step(context.Background())
			if len(sink.writes) != 1 {
				t.Errorf("the invalid event used the token")
			}
		})
	}
}

// TestSinkErrorReported: a write the sink refuses is reported, and later writes still happen in order.
func TestSinkErrorReported(t *testing.T) {
	sink := &memSink{t: t, err: errors.New("connection refused")}
	var got []string
	r := mustNew(t, Options{Clock: newMock(), NodeName: "node-a", Sink: sink, QPS: 50, Burst: 100,
		OnError: func(e *eventsv1.Event, err error) { got = append(got, e.Reason+": "+err.Error()) }})
	r.Eventf(pod("web"), Normal, "A", "Act", "1")
	r.Eventf(pod("web"), Normal, "B", "Act", "2")
	r.Step(context.Background())
	if want := "A: connection refused|B: connection refused"; strings.Join(got, "|") != want {
		t.Errorf("reported %q, want %q", strings.Join(got, "|"), want)
	}
}

// TestLogSink: standalone mode logs each write as one JSON line.
func TestLogSink(t *testing.T) {
	var buf bytes.Buffer
	clk := newMock()
	r := mustNew(t, Options{Clock: clk, NodeName: "node-a", Sink: NewLogSink(&buf), QPS: 50, Burst: 100})
	r.Eventf(pod("web"), Warning, "BackOff", "StartContainer", "back-off restarting %q", "c")
	clk.Add(2 * time.Second)
	r.Eventf(pod("web"), Warning, "BackOff", "StartContainer", "back-off restarting %q", "c")
	r.Step(context.Background())
	want := `{"verb":"create","event":{"kind":"Event","apiVersion":"events.orch.io/v1","metadata":{"name":"web.18867251edfa0000","namespace":"kube-system"},"eventTime":"2026-01-01T00:00:00.000000Z","reportingController":"orch.io/orchlet","reportingInstance":"node-a","action":"StartContainer","reason":"BackOff","regarding":{"kind":"Pod","namespace":"kube-system","name":"web","uid":"uid-web","apiVersion":"v1"},"note":"back-off restarting \"c\"","type":"Warning","deprecatedSource":{},"deprecatedFirstTimestamp":null,"deprecatedLastTimestamp":null}}
{"verb":"update","event":{"kind":"Event","apiVersion":"events.orch.io/v1","metadata":{"name":"web.18867251edfa0000","namespace":"kube-system"},"eventTime":"2026-01-01T00:00:00.000000Z","series":{"count":2,"lastObservedTime":"2026-01-01T00:00:02.000000Z"},"reportingController":"orch.io/orchlet","reportingInstance":"node-a","action":"StartContainer","reason":"BackOff","regarding":{"kind":"Pod","namespace":"kube-system","name":"web","uid":"uid-web","apiVersion":"v1"},"note":"back-off restarting \"c\"","type":"Warning","deprecatedSource":{},"deprecatedFirstTimestamp":null,"deprecatedLastTimestamp":null}}
`
	if got := buf.String(); got != want {
		t.Errorf("log:\n%s\nwant:\n%s", got, want)
	}
}

// failingWriter refuses every write.
type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestLogSinkWriteError(t *testing.T) {
	e := &eventsv1.Event{ObjectMeta: metav1.ObjectMeta{Name: "web.1", Namespace: "default"}}
	if _, err := NewLogSink(failingWriter{}).Create(context.Background(), e); err == nil || err.Error() != "event default/web.1: disk full" {
		t.Errorf("Create: %v", err)
	}
}

// TestSameCallsSameWrites: the same calls at the same fake times, with Steps between them, give the
// same writes and drops every run.
func TestSameCallsSameWrites(t *testing.T) {
	run := func() string {
		clk := newMock()
		sink := &memSink{t: t}
		r := mustNew(t, Options{Clock: clk, NodeName: "node-a", Sink: sink, QPS: 2, Burst: 3})
		for i := range 40 {
			r.Eventf(pod([]string{"a", "b", "c"}[i%3]), Warning, []string{"BackOff", "Failed"}[i%2], "Sync", "n")
			if i%4 == 0 {
				r.Step(context.Background())
			}
			clk.Add(700 * time.Millisecond)
		}
		clk.Add(time.Hour)
		r.Step(context.Background())
		var b strings.Builder
		for _, w := range sink.writes {
			b.WriteString(w.verb + " " + w.event.Name + " " + w.event.Reason)
			if w.event.Series != nil {
				b.WriteString(" " + w.event.Series.LastObservedTime.String())
			}
			b.WriteString("\n")
		}
		return b.String() + fmt.Sprintf("dropped %d", r.Dropped())
	}
	first := run()
	for range 3 {
		if again := run(); again != first {
			t.Fatalf("runs differ:\n%s\nvs\n%s", first, again)
		}
	}
}
