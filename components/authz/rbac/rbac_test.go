package rbac

import (
	"context"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"orch.io/orch/components/authn"
	"orch.io/orch/components/authz"
)

func res(verb, group, resource, sub, ns, name string) authz.Attributes {
	return authz.Attributes{Verb: verb, APIGroup: group, Resource: resource, Subresource: sub, Namespace: ns, Name: name, ResourceRequest: true}
}

func TestRuleAllows(t *testing.T) {
	pods := rbacv1.PolicyRule{Verbs: []string{"get", "list"}, APIGroups: []string{""}, Resources: []string{"pods"}}
	logs := rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"pods/log"}}
	anySub := rbacv1.PolicyRule{Verbs: []string{"*"}, APIGroups: []string{""}, Resources: []string{"*/exec"}}
	all := rbacv1.PolicyRule{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}}
	named := rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{"app"}}
	k8sRoles := rbacv1.PolicyRule{Verbs: []string{"create"}, APIGroups: []string{"rbac.authorization.k8s.io"}, Resources: []string{"roles"}}
	orchCSR := rbacv1.PolicyRule{Verbs: []string{"update"}, APIGroups: []string{"certificates.orch.io"}, Resources: []string{"certificatesigningrequests/approval"}}
	urls := rbacv1.PolicyRule{Verbs: []string{"get"}, NonResourceURLs: []string{"/healthz", "/apis/*"}}
	for _, tc := range []struct {
		name string
		rule rbacv1.PolicyRule
		a    authz.Attributes
		want bool
	}{
		{"pods: get pods", pods, res("get", "", "pods", "", "ns", "p"), true},
		{"pods: delete pods", pods, res("delete", "", "pods", "", "ns", "p"), false},
		{"pods: get pods/log", pods, res("get", "", "pods", "log", "ns", "p"), false},
		{"pods: get pods/exec", pods, res("get", "", "pods", "exec", "ns", "p"), false},
		{"pods/log: get pods/log", logs, res("get", "", "pods", "log", "ns", "p"), true},
		{"pods/log: get pods", logs, res("get", "", "pods", "", "ns", "p"), false},
		{"pods/log: get pods/exec", logs, res("get", "", "pods", "exec", "ns", "p"), false},
		{"*/exec: create pods/exec", anySub, res("create", "", "pods", "exec", "ns", "p"), true},
		{"*/exec: create pods", anySub, res("create", "", "pods", "", "ns", "p"), false},
		{"*/exec: get pods/log", anySub, res("get", "", "pods", "log", "ns", "p"), false},
		{"*: any subresource", all, res("create", "", "pods", "exec", "ns", "p"), true},
		{"*: any group", all, res("list", "events.orch.io", "events", "", "", ""), true},
		{"names: the named one", named, res("get", "", "configmaps", "", "ns", "app"), true},
		{"names: another", named, res("get", "", "configmaps", "", "ns", "other"), false},
		{"names: a list names none", named, res("list", "", "configmaps", "", "ns", ""), false},
		{"Kubernetes' group name matches orch's", k8sRoles, res("create", "rbac.authorization.orch.io", "roles", "", "ns", ""), true},
		{"and Kubernetes' own", k8sRoles, res("create", "rbac.authorization.k8s.io", "roles", "", "ns", ""), true},
		{"orch's group name matches Kubernetes'", orchCSR, res("update", "certificates.k8s.io", "certificatesigningrequests", "approval", "", "c"), true},
		{"another group does not", k8sRoles, res("create", "apps", "roles", "", "ns", ""), false},
		{"urls: exact", urls, authz.Attributes{Verb: "get", Path: "/healthz"}, true},
		{"urls: prefix", urls, authz.Attributes{Verb: "get", Path: "/apis/events.orch.io/v1"}, true},
		{"urls: other", urls, authz.Attributes{Verb: "get", Path: "/metrics"}, false},
		{"urls: post", urls, authz.Attributes{Verb: "post", Path: "/healthz"}, false},
		{"resource rule: no path", pods, authz.Attributes{Verb: "get", Path: "/healthz"}, false},
		{"url rule: no resource", urls, res("get", "", "pods", "", "ns", ""), false},
	} {
		if got := RuleAllows(tc.a, tc.rule); got != tc.want {
			t.Errorf("%s: RuleAllows = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func subject(kind, name, ns string) rbacv1.Subject {
	s := rbacv1.Subject{Kind: kind, Name: name, Namespace: ns}
	if kind != "ServiceAccount" {
		s.APIGroup = "rbac.authorization.orch.io"
	}
	return s
}

func role(ns, name string, rules ...rbacv1.PolicyRule) *rbacv1.Role {
	return &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Rules: rules}
}

func clusterRole(name string, rules ...rbacv1.PolicyRule) *rbacv1.ClusterRole {
	return &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules}
}

