package authz

import (
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"orch.io/orch/components/authn"
)

// fakePods holds pods by namespace/name; "default/broken" fails to read.
func fakePods(pods ...*corev1.Pod) PodGetter {
	byName := map[string]*corev1.Pod{}
	for _, p := range pods {
		byName[p.Namespace+"/"+p.Name] = p
	}
	return func(_ context.Context, namespace, name string) (*corev1.Pod, error) {
		if namespace+"/"+name == "default/broken" {
			return nil, errors.New("etcd unreachable")
		}
		if p, ok := byName[namespace+"/"+name]; ok {
			return p, nil
		}
		return nil, apierrors.NewNotFound(corev1.Resource("pods"), name)
	}
}

func podOn(name, node string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}, Spec: corev1.PodSpec{NodeName: node}}
}

func nodeUser(name string) *authn.UserInfo {
	return &authn.UserInfo{Name: NodeUserPrefix + name, Groups: []string{NodesGroup, authn.AllAuthenticated}}
}

func TestNodeIdentity(t *testing.T) {
	tests := []struct {
		user     *authn.UserInfo
		wantName string
		isNode   bool
	}{
		{nodeUser("node-a"), "node-a", true},
		{nodeUser(""), "", true},
		{&authn.UserInfo{Name: "system:node:node-a"}, "", false},                               // not in system:nodes
		{&authn.UserInfo{Name: "alice", Groups: []string{NodesGroup}}, "", false},              // not a node's name
		{&authn.UserInfo{Name: "System:Node:node-a", Groups: []string{NodesGroup}}, "", false}, // case matters
		{nil, "", false},
	}
	for _, tt := range tests {
		name, isNode := NodeIdentity(tt.user)
		if name != tt.wantName || isNode != tt.isNode {
			t.Errorf("NodeIdentity(%+v) = %q, %v; want %q, %v", tt.user, name, isNode, tt.wantName, tt.isNode)
		}
	}
}

