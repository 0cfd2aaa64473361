package config

import (
	"testing"
)

// eval runs a kept program and returns its result as a Go value.
func eval(t *testing.T, p *Program, vars map[string]any) any {
	t.Helper()
	if p == nil {
		t.Fatal("program not kept")
	}
	out, _, err := p.Eval(vars)
	if err != nil {
		t.Fatalf("%s: %v", p.Expression, err)
	}
	return out.Value()
}

func TestAuthenticationProgramsAreKept(t *testing.T) {
	a, err := LoadAuthentication("testdata/authentication/valid/full.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p := a.JWT[0]
	if p.ClaimValidationRules[0] != nil || p.ClaimValidationRules[1] != nil {
		t.Error("claim rules got programs; only expression rules should")
	}
	claims := map[string]any{"email": "ada@example.com", "email_verified": false, "tenant": "t1"}
	if got := eval(t, p.ClaimValidationRules[2], map[string]any{"claims": claims}); got != false {
		t.Errorf("email_verified rule = %v, want false", got)
	}
	if got := eval(t, p.Username, map[string]any{"claims": claims}); got != "oidc:ada@example.com" {
		t.Errorf("username = %v", got)
	}
	if p.Groups != nil || p.UID != nil {
		t.Error("claim mappings got programs")
	}
	if got := eval(t, p.Extra[0], map[string]any{"claims": claims}); got != "t1" {
		t.Errorf("extra[0] = %v", got)
	}
	user := UserInfo{Username: "system:admin", Groups: []string{"devs"}}
	if got := eval(t, p.UserValidationRules[0], map[string]any{"user": user}); got != false {
		t.Errorf("reserved-prefix rule on system:admin = %v, want false", got)
	}
	if got := eval(t, p.UserValidationRules[1], map[string]any{"user": user}); got != true {
		t.Errorf("groups rule = %v, want true", got)
	}
}

func TestMatchConditionProgramsAreKept(t *testing.T) {
	a, err := LoadAuthorization("testdata/authorization/valid/webhook-full.yaml")
	if err != nil {
		t.Fatal(err)
	}
	conds := a.MatchConditions[0]
	if len(conds) != len(a.Config.Authorizers[0].Webhook.MatchConditions) {
		t.Fatalf("%d programs for %d conditions", len(conds), len(a.Config.Authorizers[0].Webhook.MatchConditions))
	}
	tests := []struct {
		name    string
		cond    int
		request SubjectAccessReviewSpec
		want    bool
	}{
		{"resource request", 0, SubjectAccessReviewSpec{ResourceAttributes: &ResourceAttributes{Verb: "get"}}, true},
		{"non-resource request", 0, SubjectAccessReviewSpec{NonResourceAttributes: &NonResourceAttributes{Path: "/healthz"}}, false},
		{"kube-system skipped", 1, SubjectAccessReviewSpec{ResourceAttributes: &ResourceAttributes{Namespace: "kube-system"}}, false},
		{"other namespace", 1, SubjectAccessReviewSpec{ResourceAttributes: &ResourceAttributes{Namespace: "default"}}, true},
		{"group excluded", 2, SubjectAccessReviewSpec{Groups: []string{"system:serviceaccounts:kube-system"}}, false},
		{"healthz skipped", 3, SubjectAccessReviewSpec{NonResourceAttributes: &NonResourceAttributes{Path: "/healthz"}}, false},
		{"extra key", 4, SubjectAccessReviewSpec{Extra: map[string][]string{"example.com/x": {"1"}}}, true},
		{"label selector", 5, SubjectAccessReviewSpec{ResourceAttributes: &ResourceAttributes{LabelSelector: &LabelSelector{}}}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := eval(t, conds[tt.cond], map[string]any{"request": tt.request}); got != tt.want {
				t.Errorf("%s = %v, want %v", conds[tt.cond].Expression, got, tt.want)
			}
		})
	}
}

// TestRepeatedExpressionsCompileOnce shows that an expression repeated through a YAML alias is
// compiled once per file, which keeps alias-heavy files from multiplying CEL work.
func TestRepeatedExpressionsCompileOnce(t *testing.T) {
	a, err := LoadAuthorization("testdata/authorization/valid/yaml-anchors.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if a.MatchConditions[0][0] == nil || a.MatchConditions[0][0] != a.MatchConditions[1][0] {
		t.Errorf("aliased match condition compiled twice: %p and %p", a.MatchConditions[0][0], a.MatchConditions[1][0])
	}
}
