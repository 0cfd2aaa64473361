package podsync

import (
	"testing"
)

// The cases of Kubernetes' third_party/forked/golang/expansion tests.
func TestExpand(t *testing.T) {
	vars := map[string]string{"VAR_A": "A", "VAR_B": "B", "VAR_C": "C", "VAR_REF": "$(VAR_A)", "VAR_EMPTY": ""}
	for _, c := range []struct{ in, want string }{
		{"$(VAR_A)", "A"},
		{"___$(VAR_B)___", "___B___"},
		{"$(VAR_A)-$(VAR_A)", "A-A"},
		{"f000-$$VAR_A", "f000-$VAR_A"},
		{"foo\\$(VAR_C)bar", "foo\\Cbar"},
		{"foo\\\\$(VAR_C)bar", "foo\\\\Cbar"},
		{"$$$$$$(BIG_MONEY)", "$$$(BIG_MONEY)"},
		{"$$$$$$$(VAR_A)", "$$$A"},
		{"$(VAR_DNE)", "$(VAR_DNE)"},
		{"$(VAR_EMPTY)", ""},
		{"$(VAR_REF)", "$(VAR_A)"},
		{"$(VAR_A", "$(VAR_A"},
		{"$VAR_A", "$VAR_A"},
		{"$", "$"},
		{"$$", "$"},
		{"$()", "$()"},
		{"$(VAR_A)$", "A$"},
		{"\u00e9$(VAR_A)", "\u00e9A"},
	} {
		if got := expand(c.in, mappingFor(vars)); got != c.want {
			t.Errorf("expand(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