// TestNodeAuthorizer is the Node mode's rule table: node-a against its own objects and node-b's,
// for each resource and verb the agent uses, and what it may not do.
func TestNodeAuthorizer(t *testing.T) {
	az := Node(fakePods(podOn("on-a", "node-a"), podOn("on-b", "node-b"), podOn("unbound", "")))
	res := func(verb, group, resource, sub, ns, name string) Attributes {
		return Attributes{User: nodeUser("node-a"), Verb: verb, APIGroup: group, APIVersion: "v1", Resource: resource,
			Subresource: sub, Namespace: ns, Name: name, ResourceRequest: true}
	}
	const (
		ownPodStatus   = `node "node-a" can only update pod status for pods with spec.nodeName set to itself`
		ownPodDelete   = `node "node-a" can only delete pods with spec.nodeName set to itself`
		ownPodEviction = `node node-a can only evict pods with spec.nodeName set to itself`
		ownLease       = "can only access node lease with the same name as the requesting node"
		leaseNamespace = `can only access leases in the "orch-node-lease" system namespace`
	)
	tests := []struct {
		name       string
		attrs      Attributes
		want       Decision
		wantReason string
		wantErr    string
	}{
		// Nodes: read all, write only its own.
		{"get own node", res("get", "", "nodes", "", "", "node-a"), DecisionAllow, "", ""},
		{"get other node", res("get", "", "nodes", "", "", "node-b"), DecisionAllow, "", ""},
		{"list nodes", res("list", "", "nodes", "", "", ""), DecisionAllow, "", ""},
		{"watch nodes", res("watch", "", "nodes", "", "", ""), DecisionAllow, "", ""},
		{"get node status", res("get", "", "nodes", "status", "", "node-b"), DecisionAllow, "", ""},
		{"create node (name checked on admission)", res("create", "", "nodes", "", "", ""), DecisionAllow, "", ""},
		{"update own node", res("update", "", "nodes", "", "", "node-a"), DecisionAllow, "", ""},
		{"patch own node", res("patch", "", "nodes", "", "", "node-a"), DecisionAllow, "", ""},
		{"update own node status", res("update", "", "nodes", "status", "", "node-a"), DecisionAllow, "", ""},
		{"patch own node status", res("patch", "", "nodes", "status", "", "node-a"), DecisionAllow, "", ""},
		{"update other node", res("update", "", "nodes", "", "", "node-b"), DecisionNoOpinion, `node "node-a" is not allowed to modify node "node-b"`, ""},
		{"patch other node status", res("patch", "", "nodes", "status", "", "node-b"), DecisionNoOpinion, `node "node-a" is not allowed to modify node "node-b"`, ""},
		{"delete own node", res("delete", "", "nodes", "", "", "node-a"), DecisionNoOpinion, "", ""},
		{"deletecollection nodes", res("deletecollection", "", "nodes", "", "", ""), DecisionNoOpinion, "", ""},

		// Certificate signing requests: request certificates, read requests, renew its own client
		// certificate unattended; never approve nor sign.
		{"create csr", res("create", "certificates.orch.io", "certificatesigningrequests", "", "", ""), DecisionAllow, "", ""},
		{"get csr", res("get", "certificates.orch.io", "certificatesigningrequests", "", "", "csr-1"), DecisionAllow, "", ""},
		{"watch csrs", res("watch", "certificates.orch.io", "certificatesigningrequests", "", "", ""), DecisionAllow, "", ""},
		{"selfnodeclient", res("create", "certificates.orch.io", "certificatesigningrequests", "selfnodeclient", "", ""), DecisionAllow, "", ""},
		{"nodeclient", res("create", "certificates.orch.io", "certificatesigningrequests", "nodeclient", "", ""), DecisionNoOpinion, "", ""},
		{"approve csr", res("update", "certificates.orch.io", "certificatesigningrequests", "approval", "", "csr-1"), DecisionNoOpinion, "", ""},
		{"sign csr", res("update", "certificates.orch.io", "certificatesigningrequests", "status", "", "csr-1"), DecisionNoOpinion, "", ""},
		{"delete csr", res("delete", "certificates.orch.io", "certificatesigningrequests", "", "", "csr-1"), DecisionNoOpinion, "", ""},

		// Pods: read all; status, delete and eviction of its own; create (mirror pods, on admission).
		{"get pod", res("get", "", "pods", "", "default", "on-b"), DecisionAllow, "", ""},
		{"list pods", res("list", "", "pods", "", "", ""), DecisionAllow, "", ""},
		{"watch pods", res("watch", "", "pods", "", "default", ""), DecisionAllow, "", ""},
		{"get pod status", res("get", "", "pods", "status", "default", "on-b"), DecisionAllow, "", ""},
		{"create pod (mirror checked on admission)", res("create", "", "pods", "", "default", ""), DecisionAllow, "", ""},
		{"patch status of own pod", res("patch", "", "pods", "status", "default", "on-a"), DecisionAllow, "", ""},
		{"update status of own pod", res("update", "", "pods", "status", "default", "on-a"), DecisionAllow, "", ""},
		{"patch status of other node's pod", res("patch", "", "pods", "status", "default", "on-b"), DecisionNoOpinion, ownPodStatus, ""},
		{"update status of unbound pod", res("update", "", "pods", "status", "default", "unbound"), DecisionNoOpinion, ownPodStatus, ""},
		{"patch status of missing pod (404 follows)", res("patch", "", "pods", "status", "default", "gone"), DecisionAllow, "", ""},
		{"delete own pod", res("delete", "", "pods", "", "default", "on-a"), DecisionAllow, "", ""},
		{"delete other node's pod", res("delete", "", "pods", "", "default", "on-b"), DecisionNoOpinion, ownPodDelete, ""},
		{"delete unbound pod", res("delete", "", "pods", "", "default", "unbound"), DecisionNoOpinion, ownPodDelete, ""},
		{"delete missing pod (404 follows)", res("delete", "", "pods", "", "default", "gone"), DecisionAllow, "", ""},
		{"delete unnamed pod", res("delete", "", "pods", "", "default", ""), DecisionNoOpinion, ownPodDelete, ""},
		{"evict own pod", res("create", "", "pods", "eviction", "default", "on-a"), DecisionAllow, "", ""},
		{"evict other node's pod", res("create", "", "pods", "eviction", "default", "on-b"), DecisionNoOpinion, ownPodEviction, ""},
		{"pod read fails", res("delete", "", "pods", "", "default", "broken"), DecisionNoOpinion, "", "etcd unreachable"},
		{"update own pod", res("update", "", "pods", "", "default", "on-a"), DecisionNoOpinion, "", ""},
		{"patch own pod", res("patch", "", "pods", "", "default", "on-a"), DecisionNoOpinion, "", ""},
		{"bind pod", res("create", "", "pods", "binding", "default", "unbound"), DecisionNoOpinion, "", ""},
		{"deletecollection pods", res("deletecollection", "", "pods", "", "default", ""), DecisionNoOpinion, "", ""},

		// Namespaces: read only.
		{"get namespace", res("get", "", "namespaces", "", "default", "default"), DecisionAllow, "", ""},
		{"list namespaces", res("list", "", "namespaces", "", "", ""), DecisionAllow, "", ""},
		{"watch namespaces", res("watch", "", "namespaces", "", "", ""), DecisionAllow, "", ""},
		{"create namespace", res("create", "", "namespaces", "", "", ""), DecisionNoOpinion, "", ""},
		{"delete namespace", res("delete", "", "namespaces", "", "default", "default"), DecisionNoOpinion, "", ""},
		{"finalize namespace", res("update", "", "namespaces", "finalize", "default", "default"), DecisionNoOpinion, "", ""},

		// Leases: read all; write its own in orch-node-lease.
		{"get own lease", res("get", "coordination.orch.io", "leases", "", "orch-node-lease", "node-a"), DecisionAllow, "", ""},
		{"list leases", res("list", "coordination.orch.io", "leases", "", "", ""), DecisionAllow, "", ""},
		{"watch leases", res("watch", "coordination.orch.io", "leases", "", "orch-node-lease", ""), DecisionAllow, "", ""},
		{"create lease (name checked on admission)", res("create", "coordination.orch.io", "leases", "", "orch-node-lease", ""), DecisionAllow, "", ""},
		{"update own lease", res("update", "coordination.orch.io", "leases", "", "orch-node-lease", "node-a"), DecisionAllow, "", ""},
		{"patch own lease", res("patch", "coordination.orch.io", "leases", "", "orch-node-lease", "node-a"), DecisionAllow, "", ""},
		{"delete own lease", res("delete", "coordination.orch.io", "leases", "", "orch-node-lease", "node-a"), DecisionAllow, "", ""},
		{"update other node's lease", res("update", "coordination.orch.io", "leases", "", "orch-node-lease", "node-b"), DecisionNoOpinion, ownLease, ""},
		{"delete other node's lease", res("delete", "coordination.orch.io", "leases", "", "orch-node-lease", "node-b"), DecisionNoOpinion, ownLease, ""},
		{"create lease elsewhere", res("create", "coordination.orch.io", "leases", "", "default", ""), DecisionNoOpinion, leaseNamespace, ""},
		{"update lease elsewhere", res("update", "coordination.orch.io", "leases", "", "default", "node-a"), DecisionNoOpinion, leaseNamespace, ""},
		{"deletecollection leases", res("deletecollection", "coordination.orch.io", "leases", "", "orch-node-lease", ""), DecisionNoOpinion,
			"can only get, create, update, patch, or delete a node lease", ""},
		{"leases of another group", res("update", "coordination.k8s.io", "leases", "", "orch-node-lease", "node-a"), DecisionNoOpinion, "", ""},

		// Events, in both groups: read, create, update, patch.
		{"create event", res("create", "events.orch.io", "events", "", "default", ""), DecisionAllow, "", ""},
		{"update event", res("update", "events.orch.io", "events", "", "default", "e1"), DecisionAllow, "", ""},
		{"patch event", res("patch", "events.orch.io", "events", "", "default", "e1"), DecisionAllow, "", ""},
		{"list events", res("list", "events.orch.io", "events", "", "", ""), DecisionAllow, "", ""},
		{"create core event", res("create", "", "events", "", "default", ""), DecisionAllow, "", ""},
		{"delete event", res("delete", "events.orch.io", "events", "", "default", "e1"), DecisionNoOpinion, "", ""},
		{"deletecollection events", res("deletecollection", "events.orch.io", "events", "", "default", ""), DecisionNoOpinion, "", ""},

		// Reviews, which the agent's own server asks for.
		{"create tokenreview", res("create", "authentication.orch.io", "tokenreviews", "", "", ""), DecisionAllow, "", ""},
		{"create subjectaccessreview", res("create", "authorization.orch.io", "subjectaccessreviews", "", "", ""), DecisionAllow, "", ""},
		{"list tokenreviews", res("list", "authentication.orch.io", "tokenreviews", "", "", ""), DecisionNoOpinion, "", ""},

		// Service accounts: get one by name, and its tokens (of its pods' accounts: the server's
		// test; without the pods' objects here, no opinion on a get).
		{"get serviceaccount", res("get", "", "serviceaccounts", "", "default", "sa"), DecisionNoOpinion, "", ""},
		{"list serviceaccounts", res("list", "", "serviceaccounts", "", "default", ""), DecisionNoOpinion, "can only create tokens for individual service accounts", ""},
		{"create token, no name", res("create", "", "serviceaccounts", "token", "default", ""), DecisionNoOpinion, "can only create tokens for individual service accounts", ""},
		{"create another subresource", res("create", "", "serviceaccounts", "other", "default", "sa"), DecisionNoOpinion, "can only create token subresource of serviceaccount", ""},

		// Everything else is left to the next authorizer.
		{"secrets", res("get", "", "secrets", "", "default", "s"), DecisionNoOpinion, "", ""},
		{"non-resource", Attributes{User: nodeUser("node-a"), Verb: "get", Path: "/healthz"}, DecisionNoOpinion, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, reason, err := az.Authorize(context.Background(), tt.attrs)
			if d != tt.want || reason != tt.wantReason {
				t.Errorf("Authorize = %v, %q; want %v, %q", d, reason, tt.want, tt.wantReason)
			}
			if (err != nil) != (tt.wantErr != "") || (err != nil && !strings.Contains(err.Error(), tt.wantErr)) {
				t.Errorf("err = %v, want %q", err, tt.wantErr)
			}
		})
	}
}

