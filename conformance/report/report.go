package report

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/cucumber/godog"

	"orch.io/orch/conformance/catalog"
)

// Status is the outcome of a scenario, or of a rule over its scenarios.
type Status string

// The outcomes, in the order a rule's status is chosen from its scenarios': any failure fails the
// rule, then any pass passes it; a rule whose scenarios the target cannot run is not applicable.
const (
	StatusFailed        Status = "failed"
	StatusPassed        Status = "passed"
	StatusNotApplicable Status = "not applicable"
	StatusNotCovered    Status = "not covered"
	StatusPending       Status = "pending"
)

// Outcome is one scenario's or spec's result.
type Outcome struct {
	Ref    string // file:line and name, or the spec's text
	Rules  []string
	Status Status
	Detail string // the failure, or the missing component
}

// Recorder collects outcomes and prints progress as scenarios run.
type Recorder struct {
	mu       sync.Mutex
	out      io.Writer
	total    int
	done     int
	feature  string
	refs     map[string]catalog.Scenario // the static scenarios by key, for their file:line
	current  map[string]*Outcome         // by pickle id
	Outcomes []Outcome
}

// NewRecorder prints progress to out; scenarios are the ones the run will execute.
func NewRecorder(out io.Writer, scenarios []catalog.Scenario) *Recorder {
	r := &Recorder{out: out, total: len(scenarios), refs: map[string]catalog.Scenario{}, current: map[string]*Outcome{}}
	for _, s := range scenarios {
		r.refs[scenarioKey(s.Feature, s.Name, s.Tags)] = s
	}
	return r
}

func scenarioKey(feature, name string, tags []string) string {
	return feature + "\x00" + name + "\x00" + strings.Join(tags, " ")
}

func pickleInfo(p *godog.Scenario) (feature string, tags []string) {
	for _, t := range p.Tags {
		tags = append(tags, t.Name)
	}
	return filepath.Base(p.Uri), tags
}

// Start records that a scenario began and prints the feature when it changes.
func (r *Recorder) Start(p *godog.Scenario) {
	r.mu.Lock()
	defer r.mu.Unlock()
	feature, tags := pickleInfo(p)
	ref := feature + " " + p.Name
	if s, ok := r.refs[scenarioKey(feature, p.Name, tags)]; ok {
		ref = s.Ref()
	}
	o := &Outcome{Ref: ref, Status: StatusPassed}
	for _, t := range tags {
		if id, ok := strings.CutPrefix(t, catalog.RuleTagPrefix); ok {
			o.Rules = append(o.Rules, id)
		}
	}
	r.current[p.Id] = o
	if feature != r.feature {
		r.feature = feature
		fmt.Fprintf(r.out, "== %s\n", feature)
	}
}

// NotApplicable marks a scenario the target cannot be asked about, with the reason: a component it
// lacks, or the profile's word on a rule.
func (r *Recorder) NotApplicable(p *godog.Scenario, reason string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if o := r.current[p.Id]; o != nil {
		o.Status, o.Detail = StatusNotApplicable, reason
	}
}

// Finish records a scenario's result and prints a progress line.
func (r *Recorder) Finish(p *godog.Scenario, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	o := r.current[p.Id]
	if o == nil {
		return
	}
	delete(r.current, p.Id)
	if o.Status != StatusNotApplicable && err != nil && !errors.Is(err, godog.ErrSkip) {
		o.Status, o.Detail = StatusFailed, err.Error()
	}
	r.done++
	fmt.Fprintf(r.out, "[%d/%d] %-14s %s\n", r.done, r.total, o.Status, o.Ref)
	if o.Status == StatusFailed {
		fmt.Fprintf(r.out, "    %s\n", strings.ReplaceAll(o.Detail, "\n", "\n    "))
	}
	r.Outcomes = append(r.Outcomes, *o)
}

// Add records an outcome that did not come from godog (a ginkgo spec) and prints its progress line.
func (r *Recorder) Add(o Outcome) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.Outcomes = append(r.Outcomes, o)
	fmt.Fprintf(r.out, "[spec] %-14s %s\n", o.Status, o.Ref)
}

