package config

import (
	"crypto/x509"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/google/cel-go/cel"
	"k8s.io/apimachinery/pkg/util/sets"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	apiv1 "orch.io/orch/components/apis/apiserver/v1"
)

// Authentication is a checked AuthenticationConfiguration with its compiled CEL programs.
type Authentication struct {
	// File is the file the configuration came from.
	File   string
	Config *apiv1.AuthenticationConfiguration
	// JWT holds the programs of each authenticator, index for index with Config.JWT.
	JWT []JWTPrograms
}

// JWTPrograms are the compiled expressions of one JWT authenticator. A nil entry stands for a
// mapping or rule that uses a claim instead of an expression, or is absent.
type JWTPrograms struct {
	// ClaimValidationRules is index for index with the authenticator's claimValidationRules.
	ClaimValidationRules []*Program
	Username             *Program
	Groups               *Program
	UID                  *Program
	// Extra is index for index with claimMappings.extra.
	Extra []*Program
	// UserValidationRules is index for index with userValidationRules.
	UserValidationRules []*Program
}

// LoadAuthentication reads, validates and compiles an AuthenticationConfiguration file.
func LoadAuthentication(path string) (*Authentication, error) {
	return loadFile(path, ParseAuthentication)
}

// ParseAuthentication is LoadAuthentication for bytes already read; name is used in errors.
func ParseAuthentication(name string, data []byte) (*Authentication, error) {
	var programs []JWTPrograms
	cfg, err := parseKind(name, data, apiv1.KindAuthenticationConfiguration, func(cfg *apiv1.AuthenticationConfiguration) (errs field.ErrorList) {
		programs, errs = validateAuthentication(newCompiler(), cfg)
		return errs
	})
	if err != nil {
		return nil, err
	}
	return &Authentication{File: name, Config: cfg, JWT: programs}, nil
}

// CheckAnonymousConflict refuses an explicit --anonymous-auth when the authentication configuration
// has an anonymous section, which then owns the setting.
func CheckAnonymousConflict(auth *Authentication, anonymousFlagSet bool) error {
	if auth == nil || auth.Config.Anonymous == nil || !anonymousFlagSet {
		return nil
	}
	return fmt.Errorf("%s: anonymous: Forbidden: the --anonymous-auth flag cannot be set when the authentication configuration has an anonymous section", auth.File)
}

// errClaimAndExpression is the reason given wherever a claim and an expression exclude each other.
const errClaimAndExpression = "claim and expression can't both be set"

const emailVerifiedReason = "claims.email_verified must be used in claimMappings.username.expression or claimMappings.extra[*].valueExpression or claimValidationRules[*].expression when claims.email is used in claimMappings.username.expression"

func validateAuthentication(cc *compiler, c *apiv1.AuthenticationConfiguration) ([]JWTPrograms, field.ErrorList) {
	var errs field.ErrorList
	root := field.NewPath("jwt")
	programs := make([]JWTPrograms, len(c.JWT))
	seenIssuers := sets.New[string]()
	seenDiscovery := sets.New[string]()
	for i := range c.JWT {
		a := &c.JWT[i]
		p := root.Index(i)
		errs = append(errs, validateIssuer(&a.Issuer, p.Child("issuer"))...)
		if a.Issuer.URL != "" {
			if seenIssuers.Has(a.Issuer.URL) {
				errs = append(errs, field.Duplicate(p.Child("issuer", "url"), a.Issuer.URL))
			}
			seenIssuers.Insert(a.Issuer.URL)
		}
		if a.Issuer.DiscoveryURL != "" {
			if seenDiscovery.Has(a.Issuer.DiscoveryURL) {
				errs = append(errs, field.Duplicate(p.Child("issuer", "discoveryURL"), a.Issuer.DiscoveryURL))
			}
			seenDiscovery.Insert(a.Issuer.DiscoveryURL)
		}
		var ruleErrs, mapErrs, userErrs field.ErrorList
		var ruleASTs []*compiled
		programs[i].ClaimValidationRules, ruleASTs, ruleErrs = validateClaimValidationRules(cc, a.ClaimValidationRules, p.Child("claimValidationRules"))
		mapErrs = validateClaimMappings(cc, &a.ClaimMappings, ruleASTs, p.Child("claimMappings"), &programs[i])
		programs[i].UserValidationRules, userErrs = validateUserValidationRules(cc, a.UserValidationRules, p.Child("userValidationRules"))
		errs = append(errs, ruleErrs...)
		errs = append(errs, mapErrs...)
		errs = append(errs, userErrs...)
	}
	if an := c.Anonymous; an != nil {
		p := field.NewPath("anonymous")
		if !an.Enabled && len(an.Conditions) > 0 {
			errs = append(errs, field.Invalid(p.Child("conditions"), an.Conditions, "enabled should be set to true when conditions are defined"))
		}
		seen := sets.New[string]()
		for i, cond := range an.Conditions {
			cp := p.Child("conditions").Index(i).Child("path")
			switch {
			case cond.Path == "":
				errs = append(errs, field.Required(cp, ""))
			case seen.Has(cond.Path):
				errs = append(errs, field.Duplicate(cp, cond.Path))
			}
			seen.Insert(cond.Path)
		}
	}
	return programs, errs
}

