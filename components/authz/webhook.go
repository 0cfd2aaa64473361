package authz

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/benbjohnson/clock"
	authorizationv1 "k8s.io/api/authorization/v1"
	authorizationv1beta1 "k8s.io/api/authorization/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/cache"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/klog/v2"

	"orch.io/orch/components/authn"
)

const (
	// cacheSize bounds the cached answers of one webhook, as Kubernetes' webhook authorizer does.
	cacheSize = 8192
	// maxControlledAttrCacheSize is the size of the requester-controlled attributes from which a
	// request is not cached, so that huge names cannot fill the cache (Kubernetes' limit).
	maxControlledAttrCacheSize = 10000
	// maxAnswerBytes bounds how much of an answer is read.
	maxAnswerBytes = 1 << 20
)

// SubjectAccessReviewGroupVersion is where orch-apiserver serves SubjectAccessReviews: Kubernetes'
// authorization.k8s.io/v1, renamed.
var SubjectAccessReviewGroupVersion = schema.GroupVersion{Group: "authorization.orch.io", Version: "v1"}

// TypeWebhook is the authorizer type of webhooks in metrics.
const TypeWebhook = "Webhook"

// MatchConditions decide from a request's v1 SubjectAccessReview spec whether a webhook is asked.
type MatchConditions interface {
	// Match reports whether a condition excluded the request and the errors of the conditions
	// that could not be evaluated (set, for metrics, even when another one excluded the request).
	Match(ctx context.Context, spec *authorizationv1.SubjectAccessReviewSpec) (excluded bool, err error)
}

// WebhookOptions configure a SubjectAccessReview webhook authorizer.
type WebhookOptions struct {
	// Name identifies the authorizer in metrics, logs and errors; may be empty.
	Name   string
	Client *http.Client
	// URL is where reviews are posted, exactly as given.
	URL   string
	Clock clock.Clock
	// Version of the SubjectAccessReview sent and expected: "v1" or "v1beta1".
	Version string
	// Group of the SubjectAccessReview sent and expected; empty is Kubernetes'
	// authorization.k8s.io, which webhooks speak.
	Group string
	// AuthorizedTTL and UnauthorizedTTL are how long allowed and other answers are cached on Clock;
	// zero caches none.
	AuthorizedTTL, UnauthorizedTTL time.Duration
	// Timeout bounds each call, on Clock; zero leaves the bound to the request's context.
	Timeout time.Duration
	// DecisionOnError is the decision when the call fails, times out or answers something
	// malformed, and when a match condition cannot be evaluated: DecisionNoOpinion or DecisionDeny.
	DecisionOnError Decision
	// MatchConditions, if set, decide whether the webhook is asked at all.
	MatchConditions MatchConditions
	Metrics         *Metrics
}

// NewWebhook returns an authorizer that asks a remote service, as Kubernetes' webhook authorizer
// does. Each request is posted to URL as an authorization.k8s.io SubjectAccessReview of Version
// carrying the user, groups, uid and extra, and resourceAttributes for a resource request or
// nonResourceAttributes (path, verb) otherwise.
//
// An answer with allowed set is Allow, with denied set Deny (both set is Deny with an error), any
// other NoOpinion, with the answer's reason. Answers are cached, keyed by the whole spec, for
// AuthorizedTTL when allowed and UnauthorizedTTL otherwise. A failed call is not cached and
// answers DecisionOnError with the error. When MatchConditions are set they are evaluated first:
// a condition false leaves the request to the next authorizer (NoOpinion) without a call; a
// condition that cannot be evaluated answers DecisionOnError with its error.
func NewWebhook(o WebhookOptions) (Authorizer, error) {
	switch {
	case o.Client == nil || o.Clock == nil:
		return nil, errors.New("authorization webhook: a client and a clock are required")
	case o.Version != authorizationv1.SchemeGroupVersion.Version && o.Version != authorizationv1beta1.SchemeGroupVersion.Version:
		return nil, fmt.Errorf("authorization webhook: unsupported SubjectAccessReview version %q, supported versions are %q, %q",
			o.Version, authorizationv1.SchemeGroupVersion.Version, authorizationv1beta1.SchemeGroupVersion.Version)
	case o.DecisionOnError != DecisionNoOpinion && o.DecisionOnError != DecisionDeny:
		return nil, fmt.Errorf("authorization webhook: the decision on error must be NoOpinion or Deny, not %v", o.DecisionOnError)
	}
	return &webhook{WebhookOptions: o, cache: cache.NewLRUExpireCacheWithClock(cacheSize, o.Clock)}, nil
}

