package jwt

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
	utiljson "k8s.io/apimachinery/pkg/util/json"

	"orch.io/orch/components/apis/apiserver/config"
	"orch.io/orch/components/authn"
)

// CredentialIDKey is the extra key carrying the identifier of the credential, "JTI=<jti>" for a
// token with a jti claim: Kubernetes' authentication.kubernetes.io/credential-id under orch's
// reserved domain.
const CredentialIDKey = "authentication.orch.io/credential-id"

// claims are a verified token's claims, each still JSON.
type claims map[string]json.RawMessage

func (c claims) unmarshalClaim(name string, v any) error {
	raw, ok := c[name]
	if !ok {
		return errors.New("claim not present")
	}
	return json.Unmarshal(raw, v)
}

// user maps the verified payload to a user and applies the rules, in Kubernetes' order: username,
// groups, uid, extra, required claims, claim validation expressions, user validation rules.
func (a *Authenticator) user(payload []byte) (*authn.UserInfo, error) {
	var c claims
	if err := json.Unmarshal(payload, &c); err != nil {
		return nil, fmt.Errorf("oidc: parse claims: %w", err)
	}
	// CEL sees the claims as JSON values, with integral numbers as int64 as Kubernetes' unstructured
	// conversion gives them.
	var vars map[string]any
	if a.usesCEL {
		var m map[string]any
		if err := utiljson.Unmarshal(payload, &m); err != nil {
			return nil, fmt.Errorf("oidc: could not convert claims to unstructured: %w", err)
		}
		vars = map[string]any{"claims": m}
	}
	username, err := a.username(c, vars)
	if err != nil {
		return nil, err
	}
	info := &authn.UserInfo{Name: username}
	if info.Groups, err = a.groups(c, vars); err != nil {
		return nil, err
	}
	if info.UID, err = a.uid(c, vars); err != nil {
		return nil, err
	}
	if info.Extra, err = a.extra(c, vars); err != nil {
		return nil, err
	}
	if err := a.checkRequiredClaims(c); err != nil {
		return nil, err
	}
	if err := a.checkClaimRules(vars); err != nil {
		return nil, fmt.Errorf("oidc: error evaluating claim validation expression: %w", err)
	}
	if err := a.checkUserRules(info); err != nil {
		return nil, fmt.Errorf("oidc: error evaluating user info validation rule: %w", err)
	}
	return info, nil
}

func (a *Authenticator) username(c claims, vars map[string]any) (string, error) {
	m := a.config.ClaimMappings.Username
	if p := a.programs.Username; p != nil {
		out, _, err := p.Eval(vars)
		if err != nil {
			return "", fmt.Errorf("oidc: error evaluating username claim expression: %w", err)
		}
		s, ok := out.(types.String)
		if !ok {
			return "", errors.New("oidc: error evaluating username claim expression: username claim expression must return a string")
		}
		if s == "" {
			return "", errors.New("oidc: empty username via CEL expression is not allowed")
		}
		return string(s), nil
	}
	var username string
	if err := c.unmarshalClaim(m.Claim, &username); err != nil {
		return "", fmt.Errorf("oidc: parse username claims %q: %w", m.Claim, err)
	}
	// The automatic rule of the email claim: an email_verified claim, when present, must be true.
	if m.Claim == "email" {
		if _, ok := c["email_verified"]; ok {
			var verified bool
			if err := c.unmarshalClaim("email_verified", &verified); err != nil {
				return "", fmt.Errorf("oidc: parse 'email_verified' claim: %w", err)
			}
			if !verified {
				return "", errors.New("oidc: email not verified")
			}
		}
	}
	if m.Prefix != nil {
		username = *m.Prefix + username
	}
	return username, nil
}

func (a *Authenticator) groups(c claims, vars map[string]any) ([]string, error) {
	m := a.config.ClaimMappings.Groups
	if m.Claim != "" {
		raw, ok := c[m.Claim]
		if !ok {
			if distributedClaimNames(c)[m.Claim] != "" {
				return nil, fmt.Errorf("oidc: groups claim %q is a distributed claim, which this server does not resolve", m.Claim)
			}
			return nil, nil
		}
		groups, err := stringOrArray(raw)
		if err != nil {
			return nil, fmt.Errorf("oidc: parse groups claim %q: %w", m.Claim, err)
		}
		prefix := ""
		if m.Prefix != nil {
			prefix = *m.Prefix
		}
		var out []string
		for _, g := range groups {
			// Empty values mean no group, as for expressions.
			if g != "" {
				out = append(out, prefix+g)
			}
		}
		return out, nil
	}
	p := a.programs.Groups
	if p == nil {
		return nil, nil
	}
	out, _, err := p.Eval(vars)
	if err == nil {
		var groups []string
		if groups, err = stringList(out); err == nil {
			return groups, nil
		}
	}
	return nil, fmt.Errorf("oidc: error evaluating group claim expression: %w", err)
}

// distributedClaimNames reads _claim_names (OIDC Core 5.6.2); go-oidc has already refused a
// malformed one.
func distributedClaimNames(c claims) map[string]string {
	var names map[string]string
	_ = c.unmarshalClaim("_claim_names", &names)
	return names
}