func roleBinding(ns, name, kind, roleName string, subjects ...rbacv1.Subject) *rbacv1.RoleBinding {
	return &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		RoleRef: rbacv1.RoleRef{APIGroup: "rbac.authorization.orch.io", Kind: kind, Name: roleName}, Subjects: subjects}
}

func clusterBinding(name, roleName string, subjects ...rbacv1.Subject) *rbacv1.ClusterRoleBinding {
	return &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef: rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: roleName}, Subjects: subjects}
}

var (
	readPods = rbacv1.PolicyRule{Verbs: []string{"get", "list", "watch"}, APIGroups: []string{""}, Resources: []string{"pods"}}
	readAll  = rbacv1.PolicyRule{Verbs: []string{"get", "list", "watch"}, APIGroups: []string{"*"}, Resources: []string{"*"}}
)

func user(name string, groups ...string) *authn.UserInfo {
	return &authn.UserInfo{Name: name, Groups: append(groups, "system:authenticated")}
}

func testIndex() *Index {
	x := NewIndex()
	for _, obj := range []runtime.Object{
		role("team", "pod-reader", readPods),
		clusterRole("viewer", readAll),
		clusterRole("healthz", rbacv1.PolicyRule{Verbs: []string{"get"}, NonResourceURLs: []string{"/healthz"}}),
		roleBinding("team", "alice-reads-pods", "Role", "pod-reader", subject("User", "alice", "")),
		roleBinding("team", "devs-view", "ClusterRole", "viewer", subject("Group", "devs", "")),
		roleBinding("team", "robot-reads-pods", "Role", "pod-reader", subject("ServiceAccount", "robot", "")),
		roleBinding("team", "dangling", "Role", "missing", subject("User", "carol", "")),
		clusterBinding("everyone-healthz", "healthz", subject("Group", "system:authenticated", "")),
		clusterBinding("ops-view", "viewer", subject("User", "ops", ""), subject("ServiceAccount", "monitor", "metrics")),
	} {
		x.Set(obj)
	}
	x.MarkSynced()
	return x
}

func TestAuthorizer(t *testing.T) {
	a := Authorizer(testIndex())
	for _, tc := range []struct {
		name   string
		user   *authn.UserInfo
		attrs  authz.Attributes
		want   authz.Decision
		reason string
	}{
		{"a user's role in its namespace", user("alice"), res("list", "", "pods", "", "team", ""), authz.DecisionAllow,
			`RBAC: allowed by RoleBinding "alice-reads-pods/team" of Role "pod-reader" to User "alice"`},
		{"not in another namespace", user("alice"), res("list", "", "pods", "", "other", ""), authz.DecisionNoOpinion, ""},
		{"not at the cluster scope", user("alice"), res("list", "", "pods", "", "", ""), authz.DecisionNoOpinion, ""},
		{"not another verb", user("alice"), res("delete", "", "pods", "", "team", "p"), authz.DecisionNoOpinion, ""},
		{"not a subresource", user("alice"), res("get", "", "pods", "log", "team", "p"), authz.DecisionNoOpinion, ""},
		{"a group's cluster role bound in a namespace", user("bob", "devs"), res("get", "events.orch.io", "events", "", "team", "e"), authz.DecisionAllow,
			`RBAC: allowed by RoleBinding "devs-view/team" of ClusterRole "viewer" to Group "devs"`},
		{"only in that namespace", user("bob", "devs"), res("get", "events.orch.io", "events", "", "other", "e"), authz.DecisionNoOpinion, ""},
		{"a service account named without a namespace is the binding's", user("system:serviceaccount:team:robot"), res("get", "", "pods", "", "team", "p"), authz.DecisionAllow,
			`RBAC: allowed by RoleBinding "robot-reads-pods/team" of Role "pod-reader" to ServiceAccount "robot/team"`},
		{"a service account of another namespace is another", user("system:serviceaccount:other:robot"), res("get", "", "pods", "", "team", "p"), authz.DecisionNoOpinion, ""},
		{"a cluster role binding reaches every namespace", user("ops"), res("watch", "", "secrets", "", "anywhere", ""), authz.DecisionAllow,
			`RBAC: allowed by ClusterRoleBinding "ops-view" of ClusterRole "viewer" to User "ops"`},
		{"and the cluster scope", user("system:serviceaccount:metrics:monitor"), res("list", "", "nodes", "", "", ""), authz.DecisionAllow,
			`RBAC: allowed by ClusterRoleBinding "ops-view" of ClusterRole "viewer" to ServiceAccount "monitor/metrics"`},
		{"a non-resource URL through a group", user("anyone"), authz.Attributes{Verb: "get", Path: "/healthz"}, authz.DecisionAllow,
			`RBAC: allowed by ClusterRoleBinding "everyone-healthz" of ClusterRole "healthz" to Group "system:authenticated"`},
		{"a binding to a missing role says so", user("carol"), res("get", "", "pods", "", "team", "p"), authz.DecisionNoOpinion,
			`RBAC: role.rbac.authorization.orch.io "missing" not found`},
		{"no user", nil, res("get", "", "pods", "", "team", "p"), authz.DecisionNoOpinion, ""},
	} {
		tc.attrs.User = tc.user
		got, reason, err := a.Authorize(context.Background(), tc.attrs)
		if err != nil || got != tc.want || reason != tc.reason {
			t.Errorf("%s: Authorize = %v, %q, %v; want %v, %q", tc.name, got, reason, err, tc.want, tc.reason)
		}
	}
}

