package eventratelimit

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/benbjohnson/clock"
	"golang.org/x/time/rate"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/lru"

	eventsv1 "orch.io/orch/components/apis/events/v1"
	"orch.io/orch/components/apiserver/admission"
)

// PluginName is the name the plugin is enabled and configured by.
const PluginName = "EventRateLimit"

var eventKind = schema.GroupKind{Group: eventsv1.GroupName, Kind: "Event"}

// Plugin enforces every configured limit on creates and updates of events.
type Plugin struct {
	enforcers []*limitEnforcer
}

var _ admission.ValidationInterface = (*Plugin)(nil)

// New builds the plugin from its configuration (nil when the admission configuration gives
// none), with buckets that fill on clk.
func New(config []byte, clk clock.Clock) (*Plugin, error) {
	cfg, err := LoadConfiguration(config)
	if err != nil {
		return nil, err
	}
	if errs := Validate(cfg); len(errs) > 0 {
		return nil, errs.ToAggregate()
	}
	p := &Plugin{}
	for _, l := range cfg.Limits {
		p.enforcers = append(p.enforcers, newLimitEnforcer(l, clk))
	}
	return p, nil
}

// Handles is true for creates and updates.
func (p *Plugin) Handles(op admission.Operation) bool {
	return op == admission.Create || op == admission.Update
}

// retryAfterSeconds is the wait a refusal asks for: qps is a positive whole number, so every
// bucket holds a token again within a second.
const retryAfterSeconds = 1

// Validate takes a token from each limit's bucket for the event. As in Kubernetes every limit is
// charged even when an earlier one refuses, and the last refusal is the answer.
func (p *Plugin) Validate(_ context.Context, a admission.Attributes) error {
	if a.Kind != eventKind {
		return nil
	}
	var rejection error
	for _, e := range p.enforcers {
		if err := e.accept(a); err != nil {
			rejection = err
		}
	}
	return rejection
}

// limitEnforcer enforces one limit: a bucket per key, the keys held in an LRU.
type limitEnforcer struct {
	limitType LimitType
	qps       float64
	burst     int
	clock     clock.Clock
	keyFunc   func(admission.Attributes) string

	mu     sync.Mutex
	single *rate.Limiter // the Server limit's one bucket
	cache  *lru.Cache
}

func newLimitEnforcer(l Limit, clk clock.Clock) *limitEnforcer {
	e := &limitEnforcer{limitType: l.Type, qps: float64(l.QPS), burst: int(l.Burst), clock: clk}
	switch l.Type {
	case ServerLimitType:
		e.keyFunc = func(admission.Attributes) string { return "" }
		e.single = e.newBucket()
		return e
	case NamespaceLimitType:
		e.keyFunc = func(a admission.Attributes) string { return a.Namespace }
	case UserLimitType:
		e.keyFunc = userKey
	case SourceAndObjectLimitType:
		e.keyFunc = sourceAndObjectKey
	}
	size := int(l.CacheSize)
	if size == 0 {
		size = defaultCacheSize
	}
	e.cache = lru.New(size)
	return e
}

// newBucket is a full bucket of burst tokens refilled at qps, as Kubernetes' token bucket.
func (e *limitEnforcer) newBucket() *rate.Limiter {
	return rate.NewLimiter(rate.Limit(e.qps), e.burst)
}

// bucket returns key's bucket, making a full one when the key is new or was evicted.
func (e *limitEnforcer) bucket(key string) *rate.Limiter {
	if e.single != nil {
		return e.single
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if b, ok := e.cache.Get(key); ok {
		return b.(*rate.Limiter)
	}
	b := e.newBucket()
	e.cache.Add(key, b)
	return b
}

// accept takes a token for a, or returns Kubernetes' refusal. Kubernetes' refusal carries no
// Retry-After; orch's does, so clients back off without guessing.
func (e *limitEnforcer) accept(a admission.Attributes) error {
	key := e.keyFunc(a)
	if e.bucket(key).AllowN(e.clock.Now(), 1) {
		return nil
	}
	err := apierrors.NewTooManyRequestsError(fmt.Sprintf("limit reached on type %v for key %v", e.limitType, key))
	err.ErrStatus.Details = &metav1.StatusDetails{RetryAfterSeconds: retryAfterSeconds}
	return err
}

func userKey(a admission.Attributes) string {
	if a.User == nil {
		return ""
	}
	return a.User.Name
}

// sourceAndObjectKey is Kubernetes' key: the event's source and involved object, concatenated.
// Kubernetes reads them from a core Event, whose source and involvedObject are an
// events.orch.io/v1 Event's deprecatedSource (which validation keeps empty) and regarding.
func sourceAndObjectKey(a admission.Attributes) string {
	e, ok := a.Object.(*eventsv1.Event)
	if !ok {
		return ""
	}
	return strings.Join([]string{
		e.DeprecatedSource.Component,
		e.DeprecatedSource.Host,
		e.Regarding.Kind,
		e.Regarding.Namespace,
		e.Regarding.Name,
		string(e.Regarding.UID),
		e.Regarding.APIVersion,
	}, "")
}
