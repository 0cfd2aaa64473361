package groups

import "testing"

func TestOrchAndKubernetesNames(t *testing.T) {
	for _, tc := range []struct{ in, orch string }{
		{"rbac.authorization.k8s.io", "rbac.authorization.orch.io"},
		{"rbac.authorization.orch.io", "rbac.authorization.orch.io"},
		{"certificates.k8s.io", "certificates.orch.io"},
		{"", ""},
		{"apps", "apps"},
		{"*", "*"},
	} {
		if got := Orch(tc.in); got != tc.orch {
			t.Errorf("Orch(%q) = %q, want %q", tc.in, got, tc.orch)
		}
	}
	for _, g := range All {
		if k, ok := Kubernetes(g.Orch); !ok || k != g.Kubernetes {
			t.Errorf("Kubernetes(%q) = %q, %v; want %q", g.Orch, k, ok, g.Kubernetes)
		}
	}
	if _, ok := Kubernetes("apps"); ok {
		t.Error("Kubernetes(apps) names a group orch does not rename")
	}
}
