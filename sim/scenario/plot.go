package scenario

import (
	"fmt"
	"html"
	"math"
	"slices"
	"strings"
	"time"

	"orch.io/orch/components/orchlet/eviction"
	"orch.io/orch/sim"
)

// The plots' geometry: every chart shares one time axis, left pixels in, plotWidth wide.
const (
	chartWidth = 1000
	left       = 220
	plotWidth  = chartWidth - left - 30
	laneHeight = 16
	topPad     = 10
)

// runColors tell the runs apart in every chart; a run past the last reuses them.
var runColors = []string{"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#17becf"}

func runColor(i int) string { return runColors[i%len(runColors)] }

var conditionColors = map[string]string{"MemoryPressure": "#ff9800", "DiskPressure": "#7e57c2", "PIDPressure": "#795548"}

// xAt is where simulated time at falls on a chart of a scenario lasting d.
func xAt(at, d time.Duration) float64 {
	if d <= 0 {
		return left
	}
	return left + float64(plotWidth)*float64(at)/float64(d)
}

// Page is a self-contained HTML page of a scenario's runs (one for a report, several for a
// compare, overlaid): for each node its eviction signals against their thresholds, its pressure
// conditions as bands, each pod as a lane of its states with restarts and evictions marked, and its
// API request rate. Everything is inline SVG: nothing is fetched.
func Page(s *Scenario, runs []Run) string {
	var b strings.Builder
	d := s.Duration.D()
	fmt.Fprintf(&b, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>%s</title>\n<style>%s</style>\n</head>\n<body>\n", esc(s.Name), pageStyle)
	fmt.Fprintf(&b, "<h1>%s</h1>\n<p class=\"what\">%s</p>\n", esc(s.Name), esc(strings.TrimSpace(s.Description)))
	fmt.Fprintf(&b, "<p>%v simulated, seed %d.</p>\n<ul class=\"runs\">\n", d, runs[0].Result.Seed)
	for i, r := range runs {
		fmt.Fprintf(&b, "<li><span class=\"swatch\" style=\"background:%s\"></span>run %d: %s (%d trace lines)</li>\n", runColor(i), i+1, esc(r.Set.Name), r.Summary.Lines)
	}
	b.WriteString("</ul>\n")
	for _, node := range nodeNames(runs) {
		fmt.Fprintf(&b, "<h2>node %s</h2>\n", esc(node))
		signalCharts(&b, node, runs, d)
		conditionChart(&b, node, runs, d)
		podChart(&b, node, runs, d)
		apiChart(&b, node, runs, d)
	}
	b.WriteString("</body>\n</html>\n")
	return b.String()
}

const pageStyle = `body{font:14px sans-serif;margin:20px;color:#222}h2{margin-top:32px}h3{font-size:14px;margin:16px 0 4px}
.what{white-space:pre-wrap;max-width:960px}.runs{list-style:none;padding:0}.swatch{display:inline-block;width:12px;height:12px;margin-right:6px}
svg{display:block}svg text{font:11px sans-serif;fill:#333}.axis{stroke:#999}.grid{stroke:#eee}`

func esc(s string) string { return html.EscapeString(s) }

// nodeNames are the nodes of the scenario's runs, in name order.
func nodeNames(runs []Run) []string {
	seen := map[string]bool{}
	var names []string
	for _, r := range runs {
		for _, n := range r.Summary.Nodes {
			if !seen[n.Node] {
				seen[n.Node] = true
				names = append(names, n.Node)
			}
		}
	}
	slices.Sort(names)
	return names
}

// svgOpen starts a chart of height h with its time axis at the foot; svgClose ends it. The chart is
// drawn topPad pixels down, for the labels at its top.
func svgOpen(b *strings.Builder, class string, h int, d time.Duration) {
	fmt.Fprintf(b, "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"%s\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\">\n<g transform=\"translate(0,%d)\">\n",
		class, chartWidth, h+24+topPad, chartWidth, h+24+topPad, topPad)
	step := tickStep(d)
	for t := time.Duration(0); t <= d; t += step {
		x := xAt(t, d)
		fmt.Fprintf(b, "<line class=\"grid\" x1=\"%.1f\" y1=\"0\" x2=\"%.1f\" y2=\"%d\"/>\n", x, x, h)
		fmt.Fprintf(b, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%s</text>\n", x, h+16, sim.FormatOffset(t)[:8])
	}
	fmt.Fprintf(b, "<line class=\"axis\" x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\"/>\n", left, h, left+plotWidth, h)
}

func svgClose(b *strings.Builder) { b.WriteString("</g>\n</svg>\n") }

// tickStep is the round span that puts at most ten ticks on the axis.
func tickStep(d time.Duration) time.Duration {
	for _, s := range []time.Duration{time.Second, 5 * time.Second, 10 * time.Second, 30 * time.Second, time.Minute, 2 * time.Minute,
		5 * time.Minute, 10 * time.Minute, 15 * time.Minute, 30 * time.Minute, time.Hour, 2 * time.Hour, 6 * time.Hour, 12 * time.Hour} {
		if d/s <= 10 {
			return s
		}
	}
	return 24 * time.Hour
}

// signalCharts draws each signal the node's samples observed that has a threshold or moved: what
// was available in each run, and the run's thresholds on it, dashed.
func signalCharts(b *strings.Builder, node string, runs []Run, d time.Duration) {
	for si, sig := range sim.SampledSignals {
		var top, low, high uint64
		low = math.MaxUint64
		thresholds := false
		for _, r := range runs {
			for _, x := range r.Result.Samples[node] {
				top = max(top, x.Capacity[si])
				low, high = min(low, x.Available[si]), max(high, x.Available[si])
			}
			for _, t := range r.Result.Thresholds[node] {
				thresholds = thresholds || t.Signal == sig
			}
		}
		// A signal without a threshold that stays within 1% of its capacity says nothing.
		if top == 0 || !thresholds && (high-low)*100 < top {
			continue
		}
		const h = 140
		y := func(v float64) float64 { return h - h*v/float64(top) }
		fmt.Fprintf(b, "<h3>%s</h3>\n", sig)
		svgOpen(b, "signal", h, d)
		unit := formatBytes
		if sig == eviction.SignalPIDAvailable {
			unit = func(v uint64) string { return fmt.Sprint(v) }
		}
		for _, f := range []uint64{0, top / 2, top} {
			fmt.Fprintf(b, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n", left-6, y(float64(f))+4, unit(f))
		}
		for i, r := range runs {
			var pts []string
			for _, x := range r.Result.Samples[node] {
				pts = append(pts, fmt.Sprintf("%.1f,%.1f", xAt(x.At, d), y(float64(x.Available[si]))))
			}
			fmt.Fprintf(b, "<polyline class=\"available\" data-run=\"%d\" fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\" points=\"%s\"/>\n", i+1, runColor(i), strings.Join(pts, " "))
			for _, t := range r.Result.Thresholds[node] {
				if t.Signal != sig {
					continue
				}
				v := thresholdValue(t, top)
				fmt.Fprintf(b, "<line class=\"threshold\" data-run=\"%d\" x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"%s\" stroke-dasharray=\"6,4\"><title>%s</title></line>\n",
					i+1, left, y(v), left+plotWidth, y(v), runColor(i), esc(t.String()))
				fmt.Fprintf(b, "<text x=\"%d\" y=\"%.1f\" fill=\"%s\">%s</text>\n", left+4, y(v)-3, runColor(i), esc(t.String()))
			}
		}
		svgClose(b)
	}
}

// thresholdValue is a threshold in the signal's units, a percentage taken of capacity.
func thresholdValue(t eviction.Threshold, capacity uint64) float64 {
	if t.Value.Quantity != nil {
		return float64(t.Value.Quantity.Value())
	}
	return float64(capacity) * float64(t.Value.Percentage)
}

func formatBytes(v uint64) string {
	switch {
	case v >= 1<<30:
		return fmt.Sprintf("%.1fGi", float64(v)/(1<<30))
	case v >= 1<<20:
		return fmt.Sprintf("%.0fMi", float64(v)/(1<<20))
	}
	return fmt.Sprintf("%dKi", v>>10)
}

// span is a stretch of time something held.
type span struct {
	from, to time.Duration
	what     string
}

// conditionChart draws a band per run and condition the node came under.
func conditionChart(b *strings.Builder, node string, runs []Run, d time.Duration) {
	type lane struct {
		label string
		run   int
		cond  string
		spans []span
	}
	var lanes []lane
	for i, r := range runs {
		byCond := map[string][]span{}
		open := map[string]time.Duration{}
		for _, e := range r.Result.Entries {
			if e.Node != node || e.Kind != sim.KindNode {
				continue
			}
			now := map[string]bool{}
			if p := strings.TrimPrefix(e.Text, "conditions "); p != "none" && p != "" {
				for _, c := range strings.Split(p, ",") {
					now[c] = true
				}
			}
			for c, from := range open {
				if !now[c] {
					byCond[c] = append(byCond[c], span{from, e.At, c})
					delete(open, c)
				}
			}
			for c := range now {
				if _, ok := open[c]; !ok {
					open[c] = e.At
				}
			}
		}
		for c, from := range open {
			byCond[c] = append(byCond[c], span{from, d, c})
		}
		for _, c := range sortedKeys(byCond) {
			lanes = append(lanes, lane{fmt.Sprintf("%s · run %d", c, i+1), i, c, byCond[c]})
		}
	}
	b.WriteString("<h3>pressure conditions</h3>\n")
	if len(lanes) == 0 {
		b.WriteString("<p>none in any run</p>\n")
		return
	}
	h := len(lanes) * (laneHeight + 4)
	svgOpen(b, "conditions", h, d)
	for li, l := range lanes {
		y := li * (laneHeight + 4)
		fmt.Fprintf(b, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\" fill=\"%s\">%s</text>\n", left-6, y+12, runColor(l.run), esc(l.label))
		for _, s := range l.spans {
			fmt.Fprintf(b, "<rect class=\"condition\" data-run=\"%d\" data-condition=\"%s\" x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"%d\" fill=\"%s\"><title>%s %s to %s</title></rect>\n",
				l.run+1, l.cond, xAt(s.from, d), y, xAt(s.to, d)-xAt(s.from, d), laneHeight, conditionColors[l.cond], l.cond, sim.FormatOffset(s.from), sim.FormatOffset(s.to))
		}
	}
	svgClose(b)
}

// podLane is one pod in one run: its states, restarts and evictions.
type podLane struct {
	pod      string
	run      int
	states   []span
	restarts []time.Duration
	evicted  []time.Duration
}

func podLanes(node string, runs []Run, d time.Duration) []podLane {
	var lanes []podLane
	for i, r := range runs {
		byPod := map[string]*podLane{}
		var order []string
		for _, e := range r.Result.Entries {
			if e.Node != node || e.Kind != sim.KindPod {
				continue
			}
			key, state, _ := strings.Cut(e.Text, " ")
			l := byPod[key]
			if l == nil {
				l = &podLane{pod: key, run: i}
				byPod[key] = l
				order = append(order, key)
			}
			last := ""
			restarts := 0
			if n := len(l.states); n > 0 {
				l.states[n-1].to = e.At
				last = l.states[n-1].what
				restarts = podRestarts(last)
			}
			if podRestarts(state) > restarts {
				l.restarts = append(l.restarts, e.At)
			}
			if strings.Contains(state, " reason=Evicted") && !strings.Contains(last, " reason=Evicted") {
				l.evicted = append(l.evicted, e.At)
			}
			l.states = append(l.states, span{e.At, d, state})
		}
		for _, key := range order {
			lanes = append(lanes, *byPod[key])
		}
	}
	slices.SortStableFunc(lanes, func(a, b podLane) int { return strings.Compare(a.pod, b.pod) })
	return lanes
}

// stateColor colours a pod's trace state: pending grey, ready green, running but not ready amber,
// succeeded blue, failed red.
func stateColor(state string) string {
	phase, _, _ := strings.Cut(state, " ")
	switch {
	case phase == "gone":
		return ""
	case phase == "Running" && podReady(state):
		return "#66bb6a"
	case phase == "Running":
		return "#ffca28"
	case phase == "Succeeded":
		return "#64b5f6"
	case phase == "Failed":
		return "#ef5350"
	}
	return "#bdbdbd"
}

// podChart draws a lane per pod and run: its states as coloured stretches, a tick at each restart
// and a red cross at each eviction (class "eviction", data-at its trace time).
func podChart(b *strings.Builder, node string, runs []Run, d time.Duration) {
	lanes := podLanes(node, runs, d)
	b.WriteString("<h3>pods</h3>\n")
	if len(lanes) == 0 {
		b.WriteString("<p>no pods</p>\n")
		return
	}
	b.WriteString("<p class=\"legend\">")
	for _, l := range [][2]string{{"#bdbdbd", "pending"}, {"#66bb6a", "running, ready"}, {"#ffca28", "running, not ready"}, {"#64b5f6", "succeeded"}, {"#ef5350", "failed"}} {
		fmt.Fprintf(b, "<span class=\"swatch\" style=\"background:%s\"></span>%s ", l[0], l[1])
	}
	b.WriteString("| a black tick: a restart | a red cross: an eviction</p>\n")
	h := len(lanes) * (laneHeight + 4)
	svgOpen(b, "pods", h, d)
	for li, l := range lanes {
		y := li * (laneHeight + 4)
		label := l.pod
		if len(runs) > 1 {
			label += fmt.Sprintf(" · run %d", l.run+1)
		}
		fmt.Fprintf(b, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\" fill=\"%s\">%s</text>\n", left-6, y+12, runColor(l.run), esc(label))
		for _, s := range l.states {
			c := stateColor(s.what)
			if c == "" || s.to == s.from {
				continue
			}
			fmt.Fprintf(b, "<rect class=\"state\" x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"%d\" fill=\"%s\"><title>%s %s from %s</title></rect>\n",
				xAt(s.from, d), y, xAt(s.to, d)-xAt(s.from, d), laneHeight, c, esc(l.pod), esc(s.what), sim.FormatOffset(s.from))
		}
		for _, t := range l.restarts {
			x := xAt(t, d)
			fmt.Fprintf(b, "<line class=\"restart\" x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#000\" stroke-width=\"2\"><title>restart at %s</title></line>\n",
				x, y, x, y+laneHeight, sim.FormatOffset(t))
		}
		for _, t := range l.evicted {
			x, cy := xAt(t, d), y+laneHeight/2
			fmt.Fprintf(b, "<g class=\"eviction\" data-pod=\"%s\" data-run=\"%d\" data-at=\"%s\" transform=\"translate(%.1f,%d)\"><title>%s evicted at %s</title>"+
				"<path d=\"M-6,-6L6,6M-6,6L6,-6\" stroke=\"#b71c1c\" stroke-width=\"3\"/></g>\n",
				esc(l.pod), l.run+1, sim.FormatOffset(t), x, cy, esc(l.pod), sim.FormatOffset(t))
		}
	}
	svgClose(b)
}

// apiChart draws the node's API requests per second, counted over round stretches of about a
// fiftieth of the scenario (round, so that a periodic request falls once in each).
func apiChart(b *strings.Builder, node string, runs []Run, d time.Duration) {
	width := 24 * time.Hour
	for _, w := range []time.Duration{time.Second, 10 * time.Second, 30 * time.Second, time.Minute, 5 * time.Minute, 10 * time.Minute, 30 * time.Minute, time.Hour} {
		if w*50 >= d {
			width = w
			break
		}
	}
	n := int((d + width - 1) / width)
	rates := make([][]float64, len(runs))
	top, any := 1.0, false
	for i, r := range runs {
		counts := make([]int, n)
		for _, e := range r.Result.Entries {
			if e.Node == node && e.Kind == sim.KindAPI {
				counts[min(int(e.At/width), n-1)]++
				any = true
			}
		}
		rates[i] = make([]float64, n)
		for k, c := range counts {
			rates[i][k] = float64(c) / width.Seconds()
			top = max(top, rates[i][k])
		}
	}
	if !any {
		return
	}
	const h = 100
	y := func(v float64) float64 { return h - h*v/top }
	fmt.Fprintf(b, "<h3>API requests per second (over %v)</h3>\n", width)
	svgOpen(b, "api", h, d)
	for _, f := range []float64{0, top} {
		fmt.Fprintf(b, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%.3g/s</text>\n", left-6, y(f)+4, f)
	}
	for i := range runs {
		var pts []string
		for k, v := range rates[i] {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f %.1f,%.1f", xAt(time.Duration(k)*width, d), y(v), xAt(min(time.Duration(k+1)*width, d), d), y(v)))
		}
		fmt.Fprintf(b, "<polyline class=\"rate\" data-run=\"%d\" fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\" points=\"%s\"/>\n", i+1, runColor(i), strings.Join(pts, " "))
	}
	svgClose(b)
}

// IndexEntry is one scenario in the report's index page.
type IndexEntry struct {
	Outcome Outcome
	// Page is the scenario page's file name.
	Page string
}

// Index is the report's first page: each scenario, its verdict and a link to its page.
func Index(entries []IndexEntry) string {
	var b strings.Builder
	fmt.Fprintf(&b, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>scenarios</title>\n<style>%s</style>\n</head>\n<body>\n<h1>scenarios</h1>\n<table>\n<tr><th>scenario</th><th>simulated</th><th>result</th></tr>\n", pageStyle)
	for _, e := range entries {
		verdict := "pass"
		if !e.Outcome.Pass() {
			verdict = "fail: " + strings.Join(e.Outcome.Problems, "; ")
		}
		fmt.Fprintf(&b, "<tr><td><a href=\"%s\">%s</a></td><td>%s</td><td>%s</td></tr>\n", esc(e.Page), esc(e.Outcome.Scenario.Name), sim.FormatOffset(e.Outcome.Scenario.Duration.D()), esc(verdict))
	}
	b.WriteString("</table>\n</body>\n</html>\n")
	return b.String()
}

// PlotRun replays the scenario as written for its page: every trace line kept, the nodes' signals
// read every SignalPeriod.
func (s *Scenario) PlotRun() (Run, error) {
	r, err := s.RunWith(RunOptions{Full: true, SignalPeriod: s.SignalPeriod()})
	if err != nil {
		return Run{}, err
	}
	return Run{Set: OptionSet{Name: "as written"}, Result: r, Summary: Summarize(r.Entries, s.Duration.D())}, nil
}

// SignalPeriod is how often a plotted replay reads its nodes' signals: about 500 readings over
// the scenario, one a second at most.
func (s *Scenario) SignalPeriod() time.Duration {
	return max(s.Duration.D()/500, time.Second)
}