// SetTotal sets how many scenarios the run will execute, for the progress lines' count.
func (r *Recorder) SetTotal(n int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.total = n
}

// ruleStatus is each catalog rule's status over the outcomes of its scenarios and specs.
func (r *Recorder) ruleStatus(c *catalog.Catalog) map[string]Status {
	r.mu.Lock()
	defer r.mu.Unlock()
	seen := map[string][]Status{}
	for _, o := range r.Outcomes {
		for _, id := range o.Rules {
			seen[id] = append(seen[id], o.Status)
		}
	}
	out := map[string]Status{}
	for _, rule := range c.Rules {
		st := StatusNotCovered
		if c.PendingGroupOf(rule.ID) != nil {
			st = StatusPending
		}
		for _, want := range []Status{StatusFailed, StatusPassed, StatusNotApplicable} {
			if contains(seen[rule.ID], want) {
				st = want
				break
			}
		}
		out[rule.ID] = st
	}
	return out
}

func contains(list []Status, s Status) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// WriteMarkdown writes reports/conformance.md: what the target provides (provides, when given), per
// area the counts, then every catalog rule with its status and the scenarios that prove it, a
// scenario not applicable with the reason: the capability the target lacks or the profile's word.
func (r *Recorder) WriteMarkdown(path, target, provides string, c *catalog.Catalog, cov *catalog.Coverage) error {
	status := r.ruleStatus(c)
	proofs := map[string][]string{}
	r.mu.Lock()
	for _, o := range r.Outcomes {
		for _, id := range o.Rules {
			proof := fmt.Sprintf("%s (%s)", o.Ref, o.Status)
			if o.Status == StatusNotApplicable && o.Detail != "" {
				proof = fmt.Sprintf("%s (%s: %s)", o.Ref, o.Status, o.Detail)
			}
			if !slices.Contains(proofs[id], proof) {
				proofs[id] = append(proofs[id], proof)
			}
		}
	}
	r.mu.Unlock()
	var b strings.Builder
	fmt.Fprintf(&b, "# Conformance of %s to SPEC.md\n\n", target)
	if provides != "" {
		fmt.Fprintf(&b, "```\n%s```\n\n", provides)
	}
	total := map[Status]int{}
	for _, st := range status {
		total[st]++
	}
	fmt.Fprintf(&b, "%d rules: %d passed, %d failed, %d not applicable, %d pending, %d not covered.\n\n",
		len(c.Rules), total[StatusPassed], total[StatusFailed], total[StatusNotApplicable], total[StatusPending], total[StatusNotCovered])
	b.WriteString("| Area | Rules | Passed | Failed | Not applicable | Pending | Not covered |\n|---|---|---|---|---|---|---|\n")
	for _, a := range c.Areas() {
		n := map[Status]int{}
		all := 0
		for _, rule := range c.Rules {
			if catalog.Area(rule.ID) == a {
				n[status[rule.ID]]++
				all++
			}
		}
		fmt.Fprintf(&b, "| %s | %d | %d | %d | %d | %d | %d |\n", a, all, n[StatusPassed], n[StatusFailed], n[StatusNotApplicable], n[StatusPending], n[StatusNotCovered])
	}
	if cov != nil && len(cov.Problems) > 0 {
		b.WriteString("\n## Coverage problems\n\n")
		for _, p := range cov.Problems {
			fmt.Fprintf(&b, "- %s\n", p)
		}
	}
	b.WriteString("\n## Rules\n\n| Rule | Section | Status | Proven by |\n|---|---|---|---|\n")
	rules := append([]catalog.Rule(nil), c.Rules...)
	sort.SliceStable(rules, func(i, j int) bool { return catalog.Area(rules[i].ID) < catalog.Area(rules[j].ID) })
	for _, rule := range rules {
		by := strings.Join(proofs[rule.ID], "<br>")
		if g := c.PendingGroupOf(rule.ID); g != nil && by == "" {
			by = fmt.Sprintf("pending since %s: %s", g.Since, g.Issue)
		}
		id := rule.ID
		if rule.Orch {
			id += " (orch)"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", id, mdEscape(rule.Section), status[rule.ID], mdEscape(by))
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

func mdEscape(s string) string { return strings.ReplaceAll(s, "|", `\|`) }
