package authz

import (
	"context"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"orch.io/orch/components/authn"
)

// Node identities, as Kubernetes' node identifier reads them.
const (
	// NodeUserPrefix starts the user name of a node: system:node:<name>.
	NodeUserPrefix = "system:node:"
	// NodesGroup is the group every node belongs to.
	NodesGroup = "system:nodes"
	// NodeLeaseNamespace holds the nodes' heartbeat leases.
	NodeLeaseNamespace = "orch-node-lease"
)

// API groups the Node authorizer names.
const (
	coordinationGroup = "coordination.orch.io"
	eventsGroup       = "events.orch.io"
	certificatesGroup = "certificates.orch.io"
)

var (
	authenticationGroup = authn.TokenReviewGroupVersion.Group
	authorizationGroup  = SubjectAccessReviewGroupVersion.Group
)

// NodeIdentity tells whether u is a node and which: a user system:node:<name> in group
// system:nodes. name is empty for a node whose user name names none.
func NodeIdentity(u *authn.UserInfo) (name string, isNode bool) {
	if u == nil || !strings.HasPrefix(u.Name, NodeUserPrefix) {
		return "", false
	}
	for _, g := range u.Groups {
		if g == NodesGroup {
			return strings.TrimPrefix(u.Name, NodeUserPrefix), true
		}
	}
	return "", false
}

// PodGetter reads a pod of the API server; a missing pod is a NotFound Status error.
type PodGetter func(ctx context.Context, namespace, name string) (*corev1.Pod, error)

// Node returns the authorizer of mode Node: Kubernetes' Node authorizer together with the rules of
// its system:node role, within the limits of NodeRestriction. A node may read nodes, pods,
// namespaces, leases, events and certificate signing requests; request certificates (renewing
// its own client certificate without approval by a person); write its own Node and its status, its own Lease in
// orch-node-lease, the status of the pods bound to it, and events; delete and evict the pods bound
// to it; create pods (its mirror pods) and ask for token and subject access reviews. Which pods
// are bound to it is read through pods.
//
// Creates name their object in the body, which an authorizer does not see: they are allowed here
// and the server's NodeRestriction admission checks the object (its own Node, its own Lease, a
// mirror pod bound to it). Everything else, and every request not from a node, is NoOpinion, so
// the next authorizer decides.
func Node(pods PodGetter) Authorizer {
	return NodeWithObjects(pods, nil)
}

// ObjectRefs tells whether a pod bound to node refers to the object namespace/name of resource
// (configmaps, secrets, or serviceaccounts it runs as), as the edges of Kubernetes' node authorizer graph do.
type ObjectRefs func(ctx context.Context, node, namespace, resource, name string) (bool, error)

// NodeWithObjects is Node that also lets a node read the configmaps and secrets its pods refer
// to, one by name (a get, or a list or watch selecting metadata.name), read through refs.
func NodeWithObjects(pods PodGetter, refs ObjectRefs) Authorizer {
	return nodeAuthorizer{pods: pods, refs: refs}
}

type nodeAuthorizer struct {
	pods PodGetter
	refs ObjectRefs
}

// podObjects are the resources a node reads only when a pod bound to it refers to them.
var podObjects = map[string]bool{"/configmaps": true, "/secrets": true}

var readVerbs = map[string]bool{"get": true, "list": true, "watch": true}

// nodeRole is what the system:node role grants on the resources NodeRestriction narrows:
// group/resource/subresource to verbs.
var nodeRole = map[string]map[string]bool{
	"/nodes/":                              {"create": true, "update": true, "patch": true},
	"/nodes/status":                        {"update": true, "patch": true},
	"/pods/":                               {"create": true, "delete": true},
	"/pods/status":                         {"update": true, "patch": true},
	"/pods/eviction":                       {"create": true},
	coordinationGroup + "/leases/":         {"create": true, "update": true, "patch": true, "delete": true},
	"/events/":                             {"create": true, "update": true, "patch": true},
	eventsGroup + "/events/":               {"create": true, "update": true, "patch": true},
	authenticationGroup + "/tokenreviews/": {"create": true},
	authorizationGroup + "/subjectaccessreviews/": {"create": true},
	// A node requests its certificates and, without RBAC to bind Kubernetes'
	// selfnodeclient role to system:nodes, renews its own client certificate unattended.
	certificatesGroup + "/certificatesigningrequests/":               {"create": true},
	certificatesGroup + "/certificatesigningrequests/selfnodeclient": {"create": true},
}

