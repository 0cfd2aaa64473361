package report

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"

	"orch.io/orch/conformance/catalog"
)

// RuleResults is what a run proved of each catalog rule it ran: rules.json beside conformance.md,
// the input of the comparison of two implementations (make conformance-peers).
type RuleResults struct {
	Target string `json:"target"`
	// Rules maps a rule id to its status; Details to the failure or the reason it is not applicable.
	Rules   map[string]Status `json:"rules"`
	Details map[string]string `json:"details,omitempty"`
}

// Results gathers the status of every rule some scenario of the run was about.
func (r *Recorder) Results(target string, c *catalog.Catalog) RuleResults {
	status := r.ruleStatus(c)
	res := RuleResults{Target: target, Rules: map[string]Status{}, Details: map[string]string{}}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, o := range r.Outcomes {
		for _, id := range o.Rules {
			st, ok := status[id]
			if !ok {
				continue
			}
			res.Rules[id] = st
			if o.Status == st && o.Detail != "" && res.Details[id] == "" {
				res.Details[id] = o.Detail
			}
		}
	}
	return res
}

// WriteJSON writes the results to path.
func (res RuleResults) WriteJSON(path string) error {
	data, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, append(data, '\n'), 0o644)
}

// ReadResults reads a rules.json that WriteJSON wrote.
func ReadResults(path string) (RuleResults, error) {
	var res RuleResults
	data, err := os.ReadFile(path)
	if err != nil {
		return res, err
	}
	if err := json.Unmarshal(data, &res); err != nil {
		return res, fmt.Errorf("%s: %w", path, err)
	}
	return res, nil
}

// Comparison counts, over the rules either run was about, where orch and a peer stand.
type Comparison struct {
	Rules, PassedOrch, PassedPeer, PassedBoth, NotApplicablePeer int
	// Differing lists the rules whose status differs, with both statuses and the peer's detail.
	Differing []string
}

// Compare sets a peer's results beside orch's.
func Compare(orch, peer RuleResults) Comparison {
	ids := map[string]bool{}
	for id := range orch.Rules {
		ids[id] = true
	}
	for id := range peer.Rules {
		ids[id] = true
	}
	sorted := make([]string, 0, len(ids))
	for id := range ids {
		sorted = append(sorted, id)
	}
	sort.Strings(sorted)
	var c Comparison
	for _, id := range sorted {
		o, p := orch.Rules[id], peer.Rules[id]
		c.Rules++
		if o == StatusPassed {
			c.PassedOrch++
		}
		if p == StatusPassed {
			c.PassedPeer++
		}
		if o == StatusPassed && p == StatusPassed {
			c.PassedBoth++
		}
		if p == StatusNotApplicable {
			c.NotApplicablePeer++
			continue
		}
		if o != p {
			line := fmt.Sprintf("%s: orch %s, peer %s", id, orNotRun(o), orNotRun(p))
			if d := peer.Details[id]; d != "" && p == StatusFailed {
				line += ": " + clip(firstLine(d), 240)
			}
			c.Differing = append(c.Differing, line)
		}
	}
	return c
}

func orNotRun(s Status) Status {
	if s == "" {
		return "not run"
	}
	return s
}

// clip shortens s to at most n bytes, marking the cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

func firstLine(s string) string {
	for i, r := range s {
		if r == '\n' {
			return s[:i]
		}
	}
	return s
}

// Print writes the summary table of make conformance-peers.
func (c Comparison) Print(w io.Writer, orch, peer RuleResults) {
	fmt.Fprintf(w, "rules run: %d (orch: %s; peer: %s)\n", c.Rules, orch.Target, peer.Target)
	fmt.Fprintf(w, "| %-22s | %5d |\n", "passed on orch", c.PassedOrch)
	fmt.Fprintf(w, "| %-22s | %5d |\n", "passed on the peer", c.PassedPeer)
	fmt.Fprintf(w, "| %-22s | %5d |\n", "passed on both", c.PassedBoth)
	fmt.Fprintf(w, "| %-22s | %5d |\n", "differing", len(c.Differing))
	fmt.Fprintf(w, "| %-22s | %5d |\n", "not applicable to peer", c.NotApplicablePeer)
	for _, d := range c.Differing {
		fmt.Fprintf(w, "- %s\n", d)
	}
}
