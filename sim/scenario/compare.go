package scenario

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	apiversion "k8s.io/apimachinery/pkg/version"
	"orch.io/orch/components/orchlet/options"
	"orch.io/orch/sim"
)

// OptionSet is one run of a compare: orchlet options every node of the scenario takes in place of
// its own options of the same names.
type OptionSet struct {
	// Name is how the run is shown ("as written", or the options).
	Name string
	// Args are "--name=value" options.
	Args []string
}

// ParseOptionSet reads a --with value: orchlet options separated by spaces, each "name=value" or
// "--name=value".
func ParseOptionSet(s string) (OptionSet, error) {
	var set OptionSet
	for _, f := range strings.Fields(s) {
		arg, err := normalizeOption(f)
		if err != nil {
			return OptionSet{}, err
		}
		set.Args = append(set.Args, arg)
	}
	if len(set.Args) == 0 {
		return OptionSet{}, errors.New("an option set names at least one option (--with 'eviction-hard=memory.available<300Mi')")
	}
	set.Name = strings.Join(set.Args, " ")
	return set, nil
}

func normalizeOption(f string) (string, error) {
	arg := "--" + strings.TrimLeft(f, "-")
	if name, _, ok := strings.Cut(arg, "="); !ok || name == "--" {
		return "", fmt.Errorf("option %q: want name=value", f)
	}
	return arg, nil
}

// ParseSweep reads a --sweep value, "name=v1,v2,v3", into one option set per value. A value that
// names no signal of its own takes the text up to the last "<" of the value before it, so
// "eviction-hard=memory.available<100Mi,200Mi" sweeps memory.available<100Mi then <200Mi.
func ParseSweep(s string) ([]OptionSet, error) {
	name, list, ok := strings.Cut(strings.TrimLeft(s, "-"), "=")
	if !ok || name == "" || list == "" {
		return nil, fmt.Errorf("--sweep %q: want name=value1,value2 (two values or more)", s)
	}
	var sets []OptionSet
	prefix := ""
	for _, v := range strings.Split(list, ",") {
		if v == "" {
			return nil, fmt.Errorf("--sweep %q: an empty value", s)
		}
		if i := strings.LastIndex(v, "<"); i >= 0 {
			prefix = v[:i+1]
		} else {
			v = prefix + v
		}
		arg := "--" + name + "=" + v
		sets = append(sets, OptionSet{Name: arg, Args: []string{arg}})
	}
	if len(sets) < 2 {
		return nil, fmt.Errorf("--sweep %q: a sweep takes two values or more", s)
	}
	return sets, nil
}

// withArgs is the node with set's options in place of its own of the same names, whether the node
// gives one as "--name=value" or as "--name value".
func (n Node) withArgs(set []string) Node {
	if len(set) == 0 {
		return n
	}
	names := map[string]bool{}
	for _, a := range set {
		name, _, _ := strings.Cut(a, "=")
		names[name] = true
	}
	var args []string
	for i := 0; i < len(n.Args); i++ {
		name, _, hasValue := strings.Cut(n.Args[i], "=")
		if !names[name] {
			args = append(args, n.Args[i])
			continue
		}
		// "--name value" in two arguments goes whole.
		if !hasValue && i+1 < len(n.Args) && !strings.HasPrefix(n.Args[i+1], "-") {
			i++
		}
	}
	n.Args = append(args, set...)
	return n
}

// checkArgs parses the node's options as the orchlet will, so that a misspelt or invalid option
// is refused before anything runs rather than traced as a node that did not start.
func checkArgs(n Node) error {
	args, remove, err := withConfigFile(n)
	if err != nil {
		return err
	}
	defer remove()
	if _, err := options.Parse(args, apiversion.Info{GitVersion: "v0.0.0-sim"}); err != nil {
		return fmt.Errorf("node %s: %w", n.Name, err)
	}
	return nil
}

// Run is one run of a compare.
type Run struct {
	Set     OptionSet
	Result  *Result
	Summary Summary
}

// CompareOptions are a compare's runs.
type CompareOptions struct {
	// Seed is every run's seed (0: the scenario's own).
	Seed int64
	// Sets are the runs besides the scenario as written.
	Sets []OptionSet
	// Node, when set, is the one node that takes the sets' options; by default every node does.
	Node string
	// SignalPeriod, when positive, reads each node's signals that often (Result.Samples).
	SignalPeriod time.Duration
}

// Compare replays s once as written and once per option set (none: the one run), keeping every trace line (the
// scenario's omit globs do not apply). Every run's options are parsed as the orchlet parses them
// before anything runs: a misspelt or invalid option is refused by name.
func (s *Scenario) Compare(o CompareOptions) ([]Run, error) {
	if o.Node != "" && !slices.ContainsFunc(s.Nodes, func(n Node) bool { return n.Name == o.Node }) {
		return nil, fmt.Errorf("--node: the scenario has no node %q", o.Node)
	}
	all := append([]OptionSet{{Name: "as written"}}, o.Sets...)
	for i, set := range all {
		for _, n := range s.Nodes {
			if o.Node != "" && n.Name != o.Node {
				continue
			}
			if err := checkArgs(n.withArgs(set.Args)); err != nil {
				return nil, fmt.Errorf("run %d (%s): %w", i+1, set.Name, err)
			}
		}
	}
	runs := make([]Run, len(all))
	for i, set := range all {
		r, err := s.RunWith(RunOptions{Seed: o.Seed, Args: set.Args, Node: o.Node, Full: true, SignalPeriod: o.SignalPeriod})
		if err != nil {
			return nil, fmt.Errorf("run %d (%s): %w", i+1, set.Name, err)
		}
		runs[i] = Run{Set: set, Result: r, Summary: Summarize(r.Entries, s.Duration.D())}
	}
	return runs, nil
}

