package server

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"orch.io/orch/components/apiserver/registry/core"
	"orch.io/orch/components/authn"
	"orch.io/orch/components/authz"
	"orch.io/orch/components/authz/rbac"
)

// nodeEnv serves with the Node mode first in mode (a --authorization-mode value; RBAC over the
// server's roles and bindings when it names it), and tokens for node-a, node-b and an administrator.
func nodeEnv(t *testing.T, mode string, tune ...func(*Config)) *env {
	t.Helper()
	path := filepath.Join(t.TempDir(), "tokens.csv")
	tokens := "node-a,system:node:node-a,n-a,system:nodes\nnode-b,system:node:node-b,n-b,system:nodes\nadmin,admin,u-1,admins\n"
	if err := os.WriteFile(path, []byte(tokens), 0o600); err != nil {
		t.Fatal(err)
	}
	tf, err := authn.NewTokenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	node := &NodeAuthorization{}
	roles := rbac.NewIndex()
	az, err := authz.New(mode, node.Pod, node.References, rbac.Authorizer(roles))
	if err != nil {
		t.Fatal(err)
	}
	// The administrator may do anything, whatever the mode; no one else gets more than it says.
	admin := authz.AuthorizerFunc(func(_ context.Context, a authz.Attributes) (authz.Decision, string, error) {
		if a.User != nil && a.User.Name == "admin" {
			return authz.DecisionAllow, "", nil
		}
		return authz.DecisionNoOpinion, "", nil
	})
	return newEnv(t, append([]func(*Config){func(c *Config) {
		c.Authenticator = authn.Union(tf)
		c.Authorizer = authz.Union(admin, az)
		c.Node = node
		if slices.Contains(strings.Split(mode, ","), authz.ModeRBAC) {
			c.Roles = roles
		}
	}}, tune...)...)
}

func as(token string) []string { return []string{"Authorization", "Bearer " + token} }

// mirrorOf is a mirror pod node would create for its static pod name, owned by its Node nodeUID.
func mirrorOf(name, node string, nodeUID types.UID, mutate ...func(*corev1.Pod)) *corev1.Pod {
	controller := true
	return podBody(name, append([]func(*corev1.Pod){func(p *corev1.Pod) {
		p.Annotations = map[string]string{core.MirrorPodAnnotation: "static-uid"}
		p.Spec.NodeName = node
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: node, UID: nodeUID, Controller: &controller}}
	}}, mutate...)...)
}

func registerNode(t *testing.T, e *env, name string) *corev1.Node {
	t.Helper()
	r := e.do("POST", "/api/v1/nodes", &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"orch.io/hostname": name}}}, as(name)...)
	if r.code != http.StatusCreated {
		t.Fatalf("%s registering itself: %d %s", name, r.code, r.body)
	}
	n := &corev1.Node{}
	if err := json.Unmarshal(r.body, n); err != nil {
		t.Fatal(err)
	}
	return n
}

