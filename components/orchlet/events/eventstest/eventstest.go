// Package eventstest holds Recorder, an event recorder for the tests of components that record
// events: it keeps each event as one line of text a test compares.
package eventstest

import (
	"fmt"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
)

// Recorder keeps each event as "<type> <reason> <kind>/<name>: <note>". The zero Recorder is
// ready to use.
type Recorder struct {
	mu  sync.Mutex
	all []string
}

// Eventf records an event, as events.Recorder's Eventf is called.
func (r *Recorder) Eventf(ref *corev1.ObjectReference, eventType, reason, action, format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.all = append(r.all, fmt.Sprintf("%s %s %s/%s: %s", eventType, reason, ref.Kind, ref.Name, fmt.Sprintf(format, args...)))
}

// Events are the events recorded so far, oldest first.
func (r *Recorder) Events() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.all)
}
