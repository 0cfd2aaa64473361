package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/benbjohnson/clock"

	"orch.io/orch/components/apiserver/storage"
)

// HealthCheck is a named check of /healthz and /readyz.
type HealthCheck struct {
	Name  string
	Check func(context.Context) error
}

// storageProbeTimeout bounds the storage check's probe (Kubernetes' --etcd-healthcheck-timeout and
// --etcd-readycheck-timeout, 2s).
const storageProbeTimeout = 2 * time.Second

// storageCheck is the health checks' etcd check: storage answers its revision within
// storageProbeTimeout. As Kubernetes' etcd check, it asks storage at most once every half of that
// timeout and answers the checks in between with the result of the latest probe sent: a probe
// every 20 ms (a load balancer, a kubelet, a monitor) costs storage one read a second. Unlike
// Kubernetes', no check waits on storage, not even the one that sends the probe: under load a
// read of etcd can take a second, and a /readyz answer would take it too. So a check answers at
// once with what is known, which lags storage by at most the probe's period and timeout (as the
// checks between probes do in Kubernetes).
func storageCheck(clk clock.Clock, s storage.Interface) func(context.Context) error {
	p := &storageProbe{clk: clk, every: storageProbeTimeout / 2, probe: func(ctx context.Context) error {
		ctx, cancel := clk.WithTimeout(ctx, storageProbeTimeout)
		defer cancel()
		_, err := s.Revision(ctx)
		return err
	}}
	return p.check
}

// storageProbe sends probe at most once every every, in the background; a check answers the
// latest result.
type storageProbe struct {
	clk   clock.Clock
	every time.Duration
	probe func(context.Context) error

	mu     sync.Mutex
	next   time.Time // when the next probe may be sent
	sent   time.Time // when the latest probe whose result is known was sent
	latest error     // that probe's result; nil before the first (the server serves once storage answered)
}

func (p *storageProbe) check(ctx context.Context) error {
	now := p.clk.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	if !now.Before(p.next) {
		p.next = now.Add(p.every)
		// The request's values (its trace) without its end: the probe outlives the check.
		go p.send(context.WithoutCancel(ctx), now)
	}
	return p.latest
}

func (p *storageProbe) send(ctx context.Context, now time.Time) {
	err := p.probe(ctx)
	p.mu.Lock()
	defer p.mu.Unlock()
	// A slow probe finishing after a later one does not replace the later one's result: the
	// result kept is of the latest probe sent, as Kubernetes keeps it.
	if !now.Before(p.sent) {
		p.sent, p.latest = now, err
	}
}

// shutdownCheck fails once terminating closes, as Kubernetes' readyz "shutdown" check does.
func shutdownCheck(terminating <-chan struct{}) func(context.Context) error {
	return func(context.Context) error {
		select {
		case <-terminating:
			return errors.New("process is shutting down")
		default:
			return nil
		}
	}
}

// healthHandler answers like Kubernetes' /healthz: "ok", or with ?verbose one line per check.
// extra, when set, adds the checks it gives at the time of the request.
func healthHandler(name string, checks []HealthCheck, extra func() []HealthCheck) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var report strings.Builder
		failed := false
		all := checks
		if extra != nil {
			all = append(slices.Clip(checks), extra()...)
		}
		for _, c := range all {
			if err := c.Check(r.Context()); err != nil {
				failed = true
				fmt.Fprintf(&report, "[-]%s failed: %v\n", c.Name, err)
			} else {
				fmt.Fprintf(&report, "[+]%s ok\n", c.Name)
			}
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		if failed {
			w.WriteHeader(http.StatusInternalServerError)
			fmt.Fprintf(w, "%s%s check failed\n", report.String(), name)
			return
		}
		if _, verbose := r.URL.Query()["verbose"]; verbose {
			fmt.Fprintf(w, "%s%s check passed\n", report.String(), name)
			return
		}
		fmt.Fprint(w, "ok")
	})
}