// Users that are not nodes get no opinion on anything, even what a node may do; a node user
// naming no node gets none on its own objects.
func TestNodeAuthorizerOtherUsers(t *testing.T) {
	az := Node(fakePods(podOn("on-a", "node-a")))
	tests := []struct {
		name       string
		user       *authn.UserInfo
		wantReason string
	}{
		{"ordinary user", &authn.UserInfo{Name: "alice", Groups: []string{authn.AllAuthenticated}}, ""},
		{"node name without the nodes group", &authn.UserInfo{Name: "system:node:node-a"}, ""},
		{"anonymous", &authn.UserInfo{Name: authn.AnonymousUser, Groups: []string{authn.AllUnauthenticated}}, ""},
		{"no user", nil, ""},
		{"node without a name", nodeUser(""), `unknown node for user "system:node:"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, a := range []Attributes{
				{Verb: "get", Resource: "nodes", Name: "node-a", ResourceRequest: true},
				{Verb: "patch", Resource: "pods", Subresource: "status", Namespace: "default", Name: "on-a", ResourceRequest: true},
				{Verb: "create", APIGroup: "events.orch.io", Resource: "events", Namespace: "default", ResourceRequest: true},
			} {
				a.User = tt.user
				d, reason, err := az.Authorize(context.Background(), a)
				if d != DecisionNoOpinion || reason != tt.wantReason || err != nil {
					t.Errorf("%s %s: Authorize = %v, %q, %v; want NoOpinion, %q", a.Verb, a.Resource, d, reason, err, tt.wantReason)
				}
			}
		})
	}
}

// Node comes first in a chain: what it leaves is the next authorizer's, what it allows stands.
func TestNodeInAChain(t *testing.T) {
	az, err := New("Node,AlwaysDeny", fakePods(podOn("on-a", "node-a"), podOn("on-b", "node-b")), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	patch := func(pod string) Attributes {
		return Attributes{User: nodeUser("node-a"), Verb: "patch", Resource: "pods", Subresource: "status", Namespace: "default", Name: pod, ResourceRequest: true}
	}
	if d, _, _ := az.Authorize(context.Background(), patch("on-a")); d != DecisionAllow {
		t.Errorf("own pod's status: %v, want Allow", d)
	}
	if d, reason, _ := az.Authorize(context.Background(), patch("on-b")); d != DecisionDeny || reason != AlwaysDenyReason {
		t.Errorf("other pod's status: %v %q, want the next authorizer's Deny", d, reason)
	}
}

// TestNodeRestriction is what a node may not do whatever the authorizers say: modify another
// node's objects, or pods otherwise than through status, deletion and eviction of its own.
func TestNodeRestriction(t *testing.T) {
	pods := fakePods(podOn("on-a", "node-a"), podOn("on-b", "node-b"))
	res := func(user *authn.UserInfo, verb, group, resource, sub, ns, name string) Attributes {
		return Attributes{User: user, Verb: verb, APIGroup: group, Resource: resource, Subresource: sub,
			Namespace: ns, Name: name, ResourceRequest: true}
	}
	a := nodeUser("node-a")
	tests := []struct {
		name       string
		attrs      Attributes
		wantReason string
		wantErr    string
	}{
		{"not a node", res(&authn.UserInfo{Name: "alice"}, "update", "", "nodes", "", "", "node-b"), "", ""},
		{"read", res(a, "get", "", "nodes", "", "", "node-b"), "", ""},
		{"node without a name", res(nodeUser(""), "update", "", "nodes", "", "", "node-b"), `could not determine node from user "system:node:"`, ""},
		{"own node", res(a, "update", "", "nodes", "", "", "node-a"), "", ""},
		{"own node deleted", res(a, "delete", "", "nodes", "", "", "node-a"), "", ""},
		{"other node", res(a, "patch", "", "nodes", "status", "", "node-b"), `node "node-a" is not allowed to modify node "node-b"`, ""},
		{"other node deleted", res(a, "delete", "", "nodes", "", "", "node-b"), `node "node-a" is not allowed to modify node "node-b"`, ""},
		{"node create (body checked on create)", res(a, "create", "", "nodes", "", "", ""), "", ""},
		{"pod create (body checked on create)", res(a, "create", "", "pods", "", "default", ""), "", ""},
		{"own pod deleted", res(a, "delete", "", "pods", "", "default", "on-a"), "", ""},
		{"other pod deleted", res(a, "delete", "", "pods", "", "default", "on-b"), `node "node-a" can only delete pods with spec.nodeName set to itself`, ""},
		{"pod updated", res(a, "update", "", "pods", "", "default", "on-a"), `unexpected operation "UPDATE", node "node-a" can only create and delete mirror pods`, ""},
		{"pods deleted as a collection", res(a, "deletecollection", "", "pods", "", "default", ""), `unexpected operation "DELETE", node "node-a" can only create and delete mirror pods`, ""},
		{"other pod's status", res(a, "update", "", "pods", "status", "default", "on-b"), `node "node-a" can only update pod status for pods with spec.nodeName set to itself`, ""},
		{"other pod evicted", res(a, "create", "", "pods", "eviction", "default", "on-b"), "node node-a can only evict pods with spec.nodeName set to itself", ""},
		{"pod bound", res(a, "create", "", "pods", "binding", "default", "on-a"), `unexpected pod subresource "binding", only 'status' and 'eviction' are allowed`, ""},
		{"pod read fails", res(a, "patch", "", "pods", "status", "default", "broken"), "", "etcd unreachable"},
		{"lease elsewhere", res(a, "create", "coordination.orch.io", "leases", "", "default", ""), `can only access leases in the "orch-node-lease" system namespace`, ""},
		{"other lease", res(a, "update", "coordination.orch.io", "leases", "", "orch-node-lease", "node-b"), "can only access node lease with the same name as the requesting node", ""},
		{"own lease", res(a, "update", "coordination.orch.io", "leases", "", "orch-node-lease", "node-a"), "", ""},
		{"secrets are not restricted", res(a, "delete", "", "secrets", "", "default", "s"), "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reason, err := NodeRestriction(context.Background(), tt.attrs, pods)
			if reason != tt.wantReason {
				t.Errorf("reason = %q, want %q", reason, tt.wantReason)
			}
			if (err != nil) != (tt.wantErr != "") || (err != nil && !strings.Contains(err.Error(), tt.wantErr)) {
				t.Errorf("err = %v, want %q", err, tt.wantErr)
			}
		})
	}
}
