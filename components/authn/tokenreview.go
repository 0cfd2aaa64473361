package authn

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/benbjohnson/clock"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// sweepAt is the cache size at which expired entries are dropped before a new one is added, so
// that a stream of distinct tokens cannot grow the cache beyond what one TTL's worth holds.
const sweepAt = 1024

// TokenReviewGroupVersion is where orch-apiserver serves TokenReviews: Kubernetes'
// authentication.k8s.io/v1, renamed.
var TokenReviewGroupVersion = schema.GroupVersion{Group: "authentication.orch.io", Version: "v1"}

// TokenReviewWebhook returns the authenticator of --authentication-token-webhook: the bearer
// token of a request is sent to url (the API server's
// /apis/authentication.orch.io/v1/tokenreviews) as a TokenReview of TokenReviewGroupVersion, in
// Kubernetes' JSON shape.
//
// Answers (authenticated or not) are cached by a hash of the token for cacheTTL on clk, as the
// kubelet does; a failed call (transport error, non-2xx status, undecodable body) is not cached
// and is answered as an error. A request without a bearer token gets no opinion; a token the
// review does not authenticate gets ErrInvalidToken, with the review's error text when it gives
// one. On success the Authorization header is removed from the request, as Kubernetes does.
func TokenReviewWebhook(client *http.Client, url string, clk clock.Clock, cacheTTL time.Duration) Authenticator {
	return &tokenReviewWebhook{client: client, url: url, clk: clk, ttl: cacheTTL, cache: map[[sha256.Size]byte]reviewEntry{}}
}

type tokenReviewWebhook struct {
	client *http.Client
	url    string
	clk    clock.Clock
	ttl    time.Duration

	mu    sync.Mutex
	cache map[[sha256.Size]byte]reviewEntry
}

type reviewEntry struct {
	user    *UserInfo // nil when the token was not authenticated
	err     error
	expires time.Time
}

func (w *tokenReviewWebhook) AuthenticateRequest(r *http.Request) (*UserInfo, bool, error) {
	token, ok := BearerToken(r)
	if !ok {
		return nil, false, nil
	}
	key := sha256.Sum256([]byte(token))
	entry, cached := w.lookup(key)
	if !cached {
		user, err := w.review(r.Context(), token)
		if err != nil && !errors.Is(err, ErrInvalidToken) {
			return nil, false, err
		}
		entry = reviewEntry{user: user, err: err}
		w.store(key, entry)
	}
	if entry.user == nil {
		return nil, false, entry.err
	}
	r.Header.Del("Authorization")
	return entry.user.DeepCopy(), true, nil
}

func (w *tokenReviewWebhook) lookup(key [sha256.Size]byte) (reviewEntry, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	e, ok := w.cache[key]
	if !ok || !w.clk.Now().Before(e.expires) {
		return reviewEntry{}, false
	}
	return e, true
}

func (w *tokenReviewWebhook) store(key [sha256.Size]byte, e reviewEntry) {
	if w.ttl <= 0 {
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
	e.expires = now.Add(w.ttl)
	w.cache[key] = e
}

// review asks the webhook about token. It answers the user, ErrInvalidToken (wrapped with the
// review's error text) for a token not authenticated, or another error when the call failed.
func (w *tokenReviewWebhook) review(ctx context.Context, token string) (*UserInfo, error) {
	body, err := json.Marshal(authenticationv1.TokenReview{
		TypeMeta: metav1.TypeMeta{APIVersion: TokenReviewGroupVersion.String(), Kind: "TokenReview"},
		Spec:     authenticationv1.TokenReviewSpec{Token: token},
	})
	if err != nil {
		return nil, err
	}
	var answer authenticationv1.TokenReview
	if err := postJSON(ctx, w.client, w.url, body, &answer); err != nil {
		return nil, fmt.Errorf("token review webhook: %w", err)
	}
	if !answer.Status.Authenticated {
		if answer.Status.Error != "" {
			return nil, fmt.Errorf("%w: %s", ErrInvalidToken, answer.Status.Error)
		}
		return nil, ErrInvalidToken
	}
	u := answer.Status.User
	user := &UserInfo{Name: u.Username, UID: u.UID, Groups: u.Groups}
	if len(u.Extra) > 0 {
		user.Extra = make(map[string][]string, len(u.Extra))
		for k, v := range u.Extra {
			user.Extra[k] = v
		}
	}
	return withAuthenticatedGroup(user), nil
}

// postJSON posts body to url and decodes a 2xx answer into out. A non-2xx answer is an error
// carrying the status and the start of the body.
func postJSON(ctx context.Context, client *http.Client, url string, body []byte, out any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		const maxShown = 256
		if len(data) > maxShown {
			data = data[:maxShown]
		}
		return fmt.Errorf("%s answered %s: %s", url, resp.Status, bytes.TrimSpace(data))
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("decoding the answer of %s: %w", url, err)
	}
	return nil
}
