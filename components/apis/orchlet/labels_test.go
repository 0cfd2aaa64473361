package orchlet

import "testing"

func TestOrchletLabels(t *testing.T) {
	tests := []struct {
		key            string
		orch, orchlets bool
	}{
		{"orch.io/hostname", true, true},
		{"topology.orch.io/zone", true, true},
		{"node.orch.io/pool", true, true},
		{"team.node.orch.io/owner", true, true},
		{"orchlet.orch.io/x", true, true},
		{"orch.io/role", true, false},
		{"node-restriction.orch.io/tier", true, false},
		{"beta.orch.io/zone", true, false},
		{"example.com/team", false, false},
		{"plain", false, false},
		{"notorch.io/x", false, false},
	}
	for _, tt := range tests {
		if got := IsOrchLabel(tt.key); got != tt.orch {
			t.Errorf("IsOrchLabel(%q) = %v, want %v", tt.key, got, tt.orch)
		}
		if got := IsOrchLabel(tt.key) && IsOrchletLabel(tt.key); got != tt.orchlets {
			t.Errorf("%q settable by an agent = %v, want %v", tt.key, got, tt.orchlets)
		}
	}
}
