package server

import (
	"context"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"orch.io/orch/components/apiserver/registry/generic"
	"orch.io/orch/components/apiserver/storage/memory"
	"orch.io/orch/components/authz"
)

// Every store the server serves must have its kind in the schema managedFields are typed with
// (generic's typeschema.yaml): a kind missing from it fails its first write with a 500.
func TestEveryServedKindIsTyped(t *testing.T) {
	clk := clock.NewMock()
	st := memory.New(clk)
	t.Cleanup(func() { _ = st.Close() })
	stopping := make(chan struct{})
	t.Cleanup(func() { close(stopping) })
	r, err := newRegistry(Config{Clock: clk, Storage: st, EventTTL: time.Hour, Authorizer: authz.AlwaysAllow(), Stopping: stopping})
	if err != nil {
		t.Fatal(err)
	}
	ctx := generic.WithManager(context.Background(), "tester")
	n := 0
	for _, g := range r.groups {
		for _, res := range g.Resources {
			s := res.Store
			gvk := s.GroupVersionKind()
			patch := &unstructured.Unstructured{}
			patch.SetGroupVersionKind(gvk)
			patch.SetName("typed")
			namespace := ""
			if s.Strategy().NamespaceScoped() {
				namespace = "default"
				patch.SetNamespace(namespace)
			}
			// A dry-run apply types the patch before validation and admission can refuse it.
			_, _, err := s.Apply(ctx, namespace, "typed", patch, "tester", false, true)
			if apierrors.IsInternalError(err) {
				t.Errorf("applying %v: %v", gvk, err)
			}
			n++
		}
	}
	if n < 9 {
		t.Fatalf("applied %d kinds, want every served one", n)
	}
}
