package server

import (
	"crypto/x509"
	"fmt"
	"net/http"
	"strings"

	"orch.io/orch/components/apis/orchlet/v1beta1"
	"orch.io/orch/components/authn"
	"orch.io/orch/components/authz"
)

// The values of --authorization-mode the agent accepts.
const (
	ModeAlwaysAllow = "AlwaysAllow"
	ModeWebhook     = "Webhook"
)

// Paths of the review APIs on the API server.
var (
	tokenReviewPath         = "/apis/" + authn.TokenReviewGroupVersion.String() + "/tokenreviews"
	subjectAccessReviewPath = "/apis/" + authz.SubjectAccessReviewGroupVersion.String() + "/subjectaccessreviews"
)

// fineGrainedGate gives /configz, /healthz and /pods subresources of their own, tried before
// "proxy" (Kubernetes' KubeletFineGrainedAuthz).
const fineGrainedGate = "OrchletFineGrainedAuthz"

// authFilter authenticates and authorizes every request to the HTTPS server, as the kubelet's
// auth filter does, before any routing.
type authFilter struct {
	authenticator authn.Authenticator
	authorizer    authz.Authorizer
	nodeName      string
	fineGrained   bool
}

func newAuthFilter(cfg *v1beta1.OrchletConfiguration, deps Deps, clientCAs *x509.CertPool) (*authFilter, error) {
	webhookURL := func(option, path string) (string, error) {
		if deps.APIServer == "" || deps.APIClient == nil {
			// As Kubernetes' kubelet: without an API server client there is no one to ask.
			return "", fmt.Errorf("server: %s sends its reviews to the API server, which only API-server mode (--orchconfig) connects to; in standalone mode use client certificates (--client-ca-file) and --authorization-mode=AlwaysAllow", option)
		}
		return strings.TrimSuffix(deps.APIServer, "/") + path, nil
	}

	var authenticators []authn.Authenticator
	if clientCAs != nil {
		authenticators = append(authenticators, authn.X509(clientCAs))
	}
	if webhook := cfg.Authentication.Webhook; webhook.Enabled {
		url, err := webhookURL("--authentication-token-webhook", tokenReviewPath)
		if err != nil {
			return nil, err
		}
		authenticators = append(authenticators, authn.TokenReviewWebhook(deps.APIClient, url, deps.Clock, webhook.CacheTTL.Duration))
	}
	if cfg.Authentication.Anonymous.Enabled {
		authenticators = append(authenticators, authn.Anonymous())
	}

	var authorizer authz.Authorizer
	switch mode := cfg.Authorization.Mode; mode {
	case ModeAlwaysAllow:
		authorizer = authz.AlwaysAllow()
	case ModeWebhook:
		url, err := webhookURL("--authorization-mode=Webhook", subjectAccessReviewPath)
		if err != nil {
			return nil, err
		}
		w := cfg.Authorization.Webhook
		authorizer = authz.SubjectAccessReviewWebhook(deps.APIClient, url, deps.Clock, w.CacheAuthorizedTTL.Duration, w.CacheUnauthorizedTTL.Duration)
	default:
		return nil, fmt.Errorf("server: --authorization-mode: unknown mode %q; allowed values: %s, %s", mode, ModeAlwaysAllow, ModeWebhook)
	}
	return &authFilter{
		authenticator: authn.Union(authenticators...),
		authorizer:    authorizer,
		nodeName:      deps.NodeName,
		fineGrained:   deps.Gates.Enabled(fineGrainedGate),
	}, nil
}

// wrap answers 401 "Unauthorized" to a request no authenticator accepts, 500 when the authorizer
// fails and 403 "Forbidden (...)" when it does not allow any of the request's attributes: the
// kubelet's plain-text answers.
func (f *authFilter) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user, ok, err := f.authenticator.AuthenticateRequest(r)
		if err != nil || !ok {
			writeText(w, http.StatusUnauthorized, "Unauthorized")
			return
		}
		all := f.attributes(user, r)
		for _, attrs := range all {
			decision, _, err := f.authorizer.Authorize(r.Context(), attrs)
			if err != nil {
				writeText(w, http.StatusInternalServerError, fmt.Sprintf("Authorization error (user=%s, verb=%s, resource=%s, subresource=%s)",
					user.Name, attrs.Verb, attrs.Resource, attrs.Subresource))
				return
			}
			if decision == authz.DecisionAllow {
				next.ServeHTTP(w, r.WithContext(authn.WithUser(r.Context(), user)))
				return
			}
		}
		subresources := make([]string, len(all))
		for i, a := range all {
			subresources[i] = a.Subresource
		}
		writeText(w, http.StatusForbidden, fmt.Sprintf("Forbidden (user=%s, verb=%s, resource=%s, subresource(s)=[%s])",
			user.Name, all[0].Verb, all[0].Resource, strings.Join(subresources, " ")))
	})
}

// methodVerbs maps HTTP methods to API verbs, as the kubelet does; other methods get no verb.
var methodVerbs = map[string]string{
	http.MethodPost:   "create",
	http.MethodGet:    "get",
	http.MethodPut:    "update",
	http.MethodPatch:  "patch",
	http.MethodDelete: "delete",
}

// attributes are the kubelet's: the node object, subresource by path, "proxy" for everything else.
// With fine-grained authorization, /configz, /healthz and /pods are tried under their own
// subresource first and then as "proxy", so that a grant of nodes/proxy keeps working.
func (f *authFilter) attributes(user *authn.UserInfo, r *http.Request) []authz.Attributes {
	base := authz.Attributes{
		User: user, Verb: methodVerbs[r.Method], APIVersion: "v1", Resource: "nodes",
		Subresource: "proxy", Name: f.nodeName, Path: r.URL.Path, ResourceRequest: true,
	}
	with := func(subresources ...string) []authz.Attributes {
		out := make([]authz.Attributes, len(subresources))
		for i, s := range subresources {
			out[i] = base
			out[i].Subresource = s
		}
		return out
	}
	p := r.URL.Path
	switch {
	case isSubpath(p, "/stats"):
		return with("stats")
	case isSubpath(p, "/metrics"):
		return with("metrics")
	case isSubpath(p, "/logs"):
		return with("log")
	case f.fineGrained && isSubpath(p, "/configz"):
		return with("configz", "proxy")
	case f.fineGrained && isSubpath(p, "/healthz"):
		return with("healthz", "proxy")
	case f.fineGrained && isSubpath(p, "/pods"):
		return with("pods", "proxy")
	}
	return with("proxy")
}

// isSubpath reports whether subpath is path or below it.
func isSubpath(subpath, path string) bool {
	path = strings.TrimSuffix(path, "/")
	return subpath == path || (strings.HasPrefix(subpath, path) && subpath[len(path)] == '/')
}