func validateIssuer(is *apiv1.Issuer, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if is.URL == "" {
		errs = append(errs, field.Required(p.Child("url"), ""))
	} else {
		errs = append(errs, validateHTTPSURL(is.URL, p.Child("url"))...)
	}
	if is.DiscoveryURL != "" {
		if strings.TrimRight(is.URL, "/") == strings.TrimRight(is.DiscoveryURL, "/") {
			errs = append(errs, field.Invalid(p.Child("discoveryURL"), is.DiscoveryURL, "discoveryURL must be different from URL"))
		}
		errs = append(errs, validateHTTPSURL(is.DiscoveryURL, p.Child("discoveryURL"))...)
	}
	if is.CertificateAuthority != "" && !x509.NewCertPool().AppendCertsFromPEM([]byte(is.CertificateAuthority)) {
		errs = append(errs, field.Invalid(p.Child("certificateAuthority"), "<omitted>", "must hold at least one PEM-encoded certificate"))
	}
	errs = append(errs, validateAudiences(is.Audiences, is.AudienceMatchPolicy, p)...)
	switch is.EgressSelectorType {
	case "", apiv1.EgressSelectorControlPlane, apiv1.EgressSelectorCluster:
	default:
		errs = append(errs, field.NotSupported(p.Child("egressSelectorType"), is.EgressSelectorType,
			[]apiv1.EgressSelectorType{apiv1.EgressSelectorControlPlane, apiv1.EgressSelectorCluster}))
	}
	return errs
}

// validateHTTPSURL requires an https URL with a host and no credentials, query or fragment.
func validateHTTPSURL(raw string, p *field.Path) field.ErrorList {
	u, err := url.Parse(raw)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return field.ErrorList{field.Invalid(p, raw, err.Error())}
	}
	var errs field.ErrorList
	if u.Scheme != "https" {
		errs = append(errs, field.Invalid(p, raw, "URL scheme must be https"))
	}
	if u.Host == "" {
		errs = append(errs, field.Invalid(p, raw, "URL must have a host"))
	}
	if u.User != nil {
		errs = append(errs, field.Invalid(p, raw, "URL must not contain a username or password"))
	}
	if u.RawQuery != "" || u.ForceQuery {
		errs = append(errs, field.Invalid(p, raw, "URL must not contain a query"))
	}
	if u.Fragment != "" {
		errs = append(errs, field.Invalid(p, raw, "URL must not contain a fragment"))
	}
	return errs
}

func validateAudiences(auds []string, policy apiv1.AudienceMatchPolicyType, issuer *field.Path) field.ErrorList {
	p := issuer.Child("audiences")
	if len(auds) == 0 {
		return field.ErrorList{field.Required(p, "at least one audience is required")}
	}
	var errs field.ErrorList
	seen := sets.New[string]()
	for i, a := range auds {
		switch {
		case a == "":
			errs = append(errs, field.Required(p.Index(i), ""))
		case seen.Has(a):
			errs = append(errs, field.Duplicate(p.Index(i), a))
		}
		seen.Insert(a)
	}
	pp := issuer.Child("audienceMatchPolicy")
	switch {
	case policy != "" && policy != apiv1.AudienceMatchPolicyMatchAny:
		errs = append(errs, field.NotSupported(pp, policy, []apiv1.AudienceMatchPolicyType{apiv1.AudienceMatchPolicyMatchAny}))
	case len(auds) > 1 && policy != apiv1.AudienceMatchPolicyMatchAny:
		errs = append(errs, field.Required(pp, "audienceMatchPolicy must be MatchAny for multiple audiences"))
	}
	return errs
}

