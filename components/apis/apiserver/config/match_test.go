package config

import (
	"context"
	"strings"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	apiv1 "orch.io/orch/components/apis/apiserver/v1"
)

func matchConditions(t *testing.T, exprs ...string) MatchConditions {
	t.Helper()
	conds := make([]apiv1.WebhookMatchCondition, len(exprs))
	for i, e := range exprs {
		conds[i] = apiv1.WebhookMatchCondition{Expression: e}
	}
	programs, errs := compileMatchConditions(newCompiler(), conds, field.NewPath("matchConditions"))
	if len(errs) > 0 {
		t.Fatal(errs.ToAggregate())
	}
	return programs
}

// TestMatchConditionsMatch proves Kubernetes' three-step logic and its view of the request: a
// false condition excludes, an error without a false goes to the failure policy, and attributes
// a request does not have are missing keys rather than zero values.
func TestMatchConditionsMatch(t *testing.T) {
	resource := &authorizationv1.SubjectAccessReviewSpec{
		User: "alice", UID: "u1", Groups: []string{"devs"},
		Extra:              map[string]authorizationv1.ExtraValue{"example.com/team": {"blue"}},
		ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: "kube-system", Verb: "list", Group: "events.orch.io", Version: "v1", Resource: "events"},
	}
	nonResource := &authorizationv1.SubjectAccessReviewSpec{
		NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: "/healthz", Verb: "get"},
	}
	tests := []struct {
		name         string
		exprs        []string
		spec         *authorizationv1.SubjectAccessReviewSpec
		wantExcluded bool
		wantErr      []string // substrings; none means no error
	}{
		{name: "no conditions match everything", spec: resource},
		{name: "all true", exprs: []string{"request.user == 'alice'", "'devs' in request.groups", "request.extra['example.com/team'][0] == 'blue'", "request.uid == 'u1'"}, spec: resource},
		{name: "one false excludes", exprs: []string{"request.user == 'alice'", "request.resourceAttributes.namespace != 'kube-system'"}, spec: resource, wantExcluded: true},
		{name: "resource attributes of a non-resource request are missing", exprs: []string{"request.resourceAttributes.namespace != 'kube-system'"}, spec: nonResource,
			wantErr: []string{"cel evaluation error: expression 'request.resourceAttributes.namespace != 'kube-system'' resulted in error: no such key: resourceAttributes"}},
		{name: "non-resource attributes of a resource request are missing", exprs: []string{"request.nonResourceAttributes.path == '/healthz'"}, spec: resource,
			wantErr: []string{"no such key: nonResourceAttributes"}},
		{name: "has() tells the request kinds apart", exprs: []string{"has(request.resourceAttributes)"}, spec: nonResource, wantExcluded: true},
		{name: "has() of a non-resource request", exprs: []string{"has(request.nonResourceAttributes)", "request.nonResourceAttributes.path == '/healthz'"}, spec: nonResource},
		{name: "the user is present even when empty", exprs: []string{"has(request.user)", "request.user == ''"}, spec: nonResource},
		{name: "no selectors on orch's requests", exprs: []string{"has(request.resourceAttributes.labelSelector)"}, spec: resource, wantExcluded: true},
		{name: "missing extra key errors", exprs: []string{"request.extra['nope'][0] == 'x'"}, spec: resource, wantErr: []string{"no such key: nope"}},
		{name: "non-bool result at evaluation", exprs: []string{"dyn(request.user)"}, spec: resource, wantErr: []string{"eval result type should be bool but got string"}},
		{name: "every error is reported", exprs: []string{"request.extra['a'][0] == 'x'", "request.user == 'alice'", "request.extra['b'][0] == 'x'"}, spec: resource,
			wantErr: []string{"no such key: a", "no such key: b"}},
		{name: "a false after an error still excludes, and the error is kept for metrics", exprs: []string{"request.extra['a'][0] == 'x'", "request.user == 'bob'"}, spec: resource,
			wantExcluded: true, wantErr: []string{"no such key: a"}},
		{name: "a false before an error stops evaluation", exprs: []string{"request.user == 'bob'", "request.extra['a'][0] == 'x'"}, spec: resource, wantExcluded: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			excluded, err := matchConditions(t, tt.exprs...).Match(context.Background(), tt.spec)
			if excluded != tt.wantExcluded {
				t.Errorf("excluded = %v, want %v", excluded, tt.wantExcluded)
			}
			if len(tt.wantErr) == 0 {
				if err != nil {
					t.Errorf("error %v, want none", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("no error, want one containing %q", tt.wantErr)
			}
			for _, w := range tt.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}