// A node creates only its own Node, its own Lease and its mirror pods: the objects are checked as
// created, with Kubernetes' NodeRestriction messages, even when a later authorizer allows all.
func TestNodeRestrictionOnCreate(t *testing.T) {
	e := nodeEnv(t, "Node,AlwaysAllow")
	nodeA := registerNode(t, e, "node-a")
	registerNode(t, e, "node-b")
	yes := true
	tests := []struct {
		name, token, path string
		body              any
		wantMessage       string // empty: created
	}{
		{"another node's Node", "node-a", "/api/v1/nodes", &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-c"}},
			`nodes "node-c" is forbidden: node "node-a" is not allowed to modify node "node-c"`},
		{"restricted labels", "node-a", "/api/v1/nodes", &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a", Labels: map[string]string{
			"node-restriction.orch.io/pool": "gold", "orch.io/role": "x", "example.com/team": "a", "node.orch.io/ok": "y"}}},
			`nodes "node-a" is forbidden: node "node-a" is not allowed to set the following labels: node-restriction.orch.io/pool, orch.io/role`},
		{"a pod that is not a mirror", "node-a", "/api/v1/namespaces/default/pods", podBody("web", func(p *corev1.Pod) { p.Spec.NodeName = "node-a" }),
			`pods "web" is forbidden: pod does not have "orch.io/config.mirror" annotation, node "node-a" can only create mirror pods`},
		{"a mirror pod bound elsewhere", "node-a", "/api/v1/namespaces/default/pods", mirrorOf("m1", "node-b", nodeA.UID),
			`pods "m1" is forbidden: node "node-a" can only create pods with spec.nodeName set to itself`},
		{"a mirror pod without owner", "node-a", "/api/v1/namespaces/default/pods", mirrorOf("m2", "node-a", nodeA.UID, func(p *corev1.Pod) { p.OwnerReferences = nil }),
			`pods "m2" is forbidden: node "node-a" can only create pods with an owner reference set to itself`},
		{"a mirror pod owned by another node", "node-a", "/api/v1/namespaces/default/pods", mirrorOf("m3", "node-a", nodeA.UID, func(p *corev1.Pod) { p.OwnerReferences[0].Name = "node-b" }),
			`pods "m3" is forbidden: node "node-a" can only create pods with an owner reference set to itself`},
		{"a mirror pod not controlled by its node", "node-a", "/api/v1/namespaces/default/pods", mirrorOf("m4", "node-a", nodeA.UID, func(p *corev1.Pod) { p.OwnerReferences[0].Controller = nil }),
			`pods "m4" is forbidden: node "node-a" can only create pods with a controller owner reference set to itself`},
		{"a mirror pod blocking its owner's deletion", "node-a", "/api/v1/namespaces/default/pods", mirrorOf("m5", "node-a", nodeA.UID, func(p *corev1.Pod) { p.OwnerReferences[0].BlockOwnerDeletion = &yes }),
			`pods "m5" is forbidden: node "node-a" must not set blockOwnerDeletion on an owner reference`},
		{"a mirror pod of a former node", "node-a", "/api/v1/namespaces/default/pods", mirrorOf("m6", "node-a", "old-uid"),
			`pods "m6" is forbidden: node node-a UID mismatch: expected old-uid got ` + string(nodeA.UID)},
		{"a mirror pod with a service account", "node-a", "/api/v1/namespaces/default/pods", mirrorOf("m7", "node-a", nodeA.UID, func(p *corev1.Pod) { p.Spec.ServiceAccountName = "builder" }),
			`pods "m7" is forbidden: node "node-a" can not create pods that reference a service account`},
		{"a mirror pod mounting a secret", "node-a", "/api/v1/namespaces/default/pods", mirrorOf("m8", "node-a", nodeA.UID, func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "token"}}}}
		}), `pods "m8" is forbidden: node "node-a" can not create pods that reference secrets`},
		{"a mirror pod reading a configmap", "node-a", "/api/v1/namespaces/default/pods", mirrorOf("m9", "node-a", nodeA.UID, func(p *corev1.Pod) {
			p.Spec.Containers[0].EnvFrom = []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}}}}
		}), `pods "m9" is forbidden: node "node-a" can not create pods that reference configmaps`},
		{"a mirror pod claiming a volume", "node-a", "/api/v1/namespaces/default/pods", mirrorOf("m10", "node-a", nodeA.UID, func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{{Name: "d", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}}
		}), `pods "m10" is forbidden: node "node-a" can not create pods that reference persistentvolumeclaims`},
		{"its mirror pod", "node-a", "/api/v1/namespaces/default/pods", mirrorOf("static-node-a", "node-a", nodeA.UID), ""},
		{"another node's lease", "node-a", "/apis/coordination.orch.io/v1/namespaces/orch-node-lease/leases", &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "node-b"}},
			`leases.coordination.orch.io "node-b" is forbidden: can only access node lease with the same name as the requesting node`},
		{"a lease elsewhere", "node-a", "/apis/coordination.orch.io/v1/namespaces/default/leases", &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}},
			`leases.coordination.orch.io is forbidden: can only access leases in the "orch-node-lease" system namespace`},
		{"its lease", "node-a", "/apis/coordination.orch.io/v1/namespaces/orch-node-lease/leases", &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}}, ""},
		{"a pod by someone who is not a node", "admin", "/api/v1/namespaces/default/pods", podBody("web", func(p *corev1.Pod) { p.Spec.NodeName = "node-b" }), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := e.do("POST", tt.path, tt.body, as(tt.token)...)
			if tt.wantMessage == "" {
				if r.code != http.StatusCreated {
					t.Fatalf("%d %s, want 201", r.code, r.body)
				}
				return
			}
			if s := r.expectStatus(t, http.StatusForbidden, metav1.StatusReasonForbidden); s.Message != tt.wantMessage {
				t.Errorf("message\n  %s\nwant\n  %s", s.Message, tt.wantMessage)
			}
		})
	}
}