// CompareText is what differs between the runs: each figure of a node or pod that is not the same
// in every run, then where each run's trace first parts from the first run's.
func CompareText(s *Scenario, runs []Run) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %d runs of %v simulated, seed %d\n", s.Name, len(runs), s.Duration.D(), runs[0].Result.Seed)
	for i, r := range runs {
		fmt.Fprintf(&b, "  run %d: %s (%d trace lines)\n", i+1, r.Set.Name, r.Summary.Lines)
	}
	type key struct{ subject, figure string }
	var order []key
	values := map[key][]string{}
	for i, r := range runs {
		for _, rw := range r.Summary.rows() {
			k := key{rw.subject, rw.figure}
			if values[k] == nil {
				order = append(order, k)
				values[k] = make([]string, len(runs))
				for j := range values[k] {
					values[k][j] = "-"
				}
			}
			values[k][i] = rw.value
		}
	}
	b.WriteString("\n")
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprint(tw, "what differs")
	for i := range runs {
		fmt.Fprintf(tw, "\trun %d", i+1)
	}
	fmt.Fprintln(tw)
	differs, subject := 0, ""
	for _, k := range order {
		v := values[k]
		same := true
		for _, x := range v[1:] {
			same = same && x == v[0]
		}
		if same {
			continue
		}
		differs++
		if k.subject != subject {
			subject = k.subject
			fmt.Fprintln(tw, subject+strings.Repeat("\t", len(runs)))
		}
		fmt.Fprintf(tw, "  %s\t%s\n", k.figure, strings.Join(v, "\t"))
	}
	_ = tw.Flush()
	if differs == 0 {
		b.WriteString("  nothing: every node and pod figure is the same in every run\n")
	}
	b.WriteString("\n")
	first := strings.Split(strings.TrimSuffix(runs[0].Result.Trace, "\n"), "\n")
	for i, r := range runs[1:] {
		lines := strings.Split(strings.TrimSuffix(r.Result.Trace, "\n"), "\n")
		n, a, c := partAt(first, lines)
		if n == 0 {
			fmt.Fprintf(&b, "run %d's trace is the same as run 1's\n", i+2)
			continue
		}
		fmt.Fprintf(&b, "run %d parts from run 1 at trace line %d:\n  run 1: %s\n  run %d: %s\n", i+2, n, a, i+2, c)
	}
	return b.String()
}

// partAt is the first line (from 1) where a and b differ and what each holds there ("(end of
// trace)" past one's end); 0 when they are the same.
func partAt(a, b []string) (int, string, string) {
	for i := 0; i < max(len(a), len(b)); i++ {
		x, y := "(end of trace)", "(end of trace)"
		if i < len(a) {
			x = a[i]
		}
		if i < len(b) {
			y = b[i]
		}
		if x != y {
			return i + 1, x, y
		}
	}
	return 0, "", ""
}

// SweepTable tabulates each run's outcome: the pods evicted and when the first was, restarts, time
// under each pressure condition, images pulled and collected, API requests and event writes.
func SweepTable(runs []Run) string {
	conds := map[string]bool{}
	for _, r := range runs {
		for _, n := range r.Summary.Nodes {
			for c := range n.Pressure {
				conds[c] = true
			}
		}
	}
	condList := sortedKeys(conds)
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprint(tw, "run\tevicted\tfirst eviction\trestarts")
	for _, c := range condList {
		fmt.Fprintf(tw, "\t%s", c)
	}
	fmt.Fprintln(tw, "\tpulled\tcollected\tapi requests\tevents\tpods evicted")
	for _, r := range runs {
		pods, first, names := r.Summary.evictions()
		firstText := "-"
		if first >= 0 {
			firstText = sim.FormatOffset(first)
		}
		restarts := 0
		for _, p := range r.Summary.Pods {
			restarts += p.Restarts
		}
		pressure := map[string]time.Duration{}
		pulled, collected, requests, events := 0, 0, 0, 0
		for _, n := range r.Summary.Nodes {
			for c, d := range n.Pressure {
				pressure[c] += d
			}
			pulled += n.ImagesPulled
			collected += n.ImagesRemoved
			for _, v := range n.Requests {
				requests += v
			}
			for _, v := range n.Events {
				events += v
			}
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%d", r.Set.Name, pods, firstText, restarts)
		for _, c := range condList {
			fmt.Fprintf(tw, "\t%s", formatSpan(pressure[c]))
		}
		evicted := strings.Join(names, " ")
		if evicted == "" {
			evicted = "-"
		}
		fmt.Fprintf(tw, "\t%d\t%d\t%d\t%d\t%s\n", pulled, collected, requests, events, evicted)
	}
	_ = tw.Flush()
	return b.String()
}
