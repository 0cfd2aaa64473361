package scenario

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"orch.io/orch/components/orchlet/eviction"
	"orch.io/orch/sim"
)

// Result is one replay of a scenario.
type Result struct {
	Scenario *Scenario
	Seed     int64
	// Trace is the trace text, without the omitted lines.
	Trace   string
	Entries []sim.Entry
	// Failures are the expectations the trace does not meet.
	Failures []string
	// Wall is how long the replay took in real time, measured by the caller.
	Wall time.Duration
	// Samples are each node's signals, read every RunOptions.SignalPeriod, and Thresholds the
	// node's eviction thresholds on them.
	Samples    map[string][]sim.Sample
	Thresholds map[string][]eviction.Threshold
}

// RunOptions change a replay from the scenario as written.
type RunOptions struct {
	// Seed is the world's seed (0: the scenario's own).
	Seed int64
	// Args are orchlet options ("--name=value") every node takes in place of its own of the same
	// names.
	Args []string
	// Node, when set, is the one node that takes Args.
	Node string
	// Full keeps the trace lines the scenario's omit globs leave out.
	Full bool
	// SignalPeriod, when positive, reads each node's eviction signals that often (Result.Samples).
	SignalPeriod time.Duration
}

// Run replays the scenario with seed (0: the scenario's own) and checks its expectations.
func (s *Scenario) Run(seed int64) (*Result, error) {
	return s.RunWith(RunOptions{Seed: seed})
}

// RunWith replays the scenario changed by o and checks its expectations.
func (s *Scenario) RunWith(o RunOptions) (*Result, error) {
	seed := o.Seed
	if seed == 0 {
		seed = s.Seed
	}
	var omit []glob
	if !o.Full {
		for _, p := range s.Omit {
			omit = append(omit, compileGlob(p))
		}
	}
	w, err := sim.New(sim.Options{Seed: seed, APIServer: s.APIServer(), SignalPeriod: o.SignalPeriod, Keep: func(e sim.Entry) bool {
		line := e.Kind + " " + e.Text
		for _, g := range omit {
			if g.match(line) {
				return false
			}
		}
		return true
	}})
	if err != nil {
		return nil, err
	}
	defer w.Close()
	for _, n := range s.Nodes {
		if o.Node == "" || o.Node == n.Name {
			n = n.withArgs(o.Args)
		}
		args, remove, err := withConfigFile(n)
		if err != nil {
			return nil, err
		}
		node, err := w.AddNode(sim.NodeOptions{Name: n.Name, Args: args, Script: n.Fakecri, Cores: n.Cores, API: n.API, Host: n.Host})
		remove()
		var refused *sim.StartRefused
		if errors.As(err, &refused) {
			w.Note(n.Name, "orchlet refused to start: %s", strings.ReplaceAll(refused.Err.Error(), "\n", "; "))
			continue
		}
		if err != nil {
			return nil, err
		}
		for _, f := range n.Manifests {
			write(node, f)
		}
		if n.URL != nil {
			serve(node, n.URL)
		}
	}
	snaps := newSnapshots(s.Expect, s.Nodes[0].Name)
	for _, st := range s.Timeline {
		if err := snaps.takeUntil(w, st.At.D()); err != nil {
			return nil, err
		}
		if err := w.RunUntil(st.At.D()); err != nil {
			return nil, err
		}
		node := w.Nodes()[0]
		if st.Node != "" {
			node, _ = w.Node(st.Node)
		}
		if st.Write != nil {
			write(node, *st.Write)
		}
		for _, name := range st.Delete {
			node.DeleteManifest(name)
		}
		if st.Serve != nil {
			serve(node, st.Serve)
		}
		if st.Fakecri != nil {
			if err := node.SetScript(st.Fakecri); err != nil {
				return nil, err
			}
		}
		if err := apiStep(w, st); err != nil {
			return nil, err
		}
		if err := orchletStep(node, st); err != nil {
			return nil, err
		}
	}
	if err := snaps.takeUntil(w, s.Duration.D()); err != nil {
		return nil, err
	}
	if err := w.RunUntil(s.Duration.D()); err != nil {
		return nil, err
	}
	r := &Result{Scenario: s, Seed: seed, Trace: w.TraceText(), Entries: w.Trace()}
	if o.SignalPeriod > 0 {
		r.Samples, r.Thresholds = map[string][]sim.Sample{}, map[string][]eviction.Threshold{}
		for _, n := range w.Nodes() {
			r.Samples[n.Name] = n.Samples()
			cfg, err := eviction.ConfigFrom(n.Config)
			if err != nil {
				return nil, fmt.Errorf("node %s: %w", n.Name, err)
			}
			r.Thresholds[n.Name] = cfg.Thresholds
		}
	}
	r.Failures = append(s.Expect.check(r, s.Nodes[0].Name), s.Expect.checkRuntime(snaps.taken, s.Nodes[0].Name)...)
	return r, nil
}

