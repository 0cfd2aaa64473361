package events

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sync"

	eventsv1 "orch.io/orch/components/apis/events/v1"
)

// Sink stores Events. Create is POST on the Event's namespaced collection; Update is an
// unconditional PUT of the whole Event by name (the recorder sends no resourceVersion), used to write
// a series. The recorder does not read what a Sink returns.
type Sink interface {
	Create(ctx context.Context, e *eventsv1.Event) (*eventsv1.Event, error)
	Update(ctx context.Context, e *eventsv1.Event) (*eventsv1.Event, error)
}

// LogSink is standalone mode's Sink: each write is one line of JSON, {"verb":..., "event":...}, on w.
type LogSink struct {
	mu sync.Mutex
	w  io.Writer
}

// NewLogSink writes to w.
func NewLogSink(w io.Writer) *LogSink { return &LogSink{w: w} }

// Create logs the event with verb "create".
func (s *LogSink) Create(_ context.Context, e *eventsv1.Event) (*eventsv1.Event, error) {
	return e, s.write("create", e)
}

// Update logs the event with verb "update".
func (s *LogSink) Update(_ context.Context, e *eventsv1.Event) (*eventsv1.Event, error) {
	return e, s.write("update", e)
}

func (s *LogSink) write(verb string, e *eventsv1.Event) error {
	line, err := json.Marshal(struct {
		Verb  string          `json:"verb"`
		Event *eventsv1.Event `json:"event"`
	}{verb, e})
	if err != nil {
		return fmt.Errorf("event %s/%s: %w", e.Namespace, e.Name, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := s.w.Write(append(line, '\n')); err != nil {
		return fmt.Errorf("event %s/%s: %w", e.Namespace, e.Name, err)
	}
	return nil
}
