package serviceaccount

import (
	"context"
	"crypto"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/benbjohnson/clock"
	"github.com/go-jose/go-jose/v4/jwt"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"orch.io/orch/components/authn"
)

// Getter reads the objects a token is bound to; a missing one is an error.
type Getter interface {
	ServiceAccount(ctx context.Context, namespace, name string) (*corev1.ServiceAccount, error)
	Pod(ctx context.Context, namespace, name string) (*corev1.Pod, error)
}

// Authenticator checks service account tokens as Kubernetes' JWTTokenAuthenticator and bound
// token validator do: a token of one of its issuers, signed by one of its keys, for an audience
// the request accepts, within its lifetime, whose service account and pod still exist.
type Authenticator struct {
	issuers   []string
	keys      []crypto.PublicKey
	audiences []string
	getter    Getter
	clock     clock.Clock
}

// NewAuthenticator accepts tokens of issuers signed by keys. audiences are the API's
// (--api-audiences): what a request accepts unless it says otherwise (a TokenReview's).
func NewAuthenticator(issuers []string, keys []crypto.PublicKey, audiences []string, getter Getter, clk clock.Clock) *Authenticator {
	return &Authenticator{issuers: issuers, keys: keys, audiences: audiences, getter: getter, clock: clk}
}

// AuthenticateToken is an authn.Token: no opinion on a token of another issuer.
func (a *Authenticator) AuthenticateToken(ctx context.Context, token string) (*authn.UserInfo, bool, error) {
	if !slices.Contains(a.issuers, unverifiedIssuer(token)) {
		return nil, false, nil
	}
	tok, err := jwt.ParseSigned(token, algorithms)
	if err != nil {
		return nil, false, nil
	}
	public, private := &jwt.Claims{}, &privateClaims{}
	var errs []error
	found := false
	for _, key := range a.keysFor(tok) {
		if err := tok.Claims(key, public, private); err != nil {
			errs = append(errs, err)
			continue
		}
		found = true
		break
	}
	if !found {
		if len(errs) == 0 {
			return nil, false, errors.New("invalid signature, no keys found")
		}
		return nil, false, errors.Join(errs...)
	}
	if !slices.Contains(a.issuers, public.Issuer) {
		return nil, false, fmt.Errorf("token issuer %q is invalid", public.Issuer)
	}
	tokenAudiences := []string(public.Audience)
	requested, ok := authn.AudiencesFrom(ctx)
	if !ok {
		requested = a.audiences
	}
	granted := intersection(tokenAudiences, requested)
	if len(granted) == 0 {
		return nil, false, fmt.Errorf("token audiences %q is invalid for the target audiences %q", tokenAudiences, requested)
	}
	user, ok, err := a.validate(ctx, public, private)
	if ok {
		authn.GrantAudiences(ctx, granted)
	}
	return user, ok, err
}

// keysFor are the keys whose id the token names first, else all of them.
func (a *Authenticator) keysFor(tok *jwt.JSONWebToken) []crypto.PublicKey {
	var kid string
	for _, h := range tok.Headers {
		if h.KeyID != "" {
			kid = h.KeyID
			break
		}
	}
	if kid != "" {
		for _, k := range a.keys {
			if id, err := keyID(k); err == nil && id == kid {
				return []crypto.PublicKey{k}
			}
		}
	}
	return a.keys
}

// validate is Kubernetes' bound token validator: the times, then the objects still there.
func (a *Authenticator) validate(ctx context.Context, public *jwt.Claims, private *privateClaims) (*authn.UserInfo, bool, error) {
	now := a.clock.Now()
	switch err := public.Validate(jwt.Expected{Time: now}); {
	case err == nil:
	case errors.Is(err, jwt.ErrExpired):
		return nil, false, errors.New("service account token has expired")
	case errors.Is(err, jwt.ErrNotValidYet):
		return nil, false, errors.New("service account token is not valid yet")
	case errors.Is(err, jwt.ErrIssuedInTheFuture):
		return nil, false, errors.New("service account token is issued in the future")
	default:
		return nil, false, fmt.Errorf("service account token claims could not be validated: %w", err)
	}
	// Things deleted before now less the leeway are gone.
	deletedBefore := now.Add(-jwt.DefaultLeeway)
	claims := private.Orch
	namespace, saRef, podRef := claims.Namespace, claims.Svcacct, claims.Pod
	sa, err := a.getter.ServiceAccount(ctx, namespace, saRef.Name)
	if err != nil {
		klog.V(4).InfoS("Could not retrieve service account", "namespace", namespace, "name", saRef.Name, "err", err)
		return nil, false, err
	}
	if string(sa.UID) != saRef.UID {
		return nil, false, fmt.Errorf("service account UID (%s) does not match claim (%s)", sa.UID, saRef.UID)
	}
	if sa.DeletionTimestamp != nil && sa.DeletionTimestamp.Time.Before(deletedBefore) {
		return nil, false, fmt.Errorf("service account %s/%s has been deleted", namespace, saRef.Name)
	}
	user := &authn.UserInfo{
		Name:   Username(namespace, saRef.Name),
		UID:    saRef.UID,
		Groups: []string{AllGroup, AllGroup + ":" + namespace},
		Extra:  map[string][]string{},
	}
	if podRef != nil {
		pod, err := a.getter.Pod(ctx, namespace, podRef.Name)
		if err != nil {
			klog.V(4).InfoS("Could not retrieve bound pod", "namespace", namespace, "name", podRef.Name, "err", err)
			return nil, false, errors.New("service account token has been invalidated")
		}
		if string(pod.UID) != podRef.UID {
			return nil, false, fmt.Errorf("pod UID (%s) does not match service account pod ref claim (%s)", pod.UID, podRef.UID)
		}
		if pod.DeletionTimestamp != nil && pod.DeletionTimestamp.Time.Before(deletedBefore) {
			return nil, false, errors.New("service account token has been invalidated")
		}
		user.Extra[PodNameKey] = []string{podRef.Name}
		user.Extra[PodUIDKey] = []string{podRef.UID}
		if n := claims.Node; n != nil {
			user.Extra[NodeNameKey] = []string{n.Name}
			if n.UID != "" {
				user.Extra[NodeUIDKey] = []string{n.UID}
			}
		}
	}
	if id := credentialID(public.ID); id != "" {
		user.Extra[CredentialIDKey] = []string{id}
	}
	return user, true, nil
}

// unverifiedIssuer is the iss of a compact JWT before any check, to tell whose token it is.
func unverifiedIssuer(token string) string {
	if strings.HasPrefix(strings.TrimSpace(token), "{") {
		return ""
	}
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return ""
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return ""
	}
	var c struct {
		Issuer string `json:"iss"`
	}
	if json.Unmarshal(payload, &c) != nil {
		return ""
	}
	return c.Issuer
}

// intersection is the audiences of a also in b, in a's order.
func intersection(a, b []string) []string {
	var out []string
	for _, x := range a {
		if slices.Contains(b, x) && !slices.Contains(out, x) {
			out = append(out, x)
		}
	}
	return out
}
