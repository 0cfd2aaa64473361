package rbac

import (
	"slices"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// Aggregate returns the rules an aggregated cluster role gathers, as Kubernetes' clusterrole
// aggregation controller: for each of its selectors in order, the rules of the other cluster roles
// the selector matches, taken by role name, each rule once. aggregated is false for a role without
// an aggregation rule, whose rules are its own.
func Aggregate(role *rbacv1.ClusterRole, all []*rbacv1.ClusterRole) (rules []rbacv1.PolicyRule, aggregated bool, err error) {
	if role.AggregationRule == nil {
		return nil, false, nil
	}
	byName := slices.Clone(all)
	slices.SortFunc(byName, func(a, b *rbacv1.ClusterRole) int { return strings.Compare(a.Name, b.Name) })
	rules = []rbacv1.PolicyRule{}
	for i := range role.AggregationRule.ClusterRoleSelectors {
		selector, err := metav1.LabelSelectorAsSelector(&role.AggregationRule.ClusterRoleSelectors[i])
		if err != nil {
			return nil, true, err
		}
		for _, other := range byName {
			if other.Name == role.Name || !selector.Matches(labels.Set(other.Labels)) {
				continue
			}
			for _, r := range other.Rules {
				if !slices.ContainsFunc(rules, func(have rbacv1.PolicyRule) bool { return equality.Semantic.DeepEqual(have, r) }) {
					rules = append(rules, r)
				}
			}
		}
	}
	return rules, true, nil
}