// SubjectAccessReviewWebhook returns the authorizer of the agent's --authorization-mode=Webhook:
// SubjectAccessReviews of SubjectAccessReviewGroupVersion posted to url (orch-apiserver's
// /apis/authorization.orch.io/v1/subjectaccessreviews), whose failures answer NoOpinion, with the
// given cache times. See NewWebhook.
func SubjectAccessReviewWebhook(client *http.Client, url string, clk clock.Clock, authorizedTTL, unauthorizedTTL time.Duration) Authorizer {
	return &webhook{
		WebhookOptions: WebhookOptions{
			Client: client, URL: url, Clock: clk,
			Group: SubjectAccessReviewGroupVersion.Group, Version: SubjectAccessReviewGroupVersion.Version,
			AuthorizedTTL: authorizedTTL, UnauthorizedTTL: unauthorizedTTL, DecisionOnError: DecisionNoOpinion,
		},
		cache: cache.NewLRUExpireCacheWithClock(cacheSize, clk),
	}
}

type webhook struct {
	WebhookOptions
	cache *cache.LRUExpireCache
}

// reviewSpec returns the v1 SubjectAccessReview spec describing a.
func reviewSpec(a Attributes) authorizationv1.SubjectAccessReviewSpec {
	var spec authorizationv1.SubjectAccessReviewSpec
	if a.User != nil {
		spec.User = a.User.Name
		spec.UID = a.User.UID
		spec.Groups = a.User.Groups
		if len(a.User.Extra) > 0 {
			spec.Extra = make(map[string]authorizationv1.ExtraValue, len(a.User.Extra))
			for k, v := range a.User.Extra {
				spec.Extra[k] = v
			}
		}
	}
	if a.ResourceRequest {
		spec.ResourceAttributes = &authorizationv1.ResourceAttributes{
			Namespace:   a.Namespace,
			Verb:        a.Verb,
			Group:       a.APIGroup,
			Version:     a.APIVersion,
			Resource:    a.Resource,
			Subresource: a.Subresource,
			Name:        a.Name,
		}
	} else {
		spec.NonResourceAttributes = &authorizationv1.NonResourceAttributes{Path: a.Path, Verb: a.Verb}
	}
	return spec
}

func (w *webhook) Authorize(ctx context.Context, a Attributes) (Decision, string, error) {
	spec := reviewSpec(a)
	if w.MatchConditions != nil {
		start := w.Clock.Now()
		excluded, err := w.MatchConditions.Match(ctx, &spec)
		w.Metrics.matchEvaluated(TypeWebhook, w.Name, w.Clock.Since(start), excluded, err != nil)
		switch {
		case excluded:
			return DecisionNoOpinion, "", nil
		case err != nil:
			return w.DecisionOnError, "", fmt.Errorf("%s: %w", w.describe(), err)
		}
	}
	keyBytes, err := json.Marshal(spec)
	if err != nil {
		return w.DecisionOnError, "", err
	}
	key := string(keyBytes)
	var status authorizationv1.SubjectAccessReviewStatus
	if cached, ok := w.cache.Get(key); ok {
		status = cached.(authorizationv1.SubjectAccessReviewStatus)
	} else {
		start := w.Clock.Now()
		var result string
		status, result, err = w.review(ctx, spec)
		w.Metrics.webhookCall(w.Name, result, w.Clock.Since(start))
		if err != nil {
			klog.ErrorS(err, "Failed to make webhook authorizer request", "authorizer", w.Name)
			// A request whose client went away did not fail open: nobody is served.
			if w.DecisionOnError == DecisionNoOpinion && ctx.Err() == nil {
				w.Metrics.webhookFailedOpen(w.Name, result)
			}
			return w.DecisionOnError, "", err
		}
		ttl := w.UnauthorizedTTL
		if status.Allowed {
			ttl = w.AuthorizedTTL
		}
		if ttl > 0 && shouldCache(a) {
			// The cache keeps an entry until its expiry has passed; one nanosecond less makes an
			// answer expire when its TTL has elapsed, as orch's other caches do.
			w.cache.Add(key, status, ttl-time.Nanosecond)
		}
	}
	switch {
	case status.Allowed && status.Denied:
		return DecisionDeny, status.Reason, fmt.Errorf("%s: webhook subject access review returned both allow and deny response", w.describe())
	case status.Denied:
		return DecisionDeny, status.Reason, nil
	case status.Allowed:
		return DecisionAllow, status.Reason, nil
	}
	return DecisionNoOpinion, status.Reason, nil
}