func TestIndexFollowsChangesAndRelists(t *testing.T) {
	x := testIndex()
	a := Authorizer(x)
	alice := res("list", "", "pods", "", "team", "")
	alice.User = user("alice")
	decide := func() authz.Decision { d, _, _ := a.Authorize(context.Background(), alice); return d }
	if decide() != authz.DecisionAllow {
		t.Fatal("alice cannot list pods to start with")
	}
	// The binding changes subjects: alice loses it.
	x.Set(roleBinding("team", "alice-reads-pods", "Role", "pod-reader", subject("User", "dave", "")))
	if decide() != authz.DecisionNoOpinion {
		t.Error("alice still allowed after the binding moved to dave")
	}
	x.Set(roleBinding("team", "alice-reads-pods", "Role", "pod-reader", subject("User", "alice", "")))
	x.Delete(role("team", "pod-reader"))
	if d, reason, _ := a.Authorize(context.Background(), alice); d != authz.DecisionNoOpinion || !strings.Contains(reason, "not found") {
		t.Errorf("with the role deleted: %v %q", d, reason)
	}
	x.Replace(&rbacv1.Role{}, []runtime.Object{role("team", "pod-reader", readPods)})
	if decide() != authz.DecisionAllow {
		t.Error("a relist bringing the role back does not allow again")
	}
	x.Replace(&rbacv1.RoleBinding{}, nil)
	if decide() != authz.DecisionNoOpinion {
		t.Error("a relist without bindings still allows")
	}
}

func TestNotSyncedAllowsNothing(t *testing.T) {
	x := NewIndex()
	x.Set(clusterBinding("all", "everything", subject("User", "u", "")))
	x.Set(clusterRole("everything", readAll))
	attrs := res("get", "", "pods", "", "ns", "p")
	attrs.User = user("u")
	if d, reason, _ := Authorizer(x).Authorize(context.Background(), attrs); d != authz.DecisionNoOpinion || reason != notSynced {
		t.Errorf("before sync: %v %q", d, reason)
	}
}

