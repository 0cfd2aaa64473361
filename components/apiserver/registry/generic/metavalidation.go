package generic

import (
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	v1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ValidateObjectMetaUpdate is apivalidation.ValidateObjectMetaUpdate's answer. Where the update
// provably breaks none of its rules before ownerReferences (metadata's identity and times kept,
// every label and annotation key well formed), it runs only the rules of ownerReferences and
// managedFields: apimachinery matches every label key and value with a regular expression and
// compares the immutable fields through equality.Semantic, an eighth of the store's update of a
// node's status or a lease. Anything it cannot tell for sure is apimachinery's to answer.
func ValidateObjectMetaUpdate(n, o *metav1.ObjectMeta, path *field.Path) field.ErrorList {
	if !metaUpdateKeepsRules(n, o) {
		return apivalidation.ValidateObjectMetaUpdate(n, o, path)
	}
	var errs field.ErrorList
	if len(n.OwnerReferences) > 0 {
		errs = append(errs, apivalidation.ValidateOwnerReferences(n.OwnerReferences, path.Child("ownerReferences"))...)
	}
	if len(n.ManagedFields) > 0 {
		errs = append(errs, v1validation.ValidateManagedFields(n.ManagedFields, path.Child("managedFields"), v1validation.CoveredByDeclarative)...)
	}
	return errs
}

// metaUpdateKeepsRules tells whether apimachinery's update rules for metadata, all but those of
// ownerReferences and managedFields, find nothing in n over o. false is "not shown".
func metaUpdateKeepsRules(n, o *metav1.ObjectMeta) bool {
	if o.DeletionTimestamp != nil || n.DeletionTimestamp != nil || n.ResourceVersion == "" ||
		n.Generation < 0 || n.Generation < o.Generation ||
		n.Name != o.Name || n.Namespace != o.Namespace || n.UID != o.UID ||
		n.CreationTimestamp.UTC() != o.CreationTimestamp.UTC() { // equality.Semantic's rule for a Time
		return false
	}
	if (n.DeletionGracePeriodSeconds == nil) != (o.DeletionGracePeriodSeconds == nil) ||
		n.DeletionGracePeriodSeconds != nil && *n.DeletionGracePeriodSeconds != *o.DeletionGracePeriodSeconds {
		return false
	}
	for k, v := range n.Labels {
		if !isLabelKey(k) || !isLabelValue(v) {
			return false
		}
	}
	for k := range n.Annotations {
		// apimachinery checks the key lowered: a key isLabelKey takes is ASCII, its prefix
		// already lower-case, and lowering its name keeps it one.
		if !isLabelKey(k) {
			return false
		}
	}
	return len(n.Annotations) == 0 || apivalidation.ValidateAnnotationsSize(n.Annotations) == nil
}

// isLabelKey is content.IsLabelKey finding nothing: an optional DNS subdomain and '/', then a
// name of at most 63 alphanumerics, '-', '_' or '.', starting and ending alphanumeric.
func isLabelKey(k string) bool {
	for i := range len(k) {
		if k[i] == '/' {
			return isDNS1123Subdomain(k[:i]) && isLabelName(k[i+1:])
		}
	}
	return isLabelName(k)
}

// isLabelValue is content.IsLabelValue finding nothing: empty, or a label key's name.
func isLabelValue(v string) bool { return v == "" || isLabelName(v) }

// isLabelName is a label key's name part: ([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9], at most
// 63 bytes. A '/' in it is refused, as a key with two is.
func isLabelName(s string) bool {
	if len(s) == 0 || len(s) > 63 || !isAlnum(s[0]) || !isAlnum(s[len(s)-1]) {
		return false
	}
	for i := range len(s) {
		if c := s[i]; !isAlnum(c) && c != '-' && c != '_' && c != '.' {
			return false
		}
	}
	return true
}

// isDNS1123Subdomain is content.IsDNS1123Subdomain finding nothing: at most 253 bytes of labels
// [a-z0-9]([-a-z0-9]*[a-z0-9])? joined by '.'.
func isDNS1123Subdomain(s string) bool {
	if len(s) == 0 || len(s) > 253 {
		return false
	}
	start := 0
	for i := 0; i <= len(s); i++ {
		if i < len(s) && s[i] != '.' {
			if c := s[i]; !isLowerAlnum(c) && c != '-' {
				return false
			}
			continue
		}
		if i == start || !isLowerAlnum(s[start]) || !isLowerAlnum(s[i-1]) {
			return false
		}
		start = i + 1
	}
	return true
}

func isAlnum(c byte) bool { return isLowerAlnum(c) || 'A' <= c && c <= 'Z' }

func isLowerAlnum(c byte) bool { return 'a' <= c && c <= 'z' || '0' <= c && c <= '9' }