func validateClaimValidationRules(cc *compiler, rules []apiv1.ClaimValidationRule, p *field.Path) ([]*Program, []*compiled, field.ErrorList) {
	var errs field.ErrorList
	programs := make([]*Program, len(rules))
	var asts []*compiled
	seenClaims := sets.New[string]()
	seenExprs := sets.New[string]()
	for i, r := range rules {
		rp := p.Index(i)
		switch {
		case r.Claim != "" && r.Expression != "":
			errs = append(errs, field.Invalid(rp, field.OmitValueType{}, errClaimAndExpression))
		case r.Claim == "" && r.Expression == "":
			errs = append(errs, field.Required(rp, "claim or expression is required"))
		case r.Claim != "":
			if r.Message != "" {
				errs = append(errs, field.Invalid(rp.Child("message"), r.Message, "message can't be set when claim is set"))
			}
			if seenClaims.Has(r.Claim) {
				errs = append(errs, field.Duplicate(rp.Child("claim"), r.Claim))
			}
			seenClaims.Insert(r.Claim)
		default:
			if r.RequiredValue != "" {
				errs = append(errs, field.Invalid(rp.Child("requiredValue"), r.RequiredValue, "requiredValue can't be set when expression is set"))
			}
			if seenExprs.Has(r.Expression) {
				errs = append(errs, field.Duplicate(rp.Child("expression"), r.Expression))
				continue
			}
			seenExprs.Insert(r.Expression)
			c, reason := cc.compile(claimsVar, r.Expression, boolType)
			if reason != "" {
				errs = append(errs, field.Invalid(rp.Child("expression"), r.Expression, reason))
				continue
			}
			programs[i] = c.program
			asts = append(asts, c)
		}
	}
	return programs, asts, errs
}

func validateClaimMappings(cc *compiler, m *apiv1.ClaimMappings, ruleASTs []*compiled, p *field.Path, out *JWTPrograms) field.ErrorList {
	var errs field.ErrorList
	username, uerrs := validatePrefixedClaimOrExpression(cc, &m.Username, p.Child("username"), true, stringType)
	errs = append(errs, uerrs...)
	groups, gerrs := validatePrefixedClaimOrExpression(cc, &m.Groups, p.Child("groups"), false, stringType, listOfStringsType)
	errs = append(errs, gerrs...)
	if username != nil {
		out.Username = username.program
	}
	if groups != nil {
		out.Groups = groups.program
	}
	if m.UID != nil {
		up := p.Child("uid")
		switch {
		case m.UID.Claim != "" && m.UID.Expression != "":
			errs = append(errs, field.Invalid(up, field.OmitValueType{}, errClaimAndExpression))
		case m.UID.Claim == "" && m.UID.Expression == "":
			errs = append(errs, field.Required(up, "claim or expression is required"))
		case m.UID.Expression != "":
			c, reason := cc.compile(claimsVar, m.UID.Expression, stringType)
			if reason != "" {
				errs = append(errs, field.Invalid(up.Child("expression"), m.UID.Expression, reason))
			} else {
				out.UID = c.program
			}
		}
	}
	out.Extra = make([]*Program, len(m.Extra))
	extraASTs := make([]*compiled, 0, len(m.Extra))
	seenKeys := sets.New[string]()
	for i, e := range m.Extra {
		ep := p.Child("extra").Index(i)
		kp := ep.Child("key")
		errs = append(errs, utilvalidation.IsDomainPrefixedPath(kp, e.Key)...)
		if e.Key != strings.ToLower(e.Key) {
			errs = append(errs, field.Invalid(kp, e.Key, "key must be lowercase"))
		}
		if isReservedDomain(e.Key) {
			errs = append(errs, field.Invalid(kp, e.Key, "orch.io and its subdomains are reserved for orch use"))
		}
		if seenKeys.Has(e.Key) {
			errs = append(errs, field.Duplicate(kp, e.Key))
			continue
		}
		seenKeys.Insert(e.Key)
		if e.ValueExpression == "" {
			errs = append(errs, field.Required(ep.Child("valueExpression"), "valueExpression is required"))
			continue
		}
		c, reason := cc.compile(claimsVar, e.ValueExpression, stringType, listOfStringsType)
		if reason != "" {
			errs = append(errs, field.Invalid(ep.Child("valueExpression"), e.ValueExpression, reason))
			continue
		}
		out.Extra[i] = c.program
		extraASTs = append(extraASTs, c)
	}
	if username != nil && username.usesEmail && !anyUsesEmailVerified(username, extraASTs, ruleASTs) {
		errs = append(errs, field.Invalid(p.Child("username", "expression"), m.Username.Expression, emailVerifiedReason))
	}
	return errs
}

