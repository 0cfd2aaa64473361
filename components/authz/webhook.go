package authz

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/benbjohnson/clock"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// sweepAt is the cache size at which expired answers are dropped before a new one is added.
const sweepAt = 1024

// SubjectAccessReviewGroupVersion is where orch-apiserver serves SubjectAccessReviews: Kubernetes'
// authorization.k8s.io/v1, renamed.
var SubjectAccessReviewGroupVersion = schema.GroupVersion{Group: "authorization.orch.io", Version: "v1"}

// SubjectAccessReviewWebhook returns the authorizer of --authorization-mode=Webhook: each request
// is sent to url (the API server's /apis/authorization.orch.io/v1/subjectaccessreviews) as a
// SubjectAccessReview of SubjectAccessReviewGroupVersion, in Kubernetes' JSON shape. The spec
// carries the user, groups, uid and extra, and resourceAttributes for a resource request or
// nonResourceAttributes (path, verb) otherwise.
//
// An allowed answer is Allow, an answer with denied set is Deny, any other NoOpinion; the reason
// is the answer's. Allowed answers are cached for authorizedTTL and the others for
// unauthorizedTTL on clk, keyed by the whole spec, as Kubernetes' webhook authorizer does. A failed
// call is not cached and answers NoOpinion with the error.
func SubjectAccessReviewWebhook(client *http.Client, url string, clk clock.Clock, authorizedTTL, unauthorizedTTL time.Duration) Authorizer {
	return &sarWebhook{
		client: client, url: url, clk: clk,
		authorizedTTL: authorizedTTL, unauthorizedTTL: unauthorizedTTL,
		cache: map[string]sarEntry{},
	}
}

type sarWebhook struct {
	client                         *http.Client
	url                            string
	clk                            clock.Clock
	authorizedTTL, unauthorizedTTL time.Duration

	mu    sync.Mutex
	cache map[string]sarEntry
}

type sarEntry struct {
	status  authorizationv1.SubjectAccessReviewStatus
	expires time.Time
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

func (w *sarWebhook) Authorize(ctx context.Context, a Attributes) (Decision, string, error) {
	spec := reviewSpec(a)
	keyBytes, err := json.Marshal(spec)
	if err != nil {
		return DecisionNoOpinion, "", err
	}
	key := string(keyBytes)
	status, cached := w.lookup(key)
	if !cached {
		status, err = w.review(ctx, spec)
		if err != nil {
			return DecisionNoOpinion, "", err
		}
		w.store(key, status)
	}
	switch {
	case status.Allowed:
		return DecisionAllow, status.Reason, nil
	case status.Denied:
		return DecisionDeny, status.Reason, nil
	}
	return DecisionNoOpinion, status.Reason, nil
}

func (w *sarWebhook) lookup(key string) (authorizationv1.SubjectAccessReviewStatus, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	e, ok := w.cache[key]
	if !ok || !w.clk.Now().Before(e.expires) {
		return authorizationv1.SubjectAccessReviewStatus{}, false
	}
	return e.status, true
}

func (w *sarWebhook) store(key string, status authorizationv1.SubjectAccessReviewStatus) {
	ttl := w.unauthorizedTTL
	if status.Allowed {
		ttl = w.authorizedTTL
	}
	if ttl <= 0 {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	now := w.clk.Now()
	if len(w.cache) >= sweepAt {
		for k, old := range w.cache {
			if !now.Before(old.expires) {
				delete(w.cache, k)
			}
		}
	}
	w.cache[key] = sarEntry{status: status, expires: now.Add(ttl)}
}

func (w *sarWebhook) review(ctx context.Context, spec authorizationv1.SubjectAccessReviewSpec) (authorizationv1.SubjectAccessReviewStatus, error) {
	body, err := json.Marshal(authorizationv1.SubjectAccessReview{
		TypeMeta: metav1.TypeMeta{APIVersion: SubjectAccessReviewGroupVersion.String(), Kind: "SubjectAccessReview"},
		Spec:     spec,
	})
	if err != nil {
		return authorizationv1.SubjectAccessReviewStatus{}, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.url, bytes.NewReader(body))
	if err != nil {
		return authorizationv1.SubjectAccessReviewStatus{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err := w.client.Do(req)
	if err != nil {
		return authorizationv1.SubjectAccessReviewStatus{}, fmt.Errorf("subject access review webhook: %w", err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return authorizationv1.SubjectAccessReviewStatus{}, fmt.Errorf("subject access review webhook: %w", err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		const maxShown = 256
		if len(data) > maxShown {
			data = data[:maxShown]
		}
		return authorizationv1.SubjectAccessReviewStatus{}, fmt.Errorf("subject access review webhook: %s answered %s: %s", w.url, resp.Status, bytes.TrimSpace(data))
	}
	var answer authorizationv1.SubjectAccessReview
	if err := json.Unmarshal(data, &answer); err != nil {
		return authorizationv1.SubjectAccessReviewStatus{}, fmt.Errorf("subject access review webhook: decoding the answer of %s: %w", w.url, err)
	}
	return answer.Status, nil
}