// shouldCache refuses requests whose requester-controlled attributes are large enough to be an
// attempt to fill the cache.
func shouldCache(a Attributes) bool {
	size := len(a.Namespace) + len(a.Verb) + len(a.APIGroup) + len(a.APIVersion) + len(a.Resource) +
		len(a.Subresource) + len(a.Name) + len(a.Path)
	return size < maxControlledAttrCacheSize
}

// RulesFor is Kubernetes' answer: a webhook's rules are its own, and it is not asked for them.
func (w *webhook) RulesFor(context.Context, *authn.UserInfo, string) (Rules, error) {
	return Rules{Incomplete: true}, errWebhookRules
}

var errWebhookRules = errors.New("webhook authorizer does not support user rule resolution")

func (w *webhook) describe() string {
	if w.Name == "" {
		return "subject access review webhook"
	}
	return fmt.Sprintf("authorization webhook %q", w.Name)
}

// review posts spec and returns the answer's status and the call's result label.
func (w *webhook) review(ctx context.Context, spec authorizationv1.SubjectAccessReviewSpec) (authorizationv1.SubjectAccessReviewStatus, string, error) {
	// The timeout runs on the injected clock. It cancels the call rather than giving it a deadline,
	// because the transport would read a deadline on the system clock.
	callCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	if w.Timeout > 0 {
		timer := w.Clock.AfterFunc(w.Timeout, func() {
			cancel(fmt.Errorf("timed out after %s: %w", w.Timeout, context.DeadlineExceeded))
		})
		defer timer.Stop()
	}
	status, code, err := w.post(callCtx, spec)
	switch {
	case err == nil:
		return status, resultSuccess, nil
	case ctx.Err() != nil:
		// The caller's cancellation is what ended the call, whatever the transport made of it
		// (an aborted stream, or an answer cut short that no longer parses).
		return status, resultCanceled, fmt.Errorf("%s: %w: %w", w.describe(), ctx.Err(), err)
	case callCtx.Err() != nil:
		return status, resultTimeout, fmt.Errorf("%s: %w: %w", w.describe(), context.Cause(callCtx), err)
	case errors.Is(err, context.DeadlineExceeded) || utilnet.IsTimeout(err) || code == http.StatusGatewayTimeout:
		return status, resultTimeout, fmt.Errorf("%s: %w", w.describe(), err)
	}
	return status, resultError, fmt.Errorf("%s: %w", w.describe(), err)
}

