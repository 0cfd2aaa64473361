package reload

import (
	"bytes"
	"context"
	"errors"
	"os"
	"reflect"
	"sync"
	"sync/atomic"
	"time"

	"github.com/benbjohnson/clock"

	"orch.io/orch/components/periodic"
)

// ErrSameMeaning is Load's answer for content that differs from the content read before but
// configures what is in force: it is no reload, and the content is not loaded again until it
// changes.
var ErrSameMeaning = errors.New("reload: the content configures what is in force")

// Retry marks a failure that may clear while the file stays the same (an issuer that does not
// answer yet, a KMS plugin not healthy yet): the content is tried again at the next read. Any
// other failure is final for its content, which is not tried again until it changes.
func Retry(err error) error { return retryable{err} }

type retryable struct{ error }

func (e retryable) Unwrap() error { return e.error }

// Stage is where a read of the file ended.
type Stage int

const (
	// Read: the file could not be read. It is read again at the next tick: it may come back.
	Read Stage = iota
	// Load: the content is not valid, or what it configures could not be built.
	Load
	// Ready: what the content configures did not become ready to serve.
	Ready
	// Reloaded: what the content configures is in force.
	Reloaded
)

// Outcome is what a read of changed content came to.
type Outcome[T any] struct {
	Stage Stage
	// Err is why the reload failed; nil when Reloaded.
	Err error
	// Value is what the file configures now, when Reloaded.
	Value *T
}

// Options say how to follow one file and what its content configures.
type Options[T any] struct {
	File     string
	Interval time.Duration
	Clock    clock.Clock
	// Load turns changed content into what it configures, checked against current, the value in
	// force. Besides a value it answers ErrSameMeaning, an error marked with Retry, or another error.
	Load func(ctx context.Context, data []byte, current *T) (*T, error)
	// Ready, if set, waits until a loaded value can serve; a failure is tried again at the next read.
	Ready func(ctx context.Context, next *T) error
	// Stop, if set, ends a value's background work: at once for a loaded value that is not put in
	// force, and Grace (set with Stop) after the swap for the value it replaced, once no request
	// can still hold it.
	Stop  func(*T)
	Grace func(old *T) time.Duration
	// Log logs each outcome, in the kind's own words.
	Log func(Outcome[T])
	// Metrics, if set, count the outcomes.
	Metrics *Metrics
}

// Reloader holds what a configuration file configures and replaces it when the file changes: a
// changed file that loads (and becomes ready) is put in force at once, so each request sees the
// old value or the new one; any other is logged and counted, and the value in force stays.
type Reloader[T any] struct {
	opts    Options[T]
	current atomic.Pointer[T]

	mu sync.Mutex // one read at a time
	// tracked is the content last put in force, or refused for good; known says there is one.
	tracked []byte
	known   bool
}

// New holds initial, which was built from the file. applied is the content it was built from (see
// Applied), or nil when that is not known: then the first read loads whatever the file holds.
func New[T any](opts Options[T], initial *T, applied []byte) *Reloader[T] {
	r := &Reloader[T]{opts: opts, tracked: applied, known: applied != nil}
	r.current.Store(initial)
	if applied != nil {
		opts.Metrics.applied(applied)
	}
	return r
}

// Applied reads file again and answers its content if parse finds in it what was loaded from it,
// nil otherwise: a change made between the load and the reloader's start is then put in force at
// the first read, not taken for what is in force.
func Applied[C any](file string, loaded C, parse func(data []byte) (C, error)) []byte {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil
	}
	if again, err := parse(data); err != nil || !reflect.DeepEqual(again, loaded) {
		return nil
	}
	return data
}

// Current is the value in force.
func (r *Reloader[T]) Current() *T { return r.current.Load() }

// Run reads the file every interval on the clock until ctx ends; the first read is one interval
// after the start.
func (r *Reloader[T]) Run(ctx context.Context) { r.run(ctx, nil) }

// Start runs the reads in the background and returns once they watch the clock, so a clock moved
// from then on is not missed.
func (r *Reloader[T]) Start(ctx context.Context) {
	watching := make(chan struct{})
	go r.run(ctx, watching)
	<-watching
}

func (r *Reloader[T]) run(ctx context.Context, watching chan struct{}) {
	// The immediate call reads nothing: it comes once the ticker exists, which Start waits for.
	first := true
	_ = periodic.Every(ctx, r.opts.Clock, r.opts.Interval, true, func(ctx context.Context) bool {
		if first {
			first = false
			if watching != nil {
				close(watching)
			}
			return false
		}
		_, _ = r.Check(ctx)
		return false
	})
}

// Check reads the file once and, if its content changed, reloads it. It answers whether a new
// value was put in force, and why not when the reload failed (the failure is logged and counted).
func (r *Reloader[T]) Check(ctx context.Context) (bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	data, err := os.ReadFile(r.opts.File)
	if err != nil {
		return false, r.failed(Read, err)
	}
	if r.known && bytes.Equal(data, r.tracked) {
		return false, nil
	}
	old := r.current.Load()
	next, err := r.opts.Load(ctx, data, old)
	if errors.Is(err, ErrSameMeaning) {
		r.track(data)
		return false, nil
	}
	if err != nil {
		if !errors.As(err, new(retryable)) {
			r.track(data)
		}
		return false, r.failed(Load, err)
	}
	if r.opts.Ready != nil {
		if err := r.opts.Ready(ctx, next); err != nil {
			r.stop(next)
			return false, r.failed(Ready, err)
		}
	}
	r.current.Store(next)
	if r.opts.Stop != nil {
		r.opts.Clock.AfterFunc(r.opts.Grace(old), func() { r.opts.Stop(old) })
	}
	r.track(data)
	r.opts.Log(Outcome[T]{Stage: Reloaded, Value: next})
	r.opts.Metrics.Record(Success, r.opts.Clock.Now())
	r.opts.Metrics.applied(data)
	return true, nil
}

func (r *Reloader[T]) track(data []byte) {
	r.tracked, r.known = data, true
}

func (r *Reloader[T]) stop(v *T) {
	if r.opts.Stop != nil {
		r.opts.Stop(v)
	}
}

func (r *Reloader[T]) failed(stage Stage, err error) error {
	r.opts.Log(Outcome[T]{Stage: stage, Err: err})
	r.opts.Metrics.Record(Failure, r.opts.Clock.Now())
	return err
}
