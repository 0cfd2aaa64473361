// Command orchsim replays scenario files in simulated time: run compares each replay with its
// golden trace, list shows the scenarios, report writes reports/scenarios.md (or pages of plots),
// compare replays one scenario with other orchlet options and shows what differs, new writes a
// scenario skeleton.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"orch.io/orch/sim/scenario"
)

const usage = `orchsim replays node scenarios in simulated time, the same bytes every run.

Usage:
  orchsim run [--update] [--seed N] [--trace] [PATH...]   replay, check expectations, compare with golden traces
  orchsim new FILE                                        write a commented scenario skeleton to FILE (.yaml)
  orchsim list [PATH...]                                  name, simulated duration and rules of each scenario
  orchsim report [--out FILE] [PATH...]                   replay all and write the markdown report
  orchsim report --html DIR [PATH...]                     replay all and write a page of plots for each
  orchsim compare [--with 'OPTIONS']... [--sweep NAME=V1,V2,...] [--at COMMIT] [--node NAME]
                  [--seed N] [--html DIR] FILE            replay one scenario as written, with other orchlet
                                                          options and by orchsim built at another commit,
                                                          the same seed; show what differs

A PATH is a scenario file or a directory of them (*.yaml); the default is scenarios/.
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "run":
		return runCmd(args[1:], stdout, stderr)
	case "list":
		return listCmd(args[1:], stdout, stderr)
	case "report":
		return reportCmd(args[1:], stdout, stderr)
	case "compare":
		return compareCmd(args[1:], stdout, stderr)
	case "new":
		return newCmd(args[1:], stdout, stderr)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	}
	fmt.Fprintf(stderr, "orchsim: unknown command %q\n%s", args[0], usage)
	return 2
}

func flags(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("orchsim "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	return fs
}

// parseLoad parses a command's args with fs and loads the scenarios its paths name; false when it
// has reported why it cannot.
func parseLoad(fs *flag.FlagSet, args []string, stderr io.Writer) ([]*scenario.Scenario, bool) {
	if err := fs.Parse(args); err != nil {
		return nil, false
	}
	ss, err := load(fs.Args())
	if err != nil {
		fmt.Fprintln(stderr, "orchsim:", err)
		return nil, false
	}
	return ss, true
}

// load reads every scenario the paths name.
func load(paths []string) ([]*scenario.Scenario, error) {
	if len(paths) == 0 {
		paths = []string{"scenarios"}
	}
	var out []*scenario.Scenario
	for _, p := range paths {
		files, err := scenario.Find(p)
		if err != nil {
			return nil, err
		}
		if len(files) == 0 {
			return nil, fmt.Errorf("%s: no scenario files (*.yaml)", p)
		}
		for _, f := range files {
			s, err := scenario.Load(f)
			if err != nil {
				return nil, err
			}
			out = append(out, s)
		}
	}
	return out, nil
}

// replay runs one scenario and judges it: its expectations, and its golden trace when the seed is
// the scenario's own (a golden trace is for that seed). With update, the golden is rewritten instead.
func replay(s *scenario.Scenario, seed int64, update bool) scenario.Outcome {
	o := scenario.Outcome{Scenario: s}
	start := time.Now()
	r, err := s.Run(seed)
	if err != nil {
		o.Problems = []string{err.Error()}
		return o
	}
	r.Wall = time.Since(start)
	o.Result = r
	o.Problems = append(o.Problems, r.Failures...)
	switch {
	case seed != 0 && seed != s.Seed:
	case update:
		if err := r.Update(); err != nil {
			o.Problems = append(o.Problems, err.Error())
		}
	default:
		diff, err := r.Compare()
		if err != nil {
			o.Problems = append(o.Problems, err.Error())
		} else if diff != "" {
			o.Problems = append(o.Problems, "the trace differs from "+s.Golden()+":\n"+diff)
		}
	}
	return o
}

func runCmd(args []string, stdout, stderr io.Writer) int {
	fs := flags("run", stderr)
	update := fs.Bool("update", false, "rewrite the golden traces from this run")
	seed := fs.Int64("seed", 0, "replay with this seed instead of the scenario's own (expectations only: goldens are for the scenario's seed)")
	trace := fs.Bool("trace", false, "print each replay's trace")
	ss, ok := parseLoad(fs, args, stderr)
	if !ok {
		return 2
	}
	failed := 0
	for _, s := range ss {
		o := replay(s, *seed, *update)
		if *trace && o.Result != nil {
			fmt.Fprint(stdout, o.Result.Trace)
		}
		if !o.Pass() {
			failed++
			fmt.Fprintf(stdout, "FAIL %s\n", s.Name)
			for _, p := range o.Problems {
				fmt.Fprintf(stdout, "  %s\n", strings.ReplaceAll(strings.TrimRight(p, "\n"), "\n", "\n  "))
			}
			continue
		}
		verb := "ok  "
		if *update && (*seed == 0 || *seed == s.Seed) {
			verb = "updated"
		}
		fmt.Fprintf(stdout, "%s %s (%v simulated in %v, seed %d)\n", verb, s.Name, s.Duration.D(), o.Result.Wall.Round(time.Millisecond), o.Result.Seed)
	}
	if failed > 0 {
		fmt.Fprintf(stdout, "%d of %d scenarios failed\n", failed, len(ss))
		return 1
	}
	return 0
}

func newCmd(args []string, stdout, stderr io.Writer) int {
	fs := flags("new", stderr)
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() != 1 {
		fmt.Fprintln(stderr, "orchsim new: name the file to write")
		return 2
	}
	if err := scenario.WriteSkeleton(fs.Arg(0)); err != nil {
		fmt.Fprintln(stderr, "orchsim new:", err)
		return 2
	}
	fmt.Fprintf(stdout, "wrote %s; edit it, then orchsim run --update %s writes its golden trace\n", fs.Arg(0), fs.Arg(0))
	return 0
}

func listCmd(args []string, stdout, stderr io.Writer) int {
	fs := flags("list", stderr)
	ss, ok := parseLoad(fs, args, stderr)
	if !ok {
		return 2
	}
	for _, s := range ss {
		fmt.Fprintf(stdout, "%s\t%v\t%s\n", s.Name, s.Duration.D(), strings.TrimSpace(strings.SplitN(s.Description, "\n", 2)[0]))
		for _, r := range s.Rules {
			fmt.Fprintf(stdout, "\t- %s\n", r)
		}
	}
	return 0
}

func reportCmd(args []string, stdout, stderr io.Writer) int {
	fs := flags("report", stderr)
	out := fs.String("out", filepath.Join("reports", "scenarios.md"), "where to write the report")
	htmlDir := fs.String("html", "", "write DIR/index.html and a page of plots per scenario instead of the markdown report")
	ss, ok := parseLoad(fs, args, stderr)
	if !ok {
		return 2
	}
	if *htmlDir != "" {
		return htmlReport(ss, *htmlDir, stdout, stderr)
	}
	var outs []scenario.Outcome
	failed := 0
	for _, s := range ss {
		o := replay(s, 0, false)
		if !o.Pass() {
			failed++
		}
		outs = append(outs, o)
	}
	if err := writeFile(*out, scenario.Report(outs)); err != nil {
		fmt.Fprintln(stderr, "orchsim:", err)
		return 2
	}
	fmt.Fprintf(stdout, "%s: %d of %d scenarios pass\n", *out, len(ss)-failed, len(ss))
	if failed > 0 {
		return 1
	}
	return 0
}

// htmlReport judges each scenario as report does and writes its page of plots, drawn from a second
// replay that keeps every trace line and reads the nodes' signals.
func htmlReport(ss []*scenario.Scenario, dir string, stdout, stderr io.Writer) int {
	var index []scenario.IndexEntry
	failed := 0
	for _, s := range ss {
		o := replay(s, 0, false)
		if !o.Pass() {
			failed++
		}
		page := s.Name + ".html"
		index = append(index, scenario.IndexEntry{Outcome: o, Page: page})
		run, err := s.PlotRun()
		if err != nil {
			fmt.Fprintf(stderr, "orchsim: %s: %v\n", s.Name, err)
			return 2
		}
		if err := writeFile(filepath.Join(dir, page), scenario.Page(s, []scenario.Run{run})); err != nil {
			fmt.Fprintln(stderr, "orchsim:", err)
			return 2
		}
	}
	if err := writeFile(filepath.Join(dir, "index.html"), scenario.Index(index)); err != nil {
		fmt.Fprintln(stderr, "orchsim:", err)
		return 2
	}
	fmt.Fprintf(stdout, "%s: %d of %d scenarios pass\n", filepath.Join(dir, "index.html"), len(ss)-failed, len(ss))
	if failed > 0 {
		return 1
	}
	return 0
}

// writeFile writes a report file, making its directory.
func writeFile(path, content string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, []byte(content), 0o644)
}
