package main

import (
	"encoding/json"
	"strconv"
	"testing"
	"time"

	eventsv1 "orch.io/orch/components/apis/events/v1"
	"orch.io/orch/components/apis/events/v1/validation"
)

// Every generated event must pass the server's create validation and weigh about 1 KB.
func TestNewEventIsValidAndRealistic(t *testing.T) {
	now := time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)
	events := newEventTemplate(eventsv1.GroupName, "orchload-watch-abc123")
	for _, seq := range []int{0, 1, 9, 10, 49, 12345} {
		b := events.newEvent("watch-abc123-12345", seq, now)
		if len(b) < 900 || len(b) > 1300 {
			t.Errorf("seq %d: %d bytes, want about 1 KB", seq, len(b))
		}
		var e eventsv1.Event
		if err := json.Unmarshal(b, &e); err != nil {
			t.Fatal(err)
		}
		if errs := validation.ValidateCreate(&e); len(errs) > 0 {
			t.Errorf("seq %d: invalid event: %v", seq, errs.ToAggregate())
		}
		if e.Namespace != "orchload-watch-abc123" || e.Regarding.Namespace != e.Namespace || !e.EventTime.Time.Equal(now) {
			t.Errorf("seq %d: namespace %q, regarding.namespace %q, eventTime %v", seq, e.Namespace, e.Regarding.Namespace, e.EventTime)
		}
		if len(e.Note) > validation.NoteLengthLimit {
			t.Errorf("seq %d: note of %d bytes", seq, len(e.Note))
		}
	}
	warnings := 0
	for seq := range 100 {
		var e eventsv1.Event
		_ = json.Unmarshal(events.newEvent("x", seq, now), &e)
		if e.Type == "Warning" {
			warnings++
		}
	}
	if warnings != 10 {
		t.Errorf("%d warnings in 100 events, want 10", warnings)
	}
}

// The template writes exactly what encoding the event by reflection writes, for either group.
func TestEventTemplateEncodesTheEvent(t *testing.T) {
	for _, group := range []string{eventsv1.GroupName, "events.k8s.io"} {
		events := newEventTemplate(group, "orchload-create-x1")
		for seq := range 120 {
			now := time.Date(2026, 11, 28, 16, 30, 0, seq*1013, time.FixedZone("CET", 3600))
			name := "create-x1-c3-" + strconv.Itoa(seq)
			pod, seqText, warning := eventVariety(seq)
			e := eventObject(group, "orchload-create-x1", name, pod, seqText, warning, now)
			want, err := json.Marshal(&e)
			if err != nil {
				t.Fatal(err)
			}
			if got := events.newEvent(name, seq, now); string(got) != string(want) {
				t.Fatalf("%s seq %d:\n got %s\nwant %s", group, seq, got, want)
			}
		}
	}
}