// Writes that name their object are held to the node's own objects even when a later
// authorizer would allow them; a missing pod is 404, not 403.
func TestNodeRestrictionOnWrites(t *testing.T) {
	e := nodeEnv(t, "Node,AlwaysAllow")
	registerNode(t, e, "node-a")
	registerNode(t, e, "node-b")
	for _, p := range []*corev1.Pod{podBody("on-a", func(p *corev1.Pod) { p.Spec.NodeName = "node-a" }), podBody("on-b", func(p *corev1.Pod) { p.Spec.NodeName = "node-b" })} {
		if r := e.do("POST", "/api/v1/namespaces/default/pods", p, as("admin")...); r.code != http.StatusCreated {
			t.Fatalf("%d %s", r.code, r.body)
		}
	}
	status := `{"status":{"phase":"Running"}}`
	mergePatch := []string{"Content-Type", "application/merge-patch+json"}
	tests := []struct {
		name, method, path string
		body               any
		header             []string
		wantCode           int
		wantMessage        string
	}{
		{"patch its Node", "PATCH", "/api/v1/nodes/node-a", `{"metadata":{"labels":{"a":"b"}}}`, mergePatch, 200, ""},
		{"label its Node as an agent may", "PATCH", "/api/v1/nodes/node-a", `{"metadata":{"labels":{"node.orch.io/pool":"blue","topology.orch.io/zone":"z1"}}}`, mergePatch, 200, ""},
		{"label its Node beyond", "PATCH", "/api/v1/nodes/node-a", `{"metadata":{"labels":{"orch.io/role":"control","node-restriction.orch.io/tier":"gold","orch.io/hostname":null}}}`, mergePatch, 403,
			`nodes "node-a" is forbidden: is not allowed to modify labels: node-restriction.orch.io/tier, orch.io/role`},
		{"taint its Node", "PATCH", "/api/v1/nodes/node-a", `{"spec":{"taints":[{"key":"k","effect":"NoSchedule"}]}}`, mergePatch, 403,
			`nodes "node-a" is forbidden: node "node-a" is not allowed to modify taints`},
		{"patch its Node's status", "PATCH", "/api/v1/nodes/node-a/status", `{"status":{"phase":"Running"}}`, mergePatch, 200, ""},
		{"patch another Node", "PATCH", "/api/v1/nodes/node-b", `{"metadata":{"labels":{"a":"b"}}}`, mergePatch, 403,
			`nodes "node-b" is forbidden: node "node-a" is not allowed to modify node "node-b"`},
		{"patch another Node's status", "PATCH", "/api/v1/nodes/node-b/status", `{"status":{"phase":"Running"}}`, mergePatch, 403,
			`nodes "node-b" is forbidden: node "node-a" is not allowed to modify node "node-b"`},
		{"delete another Node", "DELETE", "/api/v1/nodes/node-b", nil, nil, 403,
			`nodes "node-b" is forbidden: node "node-a" is not allowed to modify node "node-b"`},
		{"patch its pod's status", "PATCH", "/api/v1/namespaces/default/pods/on-a/status", status, mergePatch, 200, ""},
		{"patch another node's pod's status", "PATCH", "/api/v1/namespaces/default/pods/on-b/status", status, mergePatch, 403,
			`pods "on-b" is forbidden: node "node-a" can only update pod status for pods with spec.nodeName set to itself`},
		{"patch a pod", "PATCH", "/api/v1/namespaces/default/pods/on-a", `{"metadata":{"labels":{"a":"b"}}}`, mergePatch, 403,
			`pods "on-a" is forbidden: unexpected operation "UPDATE", node "node-a" can only create and delete mirror pods`},
		{"bind a pod", "POST", "/api/v1/namespaces/default/pods/on-a/binding", `{"target":{"name":"node-a"}}`, nil, 403,
			`pods "on-a" is forbidden: unexpected pod subresource "binding", only 'status' and 'eviction' are allowed`},
		{"evict another node's pod", "POST", "/api/v1/namespaces/default/pods/on-b/eviction", `{}`, nil, 403,
			`pods "on-b" is forbidden: node node-a can only evict pods with spec.nodeName set to itself`},
		{"delete another node's pod", "DELETE", "/api/v1/namespaces/default/pods/on-b", nil, nil, 403,
			`pods "on-b" is forbidden: node "node-a" can only delete pods with spec.nodeName set to itself`},
		{"delete its pod", "DELETE", "/api/v1/namespaces/default/pods/on-a", nil, nil, 200, ""},
		{"delete a pod that is gone", "DELETE", "/api/v1/namespaces/default/pods/gone", nil, nil, 404, `pods "gone" not found`},
		{"update another node's lease", "PUT", "/apis/coordination.orch.io/v1/namespaces/orch-node-lease/leases/node-b",
			&coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "node-b"}}, nil, 403,
			`leases.coordination.orch.io "node-b" is forbidden: can only access node lease with the same name as the requesting node`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := e.do(tt.method, tt.path, tt.body, append(as("node-a"), tt.header...)...)
			if tt.wantCode < 300 {
				if r.code != tt.wantCode {
					t.Fatalf("%d %s, want %d", r.code, r.body, tt.wantCode)
				}
				return
			}
			reason := metav1.StatusReasonForbidden
			if tt.wantCode == 404 {
				reason = metav1.StatusReasonNotFound
			}
			if s := r.expectStatus(t, tt.wantCode, reason); s.Message != tt.wantMessage {
				t.Errorf("message\n  %s\nwant\n  %s", s.Message, tt.wantMessage)
			}
		})
	}
	// The administrator is not a node: NodeRestriction leaves it alone.
	if r := e.do("DELETE", "/api/v1/namespaces/default/pods/on-b", nil, as("admin")...); r.code != 200 {
		t.Fatalf("admin deleting on-b: %d %s", r.code, r.body)
	}
	if r := e.do("PATCH", "/api/v1/nodes/node-a", `{"spec":{"taints":[{"key":"k","effect":"NoSchedule"}]},"metadata":{"labels":{"orch.io/role":"x"}}}`,
		append(as("admin"), mergePatch...)...); r.code != 200 {
		t.Fatalf("admin tainting node-a: %d %s", r.code, r.body)
	}
}

