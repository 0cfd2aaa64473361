package catalog

import (
	"fmt"
	"os"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"
)

// Rule is one testable statement of SPEC.md.
type Rule struct {
	ID        string `json:"id"`
	Section   string `json:"section"`
	Statement string `json:"statement"`
	// Orch marks Kubernetes behaviour orch chose where SPEC.md says nothing.
	Orch bool `json:"orch,omitempty"`
}

// PendingGroup is a dated set of rules that have no scenario yet and the issue that will cover them.
type PendingGroup struct {
	Since string   `json:"since"`
	Issue string   `json:"issue"`
	Rules []string `json:"rules"`
}

// Catalog is features/rules.yaml.
type Catalog struct {
	Rules   []Rule         `json:"rules"`
	Pending []PendingGroup `json:"pending"`
}

// LoadCatalog reads and checks a catalog: ids are unique and non-empty, every pending entry names a
// catalog rule once, and every pending group carries a date and an issue.
func LoadCatalog(path string) (*Catalog, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var c Catalog
	if err := yaml.UnmarshalStrict(data, &c); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	var problems []string
	seen := map[string]bool{}
	for i, r := range c.Rules {
		switch {
		case r.ID == "" || r.Section == "" || r.Statement == "":
			problems = append(problems, fmt.Sprintf("rules[%d] %q: id, section and statement are required", i, r.ID))
		case seen[r.ID]:
			problems = append(problems, fmt.Sprintf("rules[%d]: duplicate id %q", i, r.ID))
		case r.Orch != strings.HasPrefix(r.ID, "orch."):
			problems = append(problems, fmt.Sprintf("rule %q: orch: true goes with, and only with, an orch.* id", r.ID))
		}
		seen[r.ID] = true
	}
	pending := map[string]bool{}
	for i, g := range c.Pending {
		if g.Since == "" || g.Issue == "" {
			problems = append(problems, fmt.Sprintf("pending[%d]: since and issue are required", i))
		}
		for _, id := range g.Rules {
			if !seen[id] {
				problems = append(problems, fmt.Sprintf("pending[%d]: %q is not a catalog rule", i, id))
			}
			if pending[id] {
				problems = append(problems, fmt.Sprintf("pending[%d]: %q is listed twice", i, id))
			}
			pending[id] = true
		}
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("%s:\n  %s", path, strings.Join(problems, "\n  "))
	}
	return &c, nil
}

// PendingGroupOf returns the pending group holding id, or nil.
func (c *Catalog) PendingGroupOf(id string) *PendingGroup {
	for i := range c.Pending {
		for _, r := range c.Pending[i].Rules {
			if r == id {
				return &c.Pending[i]
			}
		}
	}
	return nil
}

// Area groups rules for counting: the id's first segment (after orch., which marks the origin and
// not the area), and the first two for the node agent, whose options and gates outnumber the rest.
func Area(id string) string {
	parts := strings.Split(strings.TrimPrefix(id, "orch."), ".")
	if parts[0] == "orchlet" && len(parts) > 1 {
		return parts[0] + "." + parts[1]
	}
	return parts[0]
}

// Areas returns the areas of the catalog in order.
func (c *Catalog) Areas() []string {
	set := map[string]bool{}
	for _, r := range c.Rules {
		set[Area(r.ID)] = true
	}
	out := make([]string, 0, len(set))
	for a := range set {
		out = append(out, a)
	}
	sort.Strings(out)
	return out
}
