package conformance

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/cucumber/godog"

	"orch.io/orch/conformance/catalog"
	"orch.io/orch/conformance/report"
	"orch.io/orch/conformance/target"
)

var (
	targetFlag      = flag.String("target", "targets/orch.yaml", "target profile: how to reach the implementation under test")
	reportsFlag     = flag.String("reports", "", "directory for JUnit XML, cucumber JSON and conformance.md; empty writes none")
	filterFlag      = flag.String("filter", "", "godog tag expression selecting scenarios, for example @component:agent")
	concurrencyFlag = flag.Int("concurrency", 3, "scenarios run at once: those tagged "+catalog.ConcurrentTag+" side by side, every other one alone")
	compareFlag     = flag.String("compare", "", "orch's rules.json and a peer's, comma-separated: print the comparison table and run nothing")
)

// featuresDir and catalogPath are relative to this package, where go test runs.
const (
	featuresDir = "../features"
	catalogPath = "../features/rules.yaml"
)

var (
	shared     *target.Target
	sharedErr  error
	sharedOnce sync.Once
	recorder   *report.Recorder
)

// openShared opens the target once for every test of the run: one build, one API server.
func openShared() (*target.Target, error) {
	sharedOnce.Do(func() {
		root, err := filepath.Abs("..")
		if err != nil {
			sharedErr = err
			return
		}
		shared, sharedErr = target.OpenTarget(*targetFlag, root)
	})
	if sharedErr != nil {
		return nil, fmt.Errorf("target %s: %w", *targetFlag, sharedErr)
	}
	return shared, nil
}

func TestMain(m *testing.M) {
	flag.Parse()
	if *compareFlag != "" {
		if err := printComparison(*compareFlag); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		os.Exit(0)
	}
	scenarios, err := catalog.LoadFeatures(featuresDir)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	recorder = report.NewRecorder(os.Stdout, scenarios)
	code := m.Run()
	if *reportsFlag != "" && len(recorder.Outcomes) > 0 {
		if err := writeSummary(scenarios); err != nil {
			fmt.Fprintln(os.Stderr, "writing conformance.md:", err)
			code = 1
		}
	}
	if shared != nil {
		shared.Close()
	}
	os.Exit(code)
}

func writeSummary(scenarios []catalog.Scenario) error {
	c, err := catalog.LoadCatalog(catalogPath)
	if err != nil {
		return err
	}
	specs, err := catalog.GinkgoRules(".")
	if err != nil {
		return err
	}
	name, provides := *targetFlag, ""
	if shared != nil {
		name, provides = shared.Profile.Name, shared.Profile.Describe(scenarios)
	}
	path := filepath.Join(*reportsFlag, "conformance.md")
	if err := recorder.WriteMarkdown(path, name, provides, c, checkCoverage(c, scenarios, specs)); err != nil {
		return err
	}
	fmt.Println("wrote", path)
	return recorder.Results(name, c).WriteJSON(filepath.Join(*reportsFlag, "rules.json"))
}

// checkCoverage is the coverage gate over the suite's step definitions and the capabilities a
// profile can provide.
func checkCoverage(c *catalog.Catalog, scenarios []catalog.Scenario, specs map[string][]string) *catalog.Coverage {
	var defs []catalog.StepDef
	for _, d := range StepDefs() {
		defs = append(defs, catalog.StepDef{Expr: d.Expr, HasCode: d.Bind != nil})
	}
	return catalog.CheckCoverage(c, scenarios, specs, defs, target.CapabilityNames())
}

// printComparison prints the table of make conformance-peers from two rules.json files.
func printComparison(paths string) error {
	orchPath, peerPath, ok := strings.Cut(paths, ",")
	if !ok {
		return fmt.Errorf("-compare wants two rules.json files separated by a comma, got %q", paths)
	}
	orch, err := report.ReadResults(orchPath)
	if err != nil {
		return err
	}
	peer, err := report.ReadResults(peerPath)
	if err != nil {
		return err
	}
	report.Compare(orch, peer).Print(os.Stdout, orch, peer)
	return nil
}

// TestCoverage is `make coverage`: every catalog rule has a scenario or a dated pending entry, every
// tag names a catalog rule, and every step has exactly one definition with code.
func TestCoverage(t *testing.T) {
	c, err := catalog.LoadCatalog(catalogPath)
	if err != nil {
		t.Fatal(err)
	}
	scenarios, err := catalog.LoadFeatures(featuresDir)
	if err != nil {
		t.Fatal(err)
	}
	specs, err := catalog.GinkgoRules(".")
	if err != nil {
		t.Fatal(err)
	}
	cov := checkCoverage(c, scenarios, specs)
	var b strings.Builder
	covered, pending, total := 0, 0, 0
	fmt.Fprintf(&b, "%-16s %8s %8s %6s\n", "area", "covered", "pending", "total")
	for _, a := range cov.Areas {
		fmt.Fprintf(&b, "%-16s %8d %8d %6d\n", a.Area, a.Covered, a.Pending, a.Total)
		covered, pending, total = covered+a.Covered, pending+a.Pending, total+a.Total
	}
	fmt.Fprintf(&b, "%-16s %8d %8d %6d\n", "all", covered, pending, total)
	t.Logf("coverage of features/rules.yaml by %d scenarios:\n%s", len(scenarios), b.String())
	for _, p := range cov.Problems {
		t.Error(p)
	}
}

// TestConformance runs the feature files against the target through godog.
func TestConformance(t *testing.T) {
	tgt, err := openShared()
	if err != nil {
		t.Fatal(err)
	}
	format := "pretty"
	if *reportsFlag != "" {
		if err := os.MkdirAll(*reportsFlag, 0o755); err != nil {
			t.Fatal(err)
		}
		format = fmt.Sprintf("junit:%s,cucumber:%s",
			filepath.Join(*reportsFlag, "conformance-junit.xml"), filepath.Join(*reportsFlag, "conformance-cucumber.json"))
	}
	opts := godog.Options{
		Format: format,
		// Progress comes from the recorder; godog's own pretty output would repeat it.
		Output:      io.Discard,
		Paths:       []string{featuresDir},
		Tags:        *filterFlag,
		Strict:      true,
		Concurrency: *concurrencyFlag,
	}
	suite := godog.TestSuite{
		Name:                "orch conformance",
		ScenarioInitializer: InitializeScenario(tgt, recorder),
		Options:             &opts,
	}
	features, err := suite.RetrieveFeatures()
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, f := range features {
		total += len(f.Pickles)
	}
	recorder.SetTotal(total)
	all, err := catalog.LoadFeatures(featuresDir)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Print(tgt.Profile.Describe(all))
	fmt.Printf("conformance of %s (%s): %d scenarios\n", tgt.Profile.Name, *targetFlag, total)
	if status := suite.Run(); status != 0 {
		failed := 0
		for _, o := range recorder.Outcomes {
			if o.Status == report.StatusFailed {
				failed++
				t.Errorf("%s: %s", o.Ref, o.Detail)
			}
		}
		if failed == 0 {
			t.Errorf("godog exited %d", status)
		}
	}
}