// isReservedDomain reports whether an extra key's domain is orch.io or a subdomain of it, which
// orch keeps for its own user attributes (as Kubernetes keeps k8s.io and kubernetes.io).
func isReservedDomain(key string) bool {
	domain, _, _ := strings.Cut(strings.ToLower(key), "/")
	return domain == "orch.io" || strings.HasSuffix(domain, ".orch.io")
}

func anyUsesEmailVerified(username *compiled, extra, rules []*compiled) bool {
	if username.usesEmailVerified {
		return true
	}
	for _, c := range append(extra[:len(extra):len(extra)], rules...) {
		if c.usesEmailVerified {
			return true
		}
	}
	return false
}

// validatePrefixedClaimOrExpression checks a claim-with-prefix or expression mapping and compiles
// its expression, which must evaluate to one of want.
func validatePrefixedClaimOrExpression(cc *compiler, m *apiv1.PrefixedClaimOrExpression, p *field.Path, required bool, want ...*cel.Type) (*compiled, field.ErrorList) {
	var errs field.ErrorList
	var c *compiled
	switch {
	case m.Claim != "" && m.Expression != "":
		errs = append(errs, field.Invalid(p, field.OmitValueType{}, errClaimAndExpression))
	case m.Claim == "" && m.Expression == "" && required:
		errs = append(errs, field.Required(p, "claim or expression is required"))
	case m.Expression != "":
		var reason string
		if c, reason = cc.compile(claimsVar, m.Expression, want...); reason != "" {
			errs = append(errs, field.Invalid(p.Child("expression"), m.Expression, reason))
		}
	}
	if m.Prefix != nil && m.Expression != "" {
		errs = append(errs, field.Invalid(p.Child("prefix"), *m.Prefix, "may not be specified when expression is set"))
	}
	if m.Prefix == nil && m.Claim != "" {
		errs = append(errs, field.Required(p.Child("prefix"), "prefix must be set when claim is set"))
	}
	return c, errs
}

func validateUserValidationRules(cc *compiler, rules []apiv1.UserValidationRule, p *field.Path) ([]*Program, field.ErrorList) {
	exprs := make([]string, len(rules))
	for i, r := range rules {
		exprs[i] = r.Expression
	}
	return compileBoolExpressions(cc, userVar, exprs, p, "expression is required")
}

// compileBoolExpressions compiles a list of CEL expressions over variable that must each be
// present, unique and boolean, with one error per broken rule at p[i].expression.
func compileBoolExpressions(cc *compiler, variable string, exprs []string, p *field.Path, requiredDetail string) ([]*Program, field.ErrorList) {
	var errs field.ErrorList
	programs := make([]*Program, len(exprs))
	seen := sets.New[string]()
	for i, expr := range exprs {
		ep := p.Index(i).Child("expression")
		if strings.TrimSpace(expr) == "" {
			errs = append(errs, field.Required(ep, requiredDetail))
			continue
		}
		if seen.Has(expr) {
			errs = append(errs, field.Duplicate(ep, expr))
			continue
		}
		seen.Insert(expr)
		c, reason := cc.compile(variable, expr, boolType)
		if reason != "" {
			errs = append(errs, field.Invalid(ep, expr, reason))
			continue
		}
		programs[i] = c.program
	}
	return programs, errs
}
