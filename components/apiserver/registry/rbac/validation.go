package rbac

import (
	"slices"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/validate/content"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metavalidation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	rbacapi "orch.io/orch/components/apis/rbac/v1"
)

// groupNames are the values a role reference's or a user or group subject's apiGroup may take:
// orch's name of the group, and Kubernetes', which stock clients send.
var groupNames = []string{rbacapi.GroupName, rbacapi.KubernetesGroupName}

// validName is Kubernetes' ValidateRBACName: any name that can be a path segment.
func validName(name string, _ bool) []string { return content.IsPathSegmentName(name) }

func validateRole(r *rbacv1.Role) field.ErrorList {
	errs := apivalidation.ValidateObjectMeta(&r.ObjectMeta, true, validName, field.NewPath("metadata"))
	for i, rule := range r.Rules {
		errs = append(errs, validatePolicyRule(rule, true, field.NewPath("rules").Index(i))...)
	}
	return errs
}

func validateClusterRole(r *rbacv1.ClusterRole) field.ErrorList {
	errs := apivalidation.ValidateObjectMeta(&r.ObjectMeta, false, validName, field.NewPath("metadata"))
	for i, rule := range r.Rules {
		errs = append(errs, validatePolicyRule(rule, false, field.NewPath("rules").Index(i))...)
	}
	if r.AggregationRule != nil {
		selectors := field.NewPath("aggregationRule", "clusterRoleSelectors")
		if len(r.AggregationRule.ClusterRoleSelectors) == 0 {
			errs = append(errs, field.Required(selectors, "at least one clusterRoleSelector required if aggregationRule is non-nil"))
		}
		for i := range r.AggregationRule.ClusterRoleSelectors {
			s := &r.AggregationRule.ClusterRoleSelectors[i]
			errs = append(errs, metavalidation.ValidateLabelSelector(s, metavalidation.LabelSelectorValidationOptions{}, selectors.Index(i))...)
			if _, err := metav1.LabelSelectorAsSelector(s); err != nil {
				errs = append(errs, field.Invalid(selectors.Index(i), s, "invalid label selector."))
			}
		}
	}
	return errs
}

// validatePolicyRule is Kubernetes' ValidatePolicyRule: verbs always; either non-resource URLs
// (cluster roles only) or API groups and resources.
func validatePolicyRule(rule rbacv1.PolicyRule, namespaced bool, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(rule.Verbs) == 0 {
		errs = append(errs, field.Required(p.Child("verbs"), "verbs must contain at least one value"))
	}
	if len(rule.NonResourceURLs) > 0 {
		if namespaced {
			errs = append(errs, field.Invalid(p.Child("nonResourceURLs"), rule.NonResourceURLs, "namespaced rules cannot apply to non-resource URLs"))
		}
		if len(rule.APIGroups) > 0 || len(rule.Resources) > 0 || len(rule.ResourceNames) > 0 {
			errs = append(errs, field.Invalid(p.Child("nonResourceURLs"), rule.NonResourceURLs, "rules cannot apply to both regular resources and non-resource URLs"))
		}
		return errs
	}
	if len(rule.APIGroups) == 0 {
		errs = append(errs, field.Required(p.Child("apiGroups"), "resource rules must supply at least one api group"))
	}
	if len(rule.Resources) == 0 {
		errs = append(errs, field.Required(p.Child("resources"), "resource rules must supply at least one resource"))
	}
	return errs
}

// validateBinding is Kubernetes' ValidateRoleBinding and ValidateClusterRoleBinding: a cluster
// role binding refers to a cluster role, a role binding to either kind.
func validateBinding(meta *metav1.ObjectMeta, ref rbacv1.RoleRef, subjects []rbacv1.Subject, namespaced bool) field.ErrorList {
	errs := apivalidation.ValidateObjectMeta(meta, namespaced, validName, field.NewPath("metadata"))
	refPath := field.NewPath("roleRef")
	if !slices.Contains(groupNames, ref.APIGroup) {
		errs = append(errs, field.NotSupported(refPath.Child("apiGroup"), ref.APIGroup, groupNames))
	}
	kinds := []string{rbacapi.ClusterRoleKind}
	if namespaced {
		kinds = []string{rbacapi.RoleKind, rbacapi.ClusterRoleKind}
	}
	if !slices.Contains(kinds, ref.Kind) {
		errs = append(errs, field.NotSupported(refPath.Child("kind"), ref.Kind, kinds))
	}
	if ref.Name == "" {
		errs = append(errs, field.Required(refPath.Child("name"), ""))
	} else {
		for _, msg := range validName(ref.Name, false) {
			errs = append(errs, field.Invalid(refPath.Child("name"), ref.Name, msg))
		}
	}
	for i, s := range subjects {
		errs = append(errs, validateSubject(s, namespaced, field.NewPath("subjects").Index(i))...)
	}
	return errs
}

func validateSubject(s rbacv1.Subject, namespaced bool, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if s.Name == "" {
		errs = append(errs, field.Required(p.Child("name"), ""))
	}
	switch s.Kind {
	case rbacapi.ServiceAccountKind:
		if s.Name != "" {
			for _, msg := range apivalidation.NameIsDNSSubdomain(s.Name, false) {
				errs = append(errs, field.Invalid(p.Child("name"), s.Name, msg))
			}
		}
		if s.APIGroup != "" {
			errs = append(errs, field.NotSupported(p.Child("apiGroup"), s.APIGroup, []string{""}))
		}
		if !namespaced && s.Namespace == "" {
			errs = append(errs, field.Required(p.Child("namespace"), ""))
		}
	case rbacapi.UserKind, rbacapi.GroupKind:
		if !slices.Contains(groupNames, s.APIGroup) {
			errs = append(errs, field.NotSupported(p.Child("apiGroup"), s.APIGroup, groupNames))
		}
	default:
		errs = append(errs, field.NotSupported(p.Child("kind"), s.Kind, []string{rbacapi.ServiceAccountKind, rbacapi.UserKind, rbacapi.GroupKind}))
	}
	return errs
}

// validateRefUnchanged is the update rule of both bindings: a binding's role cannot change.
func validateRefUnchanged(ref, old rbacv1.RoleRef) field.ErrorList {
	if ref != old {
		return field.ErrorList{field.Invalid(field.NewPath("roleRef"), ref, "cannot change roleRef")}
	}
	return nil
}

// defaultGroups is Kubernetes' defaulting of v1: a role reference and a user or group subject that
// name no group are in RBAC's (here by orch's name).
func defaultGroups(ref *rbacv1.RoleRef, subjects []rbacv1.Subject) {
	if ref.APIGroup == "" {
		ref.APIGroup = rbacapi.GroupName
	}
	for i := range subjects {
		if s := &subjects[i]; s.APIGroup == "" && (s.Kind == rbacapi.UserKind || s.Kind == rbacapi.GroupKind) {
			s.APIGroup = rbacapi.GroupName
		}
	}
}
