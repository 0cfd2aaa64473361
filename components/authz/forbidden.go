package authz

import (
	"fmt"
	"strings"
)

// sanitizer keeps the message from looking like HTML, as Kubernetes does. Quotes are kept.
var sanitizer = strings.NewReplacer(`&`, "&amp;", `<`, "&lt;", `>`, "&gt;")

// ForbiddenMessage returns the message of the 403 Forbidden Status Kubernetes answers for a request
// the authorizers did not allow, with ": <reason>" appended when reason is not empty:
//
//	events.events.orch.io is forbidden: User "system:anonymous" cannot list resource "events" in API group "events.orch.io" in the namespace "default"
//	events.events.orch.io "e1" is forbidden: User "alice" cannot get resource "events" in API group "events.orch.io" in the namespace "default"
//	nodes is forbidden: User "alice" cannot list resource "nodes" in API group "" at the cluster scope
//	pods "p" is forbidden: User "alice" cannot get resource "pods/log" in API group "" in the namespace "default"
//	forbidden: User "alice" cannot get path "/foo"
//
// The prefix is Kubernetes' qualified resource (resource.group, without the subresource) and the
// object name; it is "forbidden" alone for non-resource requests. The part describing the request
// has &, < and > escaped as HTML entities; the reason is kept as given.
func ForbiddenMessage(a Attributes, reason string) string {
	msg := sanitizer.Replace(describe(a))
	if reason != "" {
		msg += ": " + reason
	}
	// apierrors.NewForbidden(GroupResource{APIGroup, Resource}, Name, msg)
	qualified := a.Resource
	if a.APIGroup != "" {
		qualified = a.Resource + "." + a.APIGroup
	}
	switch {
	case a.APIGroup == "" && a.Resource == "":
		return "forbidden: " + msg
	case a.Name == "":
		return fmt.Sprintf("%s is forbidden: %s", qualified, msg)
	default:
		return fmt.Sprintf("%s %q is forbidden: %s", qualified, a.Name, msg)
	}
}

func describe(a Attributes) string {
	username := ""
	if a.User != nil {
		username = a.User.Name
	}
	if !a.ResourceRequest {
		return fmt.Sprintf("User %q cannot %s path %q", username, a.Verb, a.Path)
	}
	resource := a.Resource
	if a.Subresource != "" {
		resource += "/" + a.Subresource
	}
	if a.Namespace != "" {
		return fmt.Sprintf("User %q cannot %s resource %q in API group %q in the namespace %q",
			username, a.Verb, resource, a.APIGroup, a.Namespace)
	}
	return fmt.Sprintf("User %q cannot %s resource %q in API group %q at the cluster scope",
		username, a.Verb, resource, a.APIGroup)
}