// stringOrArray reads a claim holding a string or an array of strings.
func stringOrArray(raw json.RawMessage) ([]string, error) {
	var list []string
	if err := json.Unmarshal(raw, &list); err == nil {
		return list, nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, err
	}
	return []string{s}, nil
}

func (a *Authenticator) uid(c claims, vars map[string]any) (string, error) {
	m := a.config.ClaimMappings.UID
	if m == nil {
		return "", nil
	}
	if m.Claim != "" {
		var uid string
		if err := c.unmarshalClaim(m.Claim, &uid); err != nil {
			return "", fmt.Errorf("oidc: parse uid claim %q: %w", m.Claim, err)
		}
		return uid, nil
	}
	out, _, err := a.programs.UID.Eval(vars)
	if err != nil {
		return "", fmt.Errorf("oidc: error evaluating uid claim expression: %w", err)
	}
	s, ok := out.(types.String)
	if !ok {
		return "", errors.New("oidc: error evaluating uid claim expression: uid claim expression must return a string")
	}
	return string(s), nil
}

func (a *Authenticator) extra(c claims, vars map[string]any) (map[string][]string, error) {
	extra := map[string][]string{}
	var jti string
	if err := c.unmarshalClaim("jti", &jti); err == nil && jti != "" {
		extra[CredentialIDKey] = []string{"JTI=" + jti}
	}
	for i, m := range a.config.ClaimMappings.Extra {
		p := a.programs.Extra[i]
		out, _, err := p.Eval(vars)
		if err != nil {
			return nil, fmt.Errorf("oidc: error evaluating extra claim expression: %s: %w", m.ValueExpression, err)
		}
		values, err := stringList(out)
		if err != nil {
			return nil, fmt.Errorf("oidc: error evaluating extra claim expression: %s: %w", m.ValueExpression, err)
		}
		if len(values) > 0 {
			extra[m.Key] = values
		}
	}
	if len(extra) == 0 {
		return nil, nil
	}
	return extra, nil
}

var errNotStrings = errors.New("expression must return a string or a list of strings")

// stringList reads a mapping's value: a string or a list of strings, where "", [], null and empty
// strings inside a list mean nothing.
func stringList(val ref.Val) ([]string, error) {
	switch v := val.(type) {
	case types.String:
		if v == "" {
			return nil, nil
		}
		return []string{string(v)}, nil
	case types.Null:
		return nil, nil
	case traits.Lister:
		var out []string
		for it := v.Iterator(); it.HasNext() == types.True; {
			s, ok := it.Next().(types.String)
			if !ok {
				return nil, errNotStrings
			}
			if s != "" {
				out = append(out, string(s))
			}
		}
		return out, nil
	}
	return nil, errNotStrings
}

// checkRequiredClaims applies the claim / requiredValue rules: the claim must hold exactly the
// string requiredValue (the empty string when requiredValue is not set).
func (a *Authenticator) checkRequiredClaims(c claims) error {
	for _, r := range a.config.ClaimValidationRules {
		if r.Claim == "" {
			continue
		}
		if _, ok := c[r.Claim]; !ok {
			return fmt.Errorf("oidc: required claim %s not present in ID token", r.Claim)
		}
		var value string
		if err := c.unmarshalClaim(r.Claim, &value); err != nil {
			return fmt.Errorf("oidc: parse claim %s: %w", r.Claim, err)
		}
		if value != r.RequiredValue {
			return fmt.Errorf("oidc: required claim %s value does not match. Got = %s, want = %s", r.Claim, value, r.RequiredValue)
		}
	}
	return nil
}

func (a *Authenticator) checkClaimRules(vars map[string]any) error {
	for i, r := range a.config.ClaimValidationRules {
		if p := a.programs.ClaimValidationRules[i]; p != nil {
			if err := checkRule(p, vars, r.Message); err != nil {
				return err
			}
		}
	}
	return nil
}

func (a *Authenticator) checkUserRules(info *authn.UserInfo) error {
	if len(a.programs.UserValidationRules) == 0 {
		return nil
	}
	user := config.UserInfo{Username: info.Name, UID: info.UID, Groups: info.Groups, Extra: info.Extra}
	if user.Groups == nil {
		user.Groups = []string{}
	}
	if user.Extra == nil {
		user.Extra = map[string][]string{}
	}
	vars := map[string]any{"user": user}
	for i, r := range a.config.UserValidationRules {
		if err := checkRule(a.programs.UserValidationRules[i], vars, r.Message); err != nil {
			return err
		}
	}
	return nil
}

// checkRule evaluates a validation rule, which must return true; false fails with its message.
func checkRule(p *config.Program, vars map[string]any, message string) error {
	out, _, err := p.Eval(vars)
	if err != nil {
		return err
	}
	b, ok := out.(types.Bool)
	if !ok {
		return errors.New("validation expression must return a boolean")
	}
	if !b {
		return fmt.Errorf("validation expression '%s' failed: %s", p.Expression, message)
	}
	return nil
}
