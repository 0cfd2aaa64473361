package main

import (
	"fmt"
	"io"
	"path/filepath"

	"orch.io/orch/sim/scenario"
)

// optionSets is --with, given once per run.
type optionSets []scenario.OptionSet

func (o *optionSets) String() string { return fmt.Sprint(len(*o), " option sets") }

func (o *optionSets) Set(v string) error {
	set, err := scenario.ParseOptionSet(v)
	if err != nil {
		return err
	}
	*o = append(*o, set)
	return nil
}

func compareCmd(args []string, stdout, stderr io.Writer) int {
	fs := flags("compare", stderr)
	var sets optionSets
	fs.Var(&sets, "with", "orchlet options for one more run, space-separated name=value (once per run)")
	sweep := fs.String("sweep", "", "one more run per value of an option: name=v1,v2,... (a value without \"<\" keeps the signal of the one before: eviction-hard=memory.available<100Mi,200Mi)")
	node := fs.String("node", "", "the one node that takes the options (default every node)")
	htmlDir := fs.String("html", "", "also write the runs' plots, overlaid, to DIR/<scenario>-compare.html")
	seed := fs.Int64("seed", 0, "the seed of every run (default the scenario's own)")
	at := fs.String("at", "", "one more run: the scenario as written, replayed by orchsim (and so the orchlet) built at this commit")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() != 1 {
		fmt.Fprintln(stderr, "orchsim compare: name one scenario file")
		return 2
	}
	if *sweep != "" {
		swept, err := scenario.ParseSweep(*sweep)
		if err != nil {
			fmt.Fprintln(stderr, "orchsim compare:", err)
			return 2
		}
		sets = append(sets, swept...)
	}
	if len(sets) == 0 && *at == "" {
		fmt.Fprintln(stderr, "orchsim compare: name something to try: --with, --sweep or --at")
		return 2
	}
	s, err := scenario.Load(fs.Arg(0))
	if err != nil {
		fmt.Fprintln(stderr, "orchsim compare:", err)
		return 2
	}
	var atRun scenario.Run
	if *at != "" {
		bin, hash, err := buildAt(*at, stderr)
		if err != nil {
			fmt.Fprintln(stderr, "orchsim compare:", err)
			return 2
		}
		if atRun, err = replayAt(bin, "as written, orchsim at "+hash[:12], s, *seed); err != nil {
			fmt.Fprintln(stderr, "orchsim compare:", err)
			return 2
		}
	}
	o := scenario.CompareOptions{Seed: *seed, Sets: sets, Node: *node}
	if *htmlDir != "" {
		o.SignalPeriod = s.SignalPeriod()
	}
	runs, err := s.Compare(o)
	if err != nil {
		fmt.Fprintln(stderr, "orchsim compare:", err)
		return 2
	}
	if atRun.Result != nil {
		runs = append(runs[:1], append([]scenario.Run{atRun}, runs[1:]...)...)
	}
	fmt.Fprint(stdout, scenario.CompareText(s, runs))
	fmt.Fprintf(stdout, "\noutcome of each run:\n%s", scenario.SweepTable(runs))
	if *htmlDir != "" {
		path := filepath.Join(*htmlDir, s.Name+"-compare.html")
		if err := writeFile(path, scenario.Page(s, runs)); err != nil {
			fmt.Fprintln(stderr, "orchsim compare:", err)
			return 2
		}
		fmt.Fprintf(stdout, "\nplots: %s\n", path)
	}
	return 0
}