// With Node alone, what it does not allow is forbidden with the authorizer's reason; what it
// allows works.
func TestNodeModeAlone(t *testing.T) {
	e := nodeEnv(t, "Node")
	registerNode(t, e, "node-a")
	if r := e.do("POST", "/api/v1/namespaces/default/pods", podBody("on-b", func(p *corev1.Pod) { p.Spec.NodeName = "node-b" }), as("admin")...); r.code != http.StatusCreated {
		t.Fatalf("%d %s", r.code, r.body)
	}
	if r := e.do("GET", "/api/v1/pods?fieldSelector=spec.nodeName%3Dnode-a", nil, as("node-a")...); r.code != 200 {
		t.Fatalf("node listing its pods: %d %s", r.code, r.body)
	}
	s := e.do("DELETE", "/api/v1/namespaces/default/pods/on-b", nil, as("node-a")...).expectStatus(t, 403, metav1.StatusReasonForbidden)
	want := `pods "on-b" is forbidden: User "system:node:node-a" cannot delete resource "pods" in API group "" in the namespace "default": node "node-a" can only delete pods with spec.nodeName set to itself`
	if s.Message != want {
		t.Errorf("message\n  %s\nwant\n  %s", s.Message, want)
	}
	s = e.do("GET", "/api/v1/namespaces/default/secrets", nil, as("node-a")...).expectStatus(t, 403, metav1.StatusReasonForbidden)
	if want := `secrets is forbidden: User "system:node:node-a" cannot list resource "secrets" in API group "" in the namespace "default": No Object name found`; s.Message != want {
		t.Errorf("message\n  %s\nwant\n  %s", s.Message, want)
	}
}
