package rbac

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"orch.io/orch/components/apiserver/registry/generic"
	rbacregistry "orch.io/orch/components/apiserver/registry/rbac"
	"orch.io/orch/components/apiserver/storage/memory"
	"orch.io/orch/components/authz/rbac/bootstrappolicy"
)

func stores(t *testing.T) (roles, bindings *generic.Store) {
	t.Helper()
	clk := clock.NewMock()
	st := memory.New(clk)
	t.Cleanup(func() { _ = st.Close() })
	return generic.New(generic.Options{Strategy: rbacregistry.ClusterRoleStrategy{}, Storage: st, Clock: clk}),
		generic.New(generic.Options{Strategy: rbacregistry.ClusterRoleBindingStrategy{}, Storage: st, Clock: clk})
}

// The policy is made at the first start; at the next, what an administrator added stays, what they
// took away comes back unless they turned autoupdate off, and a binding whose role reference was
// changed is made again.
func TestEnsurePolicy(t *testing.T) {
	ctx := context.Background()
	roles, bindings := stores(t)
	if err := EnsurePolicy(ctx, roles, bindings); err != nil {
		t.Fatal(err)
	}
	list, _ := roles.List(ctx, "", generic.ListOptions{})
	if got, want := len(generic.Items(list)), len(bootstrappolicy.ClusterRoles()); got != want {
		t.Fatalf("%d cluster roles after the first start, want %d", got, want)
	}

	extra := rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{"example.com"}, Resources: []string{"widgets"}}
	change := func(name string, f func(*rbacv1.ClusterRole)) {
		t.Helper()
		obj, err := roles.Get(ctx, "", name)
		if err != nil {
			t.Fatal(err)
		}
		r := obj.(*rbacv1.ClusterRole)
		f(r)
		if _, _, err := roles.Update(ctx, "", name, r, false); err != nil {
			t.Fatal(err)
		}
	}
	// system:basic-user loses a rule and gains one; system:discovery loses its rules, autoupdate off.
	change("system:basic-user", func(r *rbacv1.ClusterRole) { r.Rules = []rbacv1.PolicyRule{extra} })
	change("system:discovery", func(r *rbacv1.ClusterRole) {
		r.Rules = []rbacv1.PolicyRule{extra}
		r.Annotations[rbacv1.AutoUpdateAnnotationKey] = "false"
	})
	obj, _ := bindings.Get(ctx, "", "system:monitoring")
	moved := obj.(*rbacv1.ClusterRoleBinding)
	if _, _, err := bindings.Delete(ctx, "", moved.Name, generic.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	moved.ResourceVersion, moved.RoleRef.Name = "", "view"
	if _, err := bindings.Create(ctx, "", moved, false); err != nil {
		t.Fatal(err)
	}

	if err := EnsurePolicy(ctx, roles, bindings); err != nil {
		t.Fatal(err)
	}
	obj, _ = roles.Get(ctx, "", "system:basic-user")
	basic := obj.(*rbacv1.ClusterRole)
	if !slices.ContainsFunc(basic.Rules, func(r rbacv1.PolicyRule) bool { return r.Resources[0] == "widgets" }) ||
		!slices.ContainsFunc(basic.Rules, func(r rbacv1.PolicyRule) bool { return r.Resources[0] == "selfsubjectaccessreviews" }) {
		t.Errorf("system:basic-user after the second start: %+v", basic.Rules)
	}
	obj, _ = roles.Get(ctx, "", "system:discovery")
	if rules := obj.(*rbacv1.ClusterRole).Rules; len(rules) != 1 || rules[0].Resources[0] != "widgets" {
		t.Errorf("system:discovery with autoupdate off was changed: %+v", rules)
	}
	obj, _ = bindings.Get(ctx, "", "system:monitoring")
	if ref := obj.(*rbacv1.ClusterRoleBinding).RoleRef.Name; ref != "system:monitoring" {
		t.Errorf("system:monitoring binding refers to %s", ref)
	}
}

// An aggregated role takes the rules of the roles its selectors match, and follows them.
func TestAggregator(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	roles, _ := stores(t)
	create := func(r *rbacv1.ClusterRole) {
		t.Helper()
		if _, err := roles.Create(ctx, "", r, false); err != nil {
			t.Fatal(err)
		}
	}
	create(&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "gather"}, AggregationRule: &rbacv1.AggregationRule{
		ClusterRoleSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{"to-gather": "true"}}}}})
	go (&Aggregator{Clock: clock.NewMock(), ClusterRoles: roles}).Run(ctx)
	widgets := rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{"example.com"}, Resources: []string{"widgets"}}
	create(&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "widgets", Labels: map[string]string{"to-gather": "true"}}, Rules: []rbacv1.PolicyRule{widgets}})
	create(&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "other"}, Rules: []rbacv1.PolicyRule{{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}}}})
	rulesOf := func() []rbacv1.PolicyRule {
		obj, err := roles.Get(ctx, "", "gather")
		if err != nil {
			t.Fatal(err)
		}
		return obj.(*rbacv1.ClusterRole).Rules
	}
	eventually(t, func() bool { r := rulesOf(); return len(r) == 1 && r[0].Resources[0] == "widgets" })
	if _, _, err := roles.Delete(ctx, "", "widgets", generic.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, func() bool { return len(rulesOf()) == 0 })
}

func eventually(t *testing.T, cond func() bool) {
	t.Helper()
	for range 200 {
		if cond() {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("condition not met within 2s")
}
