package sources

import (
	"context"
	"errors"
	"time"
)

// Notifier tells when a source may have changed, so Run reads it at once instead of at its next
// poll; the poll stays as the fallback, as in Kubernetes, whose kubelet watches the manifest
// directory with inotify and re-reads it every --file-check-frequency.
type Notifier interface {
	// Notify calls changed with the name of each entry that may have changed, until ctx ends or the
	// watch fails. It calls changed("") once the watch is in place, so what changed while no watch
	// was set is read then. It returns ErrPathMissing when the watched path does not exist.
	Notify(ctx context.Context, changed func(name string)) error
}

// ErrPathMissing is a Notifier's answer for a path that does not exist yet: Run tries again after
// watchRetry without backing off, as the kubelet does.
var ErrPathMissing = errors.New("path does not exist")

// Kubernetes' retryPeriod and maxRetryPeriod of the manifest watch.
const (
	watchRetry    = time.Second
	maxWatchRetry = 20 * time.Second
)

// watched is a Source that can be watched: the file source with a Notifier.
type watched interface {
	notifier() Notifier
}

func (f *FileSource) notifier() Notifier { return f.Notifier }

// watch runs p's Notifier until ctx ends, making p due on each change and waking Run; a failed
// watch is restarted after a back-off of one second doubling to 20, the kubelet's.
func (s *Sources) watch(ctx context.Context, p *poller, n Notifier, wake chan<- struct{}) {
	wakeUp := func(string) {
		s.mu.Lock()
		p.woken = true
		s.mu.Unlock()
		select {
		case wake <- struct{}{}:
		default:
		}
	}
	backoff := watchRetry
	for ctx.Err() == nil {
		started := s.clk.Now()
		err := n.Notify(ctx, wakeUp)
		if ctx.Err() != nil {
			return
		}
		var wait time.Duration
		wait, backoff = retryWatch(err, backoff, s.clk.Since(started))
		if !errors.Is(err, ErrPathMissing) {
			s.logger.Error(err, "Unable to watch the config path; polling meanwhile", "source", p.Source.Name(), "retryIn", wait)
		}
		t := s.clk.Timer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// retryWatch is how long to wait before watching again after a watch that ran for ran ended with
// err, and the back-off after that: a missing path is retried every second, and other failures
// after a back-off doubling from one second to 20, which restarts once a watch ran longer than that.
func retryWatch(err error, backoff, ran time.Duration) (wait, next time.Duration) {
	if errors.Is(err, ErrPathMissing) {
		return watchRetry, watchRetry
	}
	if ran > maxWatchRetry {
		backoff = watchRetry
	}
	return backoff, min(2*backoff, maxWatchRetry)
}
