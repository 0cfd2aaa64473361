package rbac_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"orch.io/orch/components/authn"
	"orch.io/orch/components/authz"
	"orch.io/orch/components/authz/rbac"
	"orch.io/orch/components/authz/rbac/bootstrappolicy"
)

// BenchmarkAuthorize1000 authorizes requests against the bootstrap policy plus 1,000 roles and
// 1,000 role bindings (100 namespaces of 10 teams, each team's users bound to its role, 50 users
// in all in groups) and 100 cluster roles with a cluster role binding each. Requests are drawn at
// random (user, namespace, verb, resource, a quarter of them on a subresource): about a sixth are
// allowed, the rest go through every rule the user holds, the costlier case. It reports the share
// allowed and the p50 and p99 of one Authorize call; the target is a p99 under 5 us.
func BenchmarkAuthorize1000(b *testing.B) {
	x := rbac.NewIndex()
	for _, r := range bootstrappolicy.ClusterRoles() {
		x.Set(&r)
	}
	for _, rb := range bootstrappolicy.ClusterRoleBindings() {
		x.Set(&rb)
	}
	verbs := []string{"get", "list", "watch", "create", "update", "patch", "delete"}
	resources := []string{"pods", "configmaps", "secrets", "services", "deployments", "events", "leases", "jobs", "roles", "serviceaccounts"}
	groupOf := map[string]string{"deployments": "apps", "events": "events.orch.io", "leases": "coordination.orch.io", "jobs": "batch", "roles": "rbac.authorization.orch.io"}
	for ns := range 100 {
		for team := range 10 {
			name := fmt.Sprintf("team-%d", team)
			x.Set(&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: fmt.Sprintf("ns-%d", ns), Name: name}, Rules: []rbacv1.PolicyRule{
				{Verbs: verbs[:3+team%4], APIGroups: []string{"", "apps"}, Resources: resources[team%5 : team%5+3]},
				{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"pods/log"}},
				{Verbs: []string{"get", "list"}, APIGroups: []string{"events.orch.io"}, Resources: []string{"events"}},
			}})
			x.Set(&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: fmt.Sprintf("ns-%d", ns), Name: name},
				RoleRef: rbacv1.RoleRef{APIGroup: "rbac.authorization.orch.io", Kind: "Role", Name: name},
				Subjects: []rbacv1.Subject{
					{Kind: "User", APIGroup: "rbac.authorization.orch.io", Name: fmt.Sprintf("user-%d", (ns*10+team)%50)},
					{Kind: "Group", APIGroup: "rbac.authorization.orch.io", Name: fmt.Sprintf("group-%d", team)},
					{Kind: "ServiceAccount", Name: "deployer"},
				}})
		}
	}
	for i := range 100 {
		name := fmt.Sprintf("cluster-%d", i)
		x.Set(&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: []rbacv1.PolicyRule{
			{Verbs: []string{"get", "list"}, APIGroups: []string{""}, Resources: []string{"nodes", "namespaces"}},
		}})
		x.Set(&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
			RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.orch.io", Kind: "ClusterRole", Name: name},
			Subjects: []rbacv1.Subject{{Kind: "User", APIGroup: "rbac.authorization.orch.io", Name: fmt.Sprintf("admin-%d", i)}}})
	}
	x.MarkSynced()
	a := rbac.Authorizer(x)

	rng := rand.New(rand.NewPCG(1, 2))
	requests := make([]authz.Attributes, 4096)
	for i := range requests {
		u := rng.IntN(50)
		resource := resources[rng.IntN(len(resources))]
		attrs := authz.Attributes{
			User: &authn.UserInfo{Name: fmt.Sprintf("user-%d", u), Groups: []string{fmt.Sprintf("group-%d", rng.IntN(10)), "system:authenticated"}},
			Verb: verbs[rng.IntN(len(verbs))], Namespace: fmt.Sprintf("ns-%d", rng.IntN(100)), APIGroup: groupOf[resource],
			Resource: resource, Name: "x", ResourceRequest: true,
		}
		if rng.IntN(4) == 0 {
			attrs.Resource, attrs.Subresource, attrs.APIGroup = "pods", []string{"log", "exec", "status"}[rng.IntN(3)], ""
		}
		requests[i] = attrs
	}
	ctx := context.Background()
	allowed := 0
	for _, r := range requests {
		if d, _, _ := a.Authorize(ctx, r); d == authz.DecisionAllow {
			allowed++
		}
	}
	durations := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		start := time.Now()
		_, _, _ = a.Authorize(ctx, requests[i%len(requests)])
		durations = append(durations, time.Since(start))
	}
	b.StopTimer()
	b.ReportMetric(float64(allowed)/float64(len(requests)), "allowed-share")
	slices.Sort(durations)
	b.ReportMetric(float64(durations[len(durations)/2].Nanoseconds()), "p50-ns")
	b.ReportMetric(float64(durations[len(durations)*99/100].Nanoseconds()), "p99-ns")
}
