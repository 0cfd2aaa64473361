package rbac

import (
	"fmt"
	"reflect"
	"slices"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/component-helpers/auth/rbac/validation"

	"orch.io/orch/components/authn"
)

// PrivilegedGroup is system:masters: its members may grant anything, as the server's own clients.
const PrivilegedGroup = "system:masters"

// EscalationAllowed tells whether user may grant any permission without holding it: a member of
// system:masters, as in Kubernetes.
func EscalationAllowed(user *authn.UserInfo) bool {
	return user != nil && slices.Contains(user.Groups, PrivilegedGroup)
}

// FullAuthority is every permission: what an aggregation rule can gather, and so what a user must
// hold to set one.
var FullAuthority = []rbacv1.PolicyRule{
	{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}},
	{Verbs: []string{"*"}, NonResourceURLs: []string{"*"}},
}

// ConfirmNoEscalation tells, as Kubernetes' escalation check, whether the rules user holds in
// namespace ("" for the cluster scope) cover rules: nil if they do, and otherwise an error listing
// what the user lacks in Kubernetes' words, to be answered 403 Forbidden.
func ConfirmNoEscalation(x *Index, user *authn.UserInfo, namespace string, rules []rbacv1.PolicyRule) error {
	owned, resolveErr := x.PolicyRules(user, namespace)
	covered, missing := validation.Covers(owned, CanonicalRules(rules))
	if covered {
		return nil
	}
	var lines []string
	for _, r := range compactRules(missing) {
		if s := compactString(r); !slices.Contains(lines, s) {
			lines = append(lines, s)
		}
	}
	slices.Sort(lines)
	name, groupList := "", []string(nil)
	if user != nil {
		name, groupList = user.Name, user.Groups
	}
	msg := fmt.Sprintf("user %q (groups=%q) is attempting to grant RBAC permissions not currently held:\n%s", name, groupList, strings.Join(lines, "\n"))
	if resolveErr != nil {
		msg += fmt.Sprintf("; resolution errors: [%v]", resolveErr)
	}
	return escalationError(msg)
}

type escalationError string

func (e escalationError) Error() string { return string(e) }

// compactRules is Kubernetes' CompactRules: rules naming one group and one resource (and at most one
// resource name) and nothing else are merged into one rule per resource, their verbs joined.
func compactRules(rules []rbacv1.PolicyRule) []rbacv1.PolicyRule {
	type simple struct {
		group, resource string
		named           bool
		name            string
	}
	out := make([]rbacv1.PolicyRule, 0, len(rules))
	merged := map[simple]int{} // index in out
	for _, r := range rules {
		plain := rbacv1.PolicyRule{APIGroups: r.APIGroups, Resources: r.Resources, Verbs: r.Verbs, ResourceNames: r.ResourceNames}
		if len(r.ResourceNames) > 1 || len(r.NonResourceURLs) > 0 || len(r.APIGroups) != 1 || len(r.Resources) != 1 || !reflect.DeepEqual(plain, r) {
			out = append(out, r)
			continue
		}
		key := simple{group: r.APIGroups[0], resource: r.Resources[0]}
		if len(r.ResourceNames) == 1 {
			key.named, key.name = true, r.ResourceNames[0]
		}
		if i, ok := merged[key]; ok {
			out[i].Verbs = append(out[i].Verbs, r.Verbs...)
			continue
		}
		merged[key] = len(out)
		out = append(out, *r.DeepCopy())
	}
	return out
}

// compactString is Kubernetes' CompactString of a rule: {APIGroups:["..."], Resources:["..."], ...}.
func compactString(r rbacv1.PolicyRule) string {
	var parts []string
	for _, f := range []struct {
		name   string
		values []string
	}{{"APIGroups", r.APIGroups}, {"Resources", r.Resources}, {"NonResourceURLs", r.NonResourceURLs}, {"ResourceNames", r.ResourceNames}, {"Verbs", r.Verbs}} {
		if len(f.values) > 0 {
			parts = append(parts, fmt.Sprintf("%s:%q", f.name, f.values))
		}
	}
	return "{" + strings.Join(parts, ", ") + "}"
}