// readable are the resources a node may get, list and watch, with their status.
var readable = map[string]bool{
	"/nodes": true, "/pods": true, "/namespaces": true, coordinationGroup + "/leases": true,
	"/events": true, eventsGroup + "/events": true, certificatesGroup + "/certificatesigningrequests": true,
}

func (n nodeAuthorizer) Authorize(ctx context.Context, a Attributes) (Decision, string, error) {
	node, isNode := NodeIdentity(a.User)
	if !isNode {
		return DecisionNoOpinion, "", nil
	}
	if node == "" {
		return DecisionNoOpinion, fmt.Sprintf("unknown node for user %q", a.User.Name), nil
	}
	if !a.ResourceRequest {
		return DecisionNoOpinion, "", nil
	}
	resource := a.APIGroup + "/" + a.Resource
	if readVerbs[a.Verb] && readable[resource] && (a.Subresource == "" || a.Subresource == "status") {
		return DecisionAllow, "", nil
	}
	if podObjects[resource] && a.Subresource == "" && readVerbs[a.Verb] {
		return n.authorizeObject(ctx, node, a)
	}
	if resource == "/serviceaccounts" {
		// A node reads the service accounts its pods run as (for credential provider plugins in
		// service account token mode, as Kubernetes' node authorizer allows with
		// KubeletServiceAccountTokenForCredentialProviders, on by default) and creates their tokens.
		if a.Verb == "get" && a.Subresource == "" {
			return n.authorizeObject(ctx, node, a)
		}
		return n.authorizeCreateToken(ctx, node, a)
	}
	if resource == coordinationGroup+"/leases" && !nodeRole[resource+"/"][a.Verb] {
		return DecisionNoOpinion, "can only get, create, update, patch, or delete a node lease", nil
	}
	if !nodeRole[resource+"/"+a.Subresource][a.Verb] {
		return DecisionNoOpinion, "", nil
	}
	reason, err := restrict(ctx, node, a, n.pods)
	if err != nil || reason != "" {
		return DecisionNoOpinion, reason, err
	}
	return DecisionAllow, "", nil
}

// RulesFor is Kubernetes' answer: what a node may do depends on the pods bound to it, which are not
// listed as rules; anyone else gets nothing from this authorizer.
func (n nodeAuthorizer) RulesFor(_ context.Context, user *authn.UserInfo, _ string) (Rules, error) {
	if _, isNode := NodeIdentity(user); isNode {
		return Rules{Incomplete: true}, errNodeRules
	}
	return Rules{}, nil
}

var errNodeRules = errors.New("node authorizer does not support user rule resolution")

// authorizeObject is authorizeReadNamespacedObject: one named object, referred to by a pod bound
// to node.
func (n nodeAuthorizer) authorizeObject(ctx context.Context, node string, a Attributes) (Decision, string, error) {
	if a.Name == "" {
		return DecisionNoOpinion, "No Object name found", nil
	}
	if n.refs == nil {
		return DecisionNoOpinion, "", nil
	}
	ok, err := n.refs(ctx, node, a.Namespace, a.Resource, a.Name)
	if err != nil {
		return DecisionNoOpinion, "", err
	}
	if !ok {
		return DecisionNoOpinion, fmt.Sprintf("no relationship found between node '%s' and this object", node), nil
	}
	return DecisionAllow, "", nil
}

