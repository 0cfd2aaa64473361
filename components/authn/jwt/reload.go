package jwt

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"reflect"
	"sync/atomic"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/klog/v2"

	"orch.io/orch/components/apis/apiserver/config"
	apiv1 "orch.io/orch/components/apis/apiserver/v1"
	"orch.io/orch/components/authn"
)

const (
	// ReloadInterval is how often the configuration file is read for changes. Kubernetes watches
	// the file and also reads it every minute; orch, without file notifications, reads it more
	// often so a change lands about as fast.
	ReloadInterval = 10 * time.Second
	// updateTimeout bounds the wait for a new file's authenticators to reach their issuers
	// (Kubernetes' UpdateAuthenticationConfigTimeout); past it the old ones stay and the file is
	// tried again at the next read.
	updateTimeout = time.Minute
	// retireDelay is how long replaced authenticators keep running, for the requests that are
	// still using them.
	retireDelay = time.Minute
)

// Reloader holds the JWT authenticators of an --authentication-config file and replaces them,
// as Kubernetes' automatic reload does, when the file changes: a valid new file whose issuers can
// all be reached replaces them atomically, without dropping a request; an invalid one is logged,
// counted and ignored until the file changes again. The anonymous section may not change.
type Reloader struct {
	file      string
	clock     clock.Clock
	anonymous *apiv1.AnonymousAuthConfig
	metrics   *reloadMetrics
	current   atomic.Pointer[Set]
	// tracked is the content last applied or refused for good; nil when it is not known.
	tracked []byte
}

// NewReloader starts the authenticators of auth, which was loaded from auth.File, and reads the
// file every ReloadInterval on clk until ctx ends. Its metrics go to reg, labelled with the hash
// of apiServerID as Kubernetes labels them.
func NewReloader(ctx context.Context, auth *config.Authentication, clk clock.Clock, reg prometheus.Registerer, apiServerID string) (*Reloader, error) {
	metrics, err := newReloadMetrics(reg, apiServerID)
	if err != nil {
		return nil, err
	}
	set, err := NewSet(ctx, auth, clk)
	if err != nil {
		return nil, err
	}
	r := &Reloader{file: auth.File, clock: clk, anonymous: auth.Config.Anonymous, metrics: metrics}
	r.current.Store(set)
	// The file is read again rather than kept by the loader; only content that still says what was
	// loaded counts as applied, so a change made meanwhile is not missed.
	if data, err := os.ReadFile(auth.File); err == nil {
		if again, err := config.ParseAuthentication(auth.File, data); err == nil && reflect.DeepEqual(again.Config, auth.Config) {
			r.tracked = data
			metrics.configInfo(data)
		}
	}
	ticker := clk.Ticker(ReloadInterval)
	go func() {
		defer ticker.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-ticker.C:
				r.reload(ctx)
			}
		}
	}()
	return r, nil
}

// AuthenticateToken asks the current authenticators.
func (r *Reloader) AuthenticateToken(ctx context.Context, token string) (*authn.UserInfo, bool, error) {
	return r.current.Load().AuthenticateToken(ctx, token)
}

// Current is the set of authenticators in use.
func (r *Reloader) Current() *Set {
	return r.current.Load()
}

func (r *Reloader) reload(ctx context.Context) {
	data, err := os.ReadFile(r.file)
	if err != nil {
		// The file may come back: it is read again at the next tick.
		klog.ErrorS(err, "failed to read authentication config file")
		r.metrics.record(r.clock, "failure")
		return
	}
	if r.tracked != nil && bytes.Equal(data, r.tracked) {
		return
	}
	set, err := r.load(ctx, data)
	if err != nil {
		// This content is not valid and never will be: it is not tried again until it changes.
		klog.ErrorS(err, "failed to load authentication config")
		r.metrics.record(r.clock, "failure")
		r.tracked = data
		return
	}
	wait, cancel := r.clock.WithTimeout(ctx, updateTimeout)
	err = set.WaitInitialized(wait)
	cancel()
	if err != nil {
		// The issuers may become reachable: the content is tried again at the next tick.
		set.Close()
		klog.ErrorS(errors.Join(err, set.HealthCheck()), "failed to update authentication config")
		r.metrics.record(r.clock, "failure")
		return
	}
	old := r.current.Swap(set)
	r.clock.AfterFunc(retireDelay, old.Close)
	r.tracked = data
	klog.InfoS("reloaded authentication config", "file", r.file, "jwtAuthenticators", set.Len())
	r.metrics.record(r.clock, "success")
	r.metrics.configInfo(data)
}

// load validates data as the file's new content and starts its authenticators.
func (r *Reloader) load(ctx context.Context, data []byte) (*Set, error) {
	auth, err := config.ParseAuthentication(r.file, data)
	if err != nil {
		return nil, err
	}
	if !reflect.DeepEqual(auth.Config.Anonymous, r.anonymous) {
		return nil, fmt.Errorf("%s: %w", r.file, field.Forbidden(field.NewPath("anonymous"), "changed from initial configuration file"))
	}
	if err := CheckSupported(auth); err != nil {
		return nil, err
	}
	return NewSet(ctx, auth, r.clock)
}

// reloadMetrics carry Kubernetes' names for the automatic reload of the authentication
// configuration.
type reloadMetrics struct {
	reloads    *prometheus.CounterVec
	lastReload *prometheus.GaugeVec
	lastConfig *prometheus.GaugeVec
	idHash     string
}

func newReloadMetrics(reg prometheus.Registerer, apiServerID string) (*reloadMetrics, error) {
	const ns, sub = "apiserver", "authentication_config_controller"
	m := &reloadMetrics{
		reloads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: ns, Subsystem: sub, Name: "automatic_reloads_total",
			Help: "Total number of automatic reloads of authentication configuration split by status and apiserver identity.",
		}, []string{"status", "apiserver_id_hash"}),
		lastReload: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: ns, Subsystem: sub, Name: "automatic_reload_last_timestamp_seconds",
			Help: "Timestamp of the last automatic reload of authentication configuration split by status and apiserver identity.",
		}, []string{"status", "apiserver_id_hash"}),
		lastConfig: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: ns, Subsystem: sub, Name: "last_config_info",
			Help: "Information about the last applied authentication configuration with hash as label, split by apiserver identity.",
		}, []string{"apiserver_id_hash", "hash"}),
		idHash: hash([]byte(apiServerID)),
	}
	for _, c := range []prometheus.Collector{m.reloads, m.lastReload, m.lastConfig} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("registering the authentication reload metrics: %w", err)
		}
	}
	return m, nil
}

func (m *reloadMetrics) record(clk clock.Clock, status string) {
	m.reloads.WithLabelValues(status, m.idHash).Inc()
	m.lastReload.WithLabelValues(status, m.idHash).Set(float64(clk.Now().UnixNano()) / 1e9)
}

func (m *reloadMetrics) configInfo(data []byte) {
	m.lastConfig.Reset()
	m.lastConfig.WithLabelValues(m.idHash, hash(data)).Set(1)
}

// hash is Kubernetes' label form of a hash: "sha256:<hex>", empty for empty data.
func hash(data []byte) string {
	if len(data) == 0 {
		return ""
	}
	return fmt.Sprintf("sha256:%x", sha256.Sum256(data))
}
