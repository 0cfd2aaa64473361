// Package backoff is Kubernetes' flowcontrol.Backoff for one key, without jitter: how long the pod
// workers wait after a container crashed, an image pull failed or a pod's sync failed.
package backoff

import "time"

// Kubernetes' kubelet back-off figures, for crash loops and for image pulls alike.
const (
	Initial = 10 * time.Second
	Max     = 5 * time.Minute
)

// Backoff is the back-off of one key; the zero value has never failed.
type Backoff struct {
	Delay time.Duration // 0: never failed, or reset
	Last  time.Time     // when Delay was last raised
}

// Next raises the delay after a failure observed at event: Initial the first time and after an
// entry went stale (the event came more than 2 x Max after the last raise, i.e. the container ran
// cleanly that long), doubling otherwise up to Max.
func (b *Backoff) Next(event, now time.Time) {
	if b.Delay == 0 || event.Sub(b.Last) > 2*Max {
		b.Delay = Initial
	} else {
		b.Delay = min(2*b.Delay, Max)
	}
	b.Last = now
}

// WaitSince says whether a failure at event must still wait at now, and until when.
func (b *Backoff) WaitSince(event, now time.Time) (time.Time, bool) {
	if b.Delay == 0 || event.Sub(b.Last) > 2*Max {
		return time.Time{}, false
	}
	until := event.Add(b.Delay)
	return until, now.Before(until)
}