// authorizeCreateToken is Kubernetes' authorizeCreateToken: a node creates tokens of the service
// accounts its pods run as, one by name, and nothing else of service accounts.
func (n nodeAuthorizer) authorizeCreateToken(ctx context.Context, node string, a Attributes) (Decision, string, error) {
	if a.Verb != "create" || a.Name == "" {
		return DecisionNoOpinion, "can only create tokens for individual service accounts", nil
	}
	if a.Subresource != "token" {
		return DecisionNoOpinion, "can only create token subresource of serviceaccount", nil
	}
	return n.authorizeObject(ctx, node, a)
}

// NodeRestriction is Kubernetes' NodeRestriction admission for the writes whose object the
// request names: whatever the authorizers allow, a node modifies only its own Node, its own Lease
// in orch-node-lease, and the pods bound to it (their status, their deletion, their eviction), and
// writes no other pod. It answers why a request of a is refused, or "" when the request is not a
// node's or is within those limits. Creates pass here: the object in their body is checked when
// it is created.
func NodeRestriction(ctx context.Context, a Attributes, pods PodGetter) (reason string, err error) {
	node, isNode := NodeIdentity(a.User)
	if !isNode || !a.ResourceRequest || readVerbs[a.Verb] {
		return "", nil
	}
	if node == "" {
		return fmt.Sprintf("could not determine node from user %q", a.User.Name), nil
	}
	return restrict(ctx, node, a, pods)
}

// operations are Kubernetes' admission operations of the write verbs.
var operations = map[string]string{
	"create": "CREATE", "update": "UPDATE", "patch": "UPDATE", "delete": "DELETE", "deletecollection": "DELETE",
}

// restrict is NodeRestriction for node, in Kubernetes' words.
func restrict(ctx context.Context, node string, a Attributes, pods PodGetter) (string, error) {
	op := operations[a.Verb]
	switch a.APIGroup + "/" + a.Resource {
	case "/nodes":
		if op != "CREATE" && a.Name != node {
			return fmt.Sprintf("node %q is not allowed to modify node %q", node, a.Name), nil
		}
	case "/pods":
		switch {
		case a.Subresource == "" && op == "CREATE":
		case a.Subresource == "" && a.Verb == "delete":
			return boundTo(ctx, node, a, pods, fmt.Sprintf("node %q can only delete pods with spec.nodeName set to itself", node))
		case a.Subresource == "":
			return fmt.Sprintf("unexpected operation %q, node %q can only create and delete mirror pods", op, node), nil
		case a.Subresource == "status" && op == "UPDATE":
			return boundTo(ctx, node, a, pods, fmt.Sprintf("node %q can only update pod status for pods with spec.nodeName set to itself", node))
		case a.Subresource == "eviction" && op == "CREATE":
			return boundTo(ctx, node, a, pods, fmt.Sprintf("node %s can only evict pods with spec.nodeName set to itself", node))
		case a.Subresource == "status" || a.Subresource == "eviction":
			return fmt.Sprintf("unexpected operation %q", op), nil
		default:
			return fmt.Sprintf("unexpected pod subresource %q, only 'status' and 'eviction' are allowed", a.Subresource), nil
		}
	case coordinationGroup + "/leases":
		if a.Namespace != NodeLeaseNamespace {
			return fmt.Sprintf("can only access leases in the %q system namespace", NodeLeaseNamespace), nil
		}
		if op != "CREATE" && a.Name != node {
			return "can only access node lease with the same name as the requesting node", nil
		}
	}
	return "", nil
}

// boundTo refuses, with reason, a request on a pod not bound to node. A pod that does not exist is
// not refused: the request answers 404, as Kubernetes' NodeRestriction does, so an agent
// confirming a deletion already done is told the pod is gone rather than forbidden.
func boundTo(ctx context.Context, node string, a Attributes, pods PodGetter, reason string) (string, error) {
	if a.Name == "" {
		return reason, nil
	}
	pod, err := pods(ctx, a.Namespace, a.Name)
	switch {
	case apierrors.IsNotFound(err):
		return "", nil
	case err != nil:
		return "", fmt.Errorf("node restriction: reading pod %s/%s: %w", a.Namespace, a.Name, err)
	case pod.Spec.NodeName != node:
		return reason, nil
	}
	return "", nil
}