// apiStep makes a step's changes through the API server, and takes it down or up.
func apiStep(w *sim.World, st Step) error {
	if st.APIServer != "" {
		if err := w.SetAPIServerDown(st.APIServer == "down"); err != nil {
			return err
		}
	}
	if st.CreatePod != "" {
		pod, err := podManifest(st.CreatePod)
		if err != nil {
			return err
		}
		if err := w.CreatePod(pod); err != nil {
			return err
		}
	}
	if st.BindPod != nil {
		namespace, name, _ := splitPod(st.BindPod.Pod)
		if err := w.BindPod(namespace, name, st.BindPod.Node); err != nil {
			return err
		}
	}
	if st.DeletePod != "" {
		namespace, name, _ := splitPod(st.DeletePod)
		if err := w.DeletePod(namespace, name, nil); err != nil {
			return err
		}
	}
	return nil
}

func write(n *sim.Node, f File) {
	if f.Repeat <= 0 {
		n.WriteManifest(f.Name, []byte(f.Content))
		return
	}
	for i := 1; i <= f.Repeat; i++ {
		r := strings.NewReplacer("{i}", strconv.Itoa(i))
		n.WriteManifest(r.Replace(f.Name), []byte(r.Replace(f.Content)))
	}
}

func serve(n *sim.Node, s *Serve) {
	status := s.Status
	if status == 0 {
		status = http.StatusOK
	}
	n.Serve(status, []byte(s.Body))
}

// check lists the expectations r's trace does not meet.
func (e Expect) check(r *Result, firstNode string) []string {
	var fails []string
	lines := strings.Split(strings.TrimSuffix(r.Trace, "\n"), "\n")
	count := func(pattern string) int {
		g := compileGlob(pattern)
		n := 0
		for _, l := range lines {
			if g.match(l) {
				n++
			}
		}
		return n
	}
	for _, p := range e.Contains {
		if count(p) == 0 {
			fails = append(fails, fmt.Sprintf("no trace line matches %q", p))
		}
	}
	for _, p := range e.Absent {
		if n := count(p); n > 0 {
			fails = append(fails, fmt.Sprintf("%d trace lines match %q, which must not appear", n, p))
		}
	}
	for _, c := range e.Count {
		if n := count(c.Match); n != c.Lines {
			fails = append(fails, fmt.Sprintf("%d trace lines match %q, want %d", n, c.Match, c.Lines))
		}
	}
	for _, ec := range e.Events {
		verb := "*"
		if ec.Verb != "" {
			verb = ec.Verb
		}
		if n := count("* event " + verb + " * " + ec.Reason + " *"); n != ec.Count {
			fails = append(fails, fmt.Sprintf("%d event writes (%s) of reason %s, want %d", n, verb, ec.Reason, ec.Count))
		}
	}
	for _, p := range e.Pods {
		node := p.Node
		if node == "" {
			node = firstNode
		}
		state := "gone"
		for _, en := range r.Entries {
			if en.At > p.At.D() {
				break
			}
			if en.Node == node && en.Kind == sim.KindPod && strings.HasPrefix(en.Text, p.Pod+" ") {
				state = strings.TrimPrefix(en.Text, p.Pod+" ")
			}
		}
		if !compileGlob(p.State).match(state) {
			fails = append(fails, fmt.Sprintf("pod %s on %s at %s is %q, want %q", p.Pod, node, sim.FormatOffset(p.At.D()), state, p.State))
		}
	}
	return fails
}

// Compare checks r's trace against the golden file: "" when they are the same, else a readable
// diff.
func (r *Result) Compare() (string, error) {
	want, err := os.ReadFile(r.Scenario.Golden())
	if err != nil {
		return "", fmt.Errorf("golden trace: %w (write it with orchsim run --update)", err)
	}
	if string(want) == r.Trace {
		return "", nil
	}
	return Diff(string(want), r.Trace), nil
}

// Update writes r's trace as the golden trace.
func (r *Result) Update() error {
	return os.WriteFile(r.Scenario.Golden(), []byte(r.Trace), 0o644)
}

// glob matches "*" to any run of characters and "?" to one; everything else is literal.
type glob struct{ pat []rune }

func compileGlob(p string) glob { return glob{pat: []rune(p)} }

func (g glob) match(s string) bool {
	str := []rune(s)
	p, i := 0, 0
	star, mark := -1, 0
	for i < len(str) {
		switch {
		case p < len(g.pat) && (g.pat[p] == '?' || g.pat[p] == str[i]):
			p++
			i++
		case p < len(g.pat) && g.pat[p] == '*':
			star, mark = p, i
			p++
		case star >= 0:
			p = star + 1
			mark++
			i = mark
		default:
			return false
		}
	}
	for p < len(g.pat) && g.pat[p] == '*' {
		p++
	}
	return p == len(g.pat)
}