// post makes one call and returns the answer's status and the HTTP status code (0 when none).
func (w *webhook) post(ctx context.Context, spec authorizationv1.SubjectAccessReviewSpec) (authorizationv1.SubjectAccessReviewStatus, int, error) {
	var none authorizationv1.SubjectAccessReviewStatus
	groupVersion := schema.GroupVersion{Group: w.Group, Version: w.Version}
	if groupVersion.Group == "" {
		groupVersion.Group = authorizationv1.GroupName
	}
	var review any = &authorizationv1.SubjectAccessReview{
		TypeMeta: metav1.TypeMeta{APIVersion: groupVersion.String(), Kind: "SubjectAccessReview"},
		Spec:     spec,
	}
	if w.Version == authorizationv1beta1.SchemeGroupVersion.Version {
		review = &authorizationv1beta1.SubjectAccessReview{
			TypeMeta: metav1.TypeMeta{APIVersion: groupVersion.String(), Kind: "SubjectAccessReview"},
			Spec:     v1beta1Spec(spec),
		}
	}
	body, err := json.Marshal(review)
	if err != nil {
		return none, 0, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.URL, bytes.NewReader(body))
	if err != nil {
		return none, 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err := w.Client.Do(req)
	if err != nil {
		return none, 0, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes))
	if err != nil {
		return none, resp.StatusCode, err
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		const maxShown = 256
		if len(data) > maxShown {
			data = data[:maxShown]
		}
		return none, resp.StatusCode, fmt.Errorf("%s answered %s: %s", w.URL, resp.Status, bytes.TrimSpace(data))
	}
	status, err := decodeStatus(data, groupVersion)
	if err != nil {
		return none, resp.StatusCode, fmt.Errorf("malformed answer from %s: %w", w.URL, err)
	}
	return status, resp.StatusCode, nil
}

// decodeStatus reads the status of an answer. Like Kubernetes' client, it takes an answer without
// apiVersion and kind as the type asked for, and refuses any other type.
func decodeStatus(data []byte, groupVersion schema.GroupVersion) (authorizationv1.SubjectAccessReviewStatus, error) {
	apiVersion := groupVersion.String()
	var typeMeta metav1.TypeMeta
	if err := json.Unmarshal(data, &typeMeta); err != nil {
		return authorizationv1.SubjectAccessReviewStatus{}, err
	}
	if (typeMeta.APIVersion != "" && typeMeta.APIVersion != apiVersion) || (typeMeta.Kind != "" && typeMeta.Kind != "SubjectAccessReview") {
		return authorizationv1.SubjectAccessReviewStatus{}, fmt.Errorf("got %s %s, want %s SubjectAccessReview",
			strconv.Quote(typeMeta.APIVersion), strconv.Quote(typeMeta.Kind), apiVersion)
	}
	if groupVersion.Version == authorizationv1beta1.SchemeGroupVersion.Version {
		var answer authorizationv1beta1.SubjectAccessReview
		if err := json.Unmarshal(data, &answer); err != nil {
			return authorizationv1.SubjectAccessReviewStatus{}, err
		}
		s := answer.Status
		return authorizationv1.SubjectAccessReviewStatus{Allowed: s.Allowed, Denied: s.Denied, Reason: s.Reason, EvaluationError: s.EvaluationError}, nil
	}
	var answer authorizationv1.SubjectAccessReview
	if err := json.Unmarshal(data, &answer); err != nil {
		return authorizationv1.SubjectAccessReviewStatus{}, err
	}
	return answer.Status, nil
}

func v1beta1Spec(in authorizationv1.SubjectAccessReviewSpec) authorizationv1beta1.SubjectAccessReviewSpec {
	out := authorizationv1beta1.SubjectAccessReviewSpec{User: in.User, Groups: in.Groups, UID: in.UID}
	if in.Extra != nil {
		out.Extra = make(map[string]authorizationv1beta1.ExtraValue, len(in.Extra))
		for k, v := range in.Extra {
			out.Extra[k] = authorizationv1beta1.ExtraValue(v)
		}
	}
	if r := in.ResourceAttributes; r != nil {
		out.ResourceAttributes = &authorizationv1beta1.ResourceAttributes{
			Namespace: r.Namespace, Verb: r.Verb, Group: r.Group, Version: r.Version,
			Resource: r.Resource, Subresource: r.Subresource, Name: r.Name,
		}
	}
	if r := in.NonResourceAttributes; r != nil {
		out.NonResourceAttributes = &authorizationv1beta1.NonResourceAttributes{Path: r.Path, Verb: r.Verb}
	}
	return out
}