func TestRulesFor(t *testing.T) {
	a := Authorizer(testIndex()).(authz.RuleResolver)
	rules, err := a.RulesFor(context.Background(), user("bob", "devs"), "team")
	if err != nil || rules.Incomplete {
		t.Fatalf("RulesFor: %v, incomplete %v", err, rules.Incomplete)
	}
	if len(rules.NonResource) != 1 || rules.NonResource[0].NonResourceURLs[0] != "/healthz" {
		t.Errorf("non-resource rules: %+v", rules.NonResource)
	}
	if len(rules.Resource) != 1 || rules.Resource[0].Resources[0] != "*" {
		t.Errorf("resource rules: %+v", rules.Resource)
	}
	if _, err := a.RulesFor(context.Background(), user("carol"), "team"); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Errorf("a dangling binding's error is not reported: %v", err)
	}
	// A user bound through its name and a group to one binding gets its rules once.
	x := NewIndex()
	x.Set(clusterRole("r", readPods))
	x.Set(clusterBinding("b", "r", subject("User", "u", ""), subject("Group", "g", "")))
	x.MarkSynced()
	rules, _ = Authorizer(x).(authz.RuleResolver).RulesFor(context.Background(), user("u", "g"), "")
	if len(rules.Resource) != 1 {
		t.Errorf("a binding naming the user twice gives %d rules", len(rules.Resource))
	}
}

func TestConfirmNoEscalation(t *testing.T) {
	x := testIndex()
	deletePods := rbacv1.PolicyRule{Verbs: []string{"delete", "get"}, APIGroups: []string{""}, Resources: []string{"pods"}}
	for _, tc := range []struct {
		name  string
		user  *authn.UserInfo
		ns    string
		rules []rbacv1.PolicyRule
		err   string
	}{
		{"what one holds", user("alice"), "team", []rbacv1.PolicyRule{readPods}, ""},
		{"less than one holds", user("alice"), "team", []rbacv1.PolicyRule{{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"pods"}, ResourceNames: []string{"x"}}}, ""},
		{"more", user("alice"), "team", []rbacv1.PolicyRule{deletePods},
			"user \"alice\" (groups=[\"system:authenticated\"]) is attempting to grant RBAC permissions not currently held:\n{APIGroups:[\"\"], Resources:[\"pods\"], Verbs:[\"delete\"]}"},
		{"elsewhere", user("alice"), "other", []rbacv1.PolicyRule{readPods}, "is attempting to grant RBAC permissions not currently held"},
		{"a group's rules count", user("bob", "devs"), "team", []rbacv1.PolicyRule{{Verbs: []string{"list"}, APIGroups: []string{"apps"}, Resources: []string{"deployments"}}}, ""},
		{"a group named by Kubernetes' name is held under orch's", user("bob", "devs"), "team",
			[]rbacv1.PolicyRule{{Verbs: []string{"get"}, APIGroups: []string{"certificates.k8s.io"}, Resources: []string{"certificatesigningrequests"}}}, ""},
		{"a subresource is not held through its resource", user("alice"), "team",
			[]rbacv1.PolicyRule{{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"pods/log"}}}, `Resources:["pods/log"]`},
	} {
		err := ConfirmNoEscalation(x, tc.user, tc.ns, tc.rules)
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.err)
		}
	}
	if !EscalationAllowed(user("root", "system:masters")) || EscalationAllowed(user("alice")) || EscalationAllowed(nil) {
		t.Error("EscalationAllowed is not system:masters alone")
	}
}

func TestAggregate(t *testing.T) {
	labelled := func(name string, labels map[string]string, rules ...rbacv1.PolicyRule) *rbacv1.ClusterRole {
		r := clusterRole(name, rules...)
		r.Labels = labels
		return r
	}
	a := rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"a"}}
	b := rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"b"}}
	agg := labelled("agg", map[string]string{"to-agg": "true"})
	agg.AggregationRule = &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{
		{MatchLabels: map[string]string{"to-agg": "true"}}, {MatchLabels: map[string]string{"k8s": "true"}},
	}}
	all := []*rbacv1.ClusterRole{
		agg,
		labelled("z-second", map[string]string{"to-agg": "true"}, b, a),
		labelled("a-first", map[string]string{"to-agg": "true"}, a),
		labelled("other", nil, rbacv1.PolicyRule{Verbs: []string{"*"}}),
		labelled("k8s-label", map[string]string{"k8s": "true"}, b),
	}
	rules, aggregated, err := Aggregate(agg, all)
	if err != nil || !aggregated {
		t.Fatal(aggregated, err)
	}
	if len(rules) != 2 || rules[0].Resources[0] != "a" || rules[1].Resources[0] != "b" {
		t.Errorf("aggregated rules %+v: want a then b, each once, not its own or unlabelled ones", rules)
	}
	if _, aggregated, _ := Aggregate(all[1], all); aggregated {
		t.Error("a role without an aggregation rule is aggregated")
	}
}
