package rbac

import (
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"

	"orch.io/orch/components/apis/groups"
	"orch.io/orch/components/authz"
)

// canonical returns rule with every API group named by orch's name, so that a rule naming
// rbac.authorization.k8s.io and one naming rbac.authorization.orch.io match, cover and compare
// alike. rule is not changed; its slices are shared when no group is renamed.
func canonical(rule rbacv1.PolicyRule) rbacv1.PolicyRule {
	for _, g := range rule.APIGroups {
		if groups.Orch(g) != g {
			renamed := make([]string, len(rule.APIGroups))
			for j, g := range rule.APIGroups {
				renamed[j] = groups.Orch(g)
			}
			rule.APIGroups = renamed
			return rule
		}
	}
	return rule
}

// CanonicalRules are rules each with its groups named by orch's name (see canonical).
func CanonicalRules(rules []rbacv1.PolicyRule) []rbacv1.PolicyRule {
	out := make([]rbacv1.PolicyRule, len(rules))
	for i, r := range rules {
		out[i] = canonical(r)
	}
	return out
}

// request is what a rule is matched against: the attributes with the group named by orch's name
// and the resource joined with its subresource, computed once per request.
type request struct {
	authz.Attributes
	combined string
}

func newRequest(a authz.Attributes) request {
	a.APIGroup = groups.Orch(a.APIGroup)
	r := request{Attributes: a, combined: a.Resource}
	if a.Subresource != "" {
		r.combined = a.Resource + "/" + a.Subresource
	}
	return r
}

// RuleAllows tells whether rule allows a, as Kubernetes' rbac.RuleAllows.
func RuleAllows(a authz.Attributes, rule rbacv1.PolicyRule) bool {
	r := newRequest(a)
	return r.allowedBy(canonical(rule))
}

// allowedBy matches a rule whose groups are canonical.
func (r *request) allowedBy(rule rbacv1.PolicyRule) bool {
	if !has(rule.Verbs, r.Verb) {
		return false
	}
	if !r.ResourceRequest {
		return urlMatches(rule.NonResourceURLs, r.Path)
	}
	return has(rule.APIGroups, r.APIGroup) &&
		resourceMatches(rule.Resources, r.combined, r.Subresource) &&
		(len(rule.ResourceNames) == 0 || contains(rule.ResourceNames, r.Name))
}

// has tells whether list holds want or "*".
func has(list []string, want string) bool {
	for _, s := range list {
		if s == want || s == "*" {
			return true
		}
	}
	return false
}

func contains(list []string, want string) bool {
	for _, s := range list {
		if s == want {
			return true
		}
	}
	return false
}

// resourceMatches is Kubernetes' ResourceMatches: "*", the resource with its subresource exactly,
// or "*/<subresource>". A rule naming "pods" does not reach "pods/log".
func resourceMatches(resources []string, combined, subresource string) bool {
	for _, res := range resources {
		switch {
		case res == "*", res == combined:
			return true
		case subresource != "" && len(res) == len(subresource)+2 && strings.HasPrefix(res, "*/") && strings.HasSuffix(res, subresource):
			return true
		}
	}
	return false
}

// urlMatches is Kubernetes' NonResourceURLMatches: "*", the path exactly, or a prefix ending in "*".
func urlMatches(urls []string, path string) bool {
	for _, u := range urls {
		switch {
		case u == "*", u == path:
			return true
		case strings.HasSuffix(u, "*") && strings.HasPrefix(path, strings.TrimRight(u, "*")):
			return true
		}
	}
	return false
}
