package catalog

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	gherkin "github.com/cucumber/gherkin/go/v26"
	messages "github.com/cucumber/messages/go/v21"
)

// RuleTagPrefix starts a tag naming the catalog rule a scenario proves.
const RuleTagPrefix = "@rule:"

// ConcurrentTag marks a scenario that may run beside other scenarios so marked: it starts every
// server, runtime and agent it needs on its own ports and directories, reads nothing shared, and
// checks no rate or duration a busy machine could stretch. Every other scenario runs alone.
const ConcurrentTag = "@concurrent"

// ComponentTagPrefix starts a tag naming the target component a scenario needs.
const ComponentTagPrefix = "@component:"

// Scenario is one runnable scenario (an outline's example row counts as one), as godog runs it.
type Scenario struct {
	Feature string // the feature file's base name
	Name    string
	Line    int // line of the scenario or of its example row
	Tags    []string
	Steps   []string
}

// Rules returns the rule ids the scenario's tags name.
func (s Scenario) Rules() []string {
	var out []string
	for _, t := range s.Tags {
		if id, ok := strings.CutPrefix(t, RuleTagPrefix); ok {
			out = append(out, id)
		}
	}
	return out
}

// Components returns the target components the scenario's tags name.
func (s Scenario) Components() []string {
	var out []string
	for _, t := range s.Tags {
		if c, ok := strings.CutPrefix(t, ComponentTagPrefix); ok {
			out = append(out, c)
		}
	}
	return out
}

// Ref is how reports name the scenario: file:line and name.
func (s Scenario) Ref() string { return fmt.Sprintf("%s:%d %s", s.Feature, s.Line, s.Name) }

// LoadFeatures parses every *.feature file of dir into its scenarios, in file order.
func LoadFeatures(dir string) ([]Scenario, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.feature"))
	if err != nil {
		return nil, err
	}
	sort.Strings(paths)
	var out []Scenario
	for _, path := range paths {
		s, err := parseFeature(path)
		if err != nil {
			return nil, err
		}
		out = append(out, s...)
	}
	return out, nil
}

func parseFeature(path string) ([]Scenario, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	ids := &messages.Incrementing{}
	doc, err := gherkin.ParseGherkinDocument(f, ids.NewId)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	lines := astLines(doc)
	var out []Scenario
	for _, p := range gherkin.Pickles(*doc, path, ids.NewId) {
		s := Scenario{Feature: filepath.Base(path), Name: p.Name}
		// The last AST node of a pickle is its example row, when it has one.
		for _, id := range p.AstNodeIds {
			if l, ok := lines[id]; ok {
				s.Line = l
			}
		}
		for _, t := range p.Tags {
			s.Tags = append(s.Tags, t.Name)
		}
		for _, st := range p.Steps {
			s.Steps = append(s.Steps, st.Text)
		}
		out = append(out, s)
	}
	return out, nil
}

// astLines maps the ids of scenarios and example rows to their lines.
func astLines(doc *messages.GherkinDocument) map[string]int {
	lines := map[string]int{}
	if doc.Feature == nil {
		return lines
	}
	addScenario := func(sc *messages.Scenario) {
		lines[sc.Id] = int(sc.Location.Line)
		for _, ex := range sc.Examples {
			for _, row := range ex.TableBody {
				lines[row.Id] = int(row.Location.Line)
			}
		}
	}
	for _, child := range doc.Feature.Children {
		if child.Scenario != nil {
			addScenario(child.Scenario)
		}
		if child.Rule != nil {
			for _, rc := range child.Rule.Children {
				if rc.Scenario != nil {
					addScenario(rc.Scenario)
				}
			}
		}
	}
	return lines
}
