package admission

import (
	"context"
	"errors"
	"strings"
	"testing"

	"orch.io/orch/components/authz"
)

// plugin records its calls; a name in refuse makes it refuse there.
type plugin struct {
	name   string
	calls  *[]string
	refuse bool
}

func (p plugin) Handles(op Operation) bool { return op == Create }

func (p plugin) Admit(_ context.Context, a Attributes) error { return p.call("admit") }

func (p plugin) call(stage string) error {
	*p.calls = append(*p.calls, stage+" "+p.name)
	if p.refuse {
		return errors.New(p.name + " refuses")
	}
	return nil
}

type validator struct{ plugin }

func (v validator) Validate(_ context.Context, a Attributes) error { return v.call("validate") }

type requestJudge struct{ plugin }

func (r requestJudge) AdmitRequest(context.Context, authz.Attributes) error { return r.call("request") }

// The chain runs the plugins in Kubernetes' order whatever order they are given in, each stage
// only its plugins and only for the operations they handle, and stops at the first refusal.
func TestChain(t *testing.T) {
	var calls []string
	c, err := NewChain(map[string]Interface{
		"EventRateLimit":     validator{plugin{"EventRateLimit", &calls, false}},
		"NodeRestriction":    requestJudge{plugin{"NodeRestriction", &calls, false}},
		"NamespaceLifecycle": plugin{"NamespaceLifecycle", &calls, false},
		"ServiceAccount":     plugin{"ServiceAccount", &calls, true},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Admit(context.Background(), Attributes{Operation: Create}); err == nil || err.Error() != "ServiceAccount refuses" {
		t.Fatalf("Admit = %v, want ServiceAccount's refusal", err)
	}
	if err := c.Admit(context.Background(), Attributes{Operation: Update}); err != nil {
		t.Fatalf("an update no plugin handles: %v", err)
	}
	if err := c.Validate(context.Background(), Attributes{Operation: Create}); err != nil {
		t.Fatal(err)
	}
	if err := c.AdmitRequest(context.Background(), authz.Attributes{}); err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Join(calls, ", "), "admit NamespaceLifecycle, admit ServiceAccount, validate EventRateLimit, request NodeRestriction"; got != want {
		t.Fatalf("calls %q, want %q", got, want)
	}
	if !c.JudgesRequests() || (Chain{plugin{}}).JudgesRequests() {
		t.Fatal("JudgesRequests does not tell whether a plugin judges requests")
	}
	if _, err := NewChain(map[string]Interface{"AlwaysPullImages": plugin{}}); err == nil || !strings.Contains(err.Error(), "AlwaysPullImages") {
		t.Fatalf("a plugin with no place in the order: %v", err)
	}
}
