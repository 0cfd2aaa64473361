package apiclient

import (
	"fmt"
	"net/http"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
)

// ReviewClient is how the agent's HTTPS server reaches the API server's TokenReview and
// SubjectAccessReview APIs for --authentication-token-webhook and --authorization-mode=Webhook:
// the server of cfg, with the agent's own credentials from it, its reviews counted against
// --kube-api-qps and --kube-api-burst like every other request but events.
func ReviewClient(cfg *rest.Config) (string, *http.Client, error) {
	base, _, err := rest.DefaultServerUrlFor(cfg)
	if err != nil {
		return "", nil, fmt.Errorf("--orchconfig: %w", err)
	}
	transport, err := rest.TransportFor(cfg)
	if err != nil {
		return "", nil, fmt.Errorf("--orchconfig: %w", err)
	}
	if cfg.RateLimiter != nil {
		transport = throttled{next: transport, limiter: cfg.RateLimiter}
	}
	return base.String(), &http.Client{Transport: transport, Timeout: cfg.Timeout}, nil
}

// throttled waits for limiter before each request.
type throttled struct {
	next    http.RoundTripper
	limiter flowcontrol.RateLimiter
}

func (t throttled) RoundTrip(r *http.Request) (*http.Response, error) {
	if err := t.limiter.Wait(r.Context()); err != nil {
		if r.Body != nil {
			_ = r.Body.Close() // a RoundTripper closes the body, even when it fails
		}
		return nil, err
	}
	return t.next.RoundTrip(r)
}
