package scenario

import (
	"encoding/xml"
	"fmt"
	"io"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"orch.io/orch/sim"
)

// svgs are the page's charts, each checked to be well-formed XML.
func svgs(t *testing.T, page string) []string {
	t.Helper()
	var out []string
	for rest := page; ; {
		i := strings.Index(rest, "<svg ")
		if i < 0 {
			return out
		}
		j := strings.Index(rest[i:], "</svg>")
		if j < 0 {
			t.Fatalf("an <svg> without its end in\n%s", rest[i:])
		}
		svg := rest[i : i+j+len("</svg>")]
		dec := xml.NewDecoder(strings.NewReader(svg))
		for {
			if _, err := dec.Token(); err == io.EOF {
				break
			} else if err != nil {
				t.Fatalf("chart %d is not well-formed: %v\n%s", len(out)+1, err, svg)
			}
		}
		out = append(out, svg)
		rest = rest[i+j:]
	}
}

// reportPage is a shipped scenario's page as orchsim report --html draws it, with its replay.
func reportPage(t *testing.T, file string) (*Scenario, *Result, string) {
	t.Helper()
	s, err := Load(filepath.Join("..", "..", "scenarios", file))
	if err != nil {
		t.Fatal(err)
	}
	run, err := s.PlotRun()
	if err != nil {
		t.Fatal(err)
	}
	return s, run.Result, Page(s, []Run{run})
}

var evictionMark = regexp.MustCompile(`<g class="eviction" data-pod="([^"]+)" data-run="(\d+)" data-at="([^"]+)" transform="translate\(([\d.]+),`)

// The report's page of the memory leak marks each eviction at the time its trace records it, at
// the place that time falls on the axis; draws memory.available falling to the threshold of 100Mi;
// bands MemoryPressure from 6m to 7m1s; and fetches nothing.
func TestPageMarksTheTrace(t *testing.T) {
	s, r, page := reportPage(t, "eviction-memory-leak-hard.yaml")
	charts := svgs(t, page)
	if len(charts) != 4 {
		t.Errorf("%d charts, want memory.available (the only signal with a threshold or a change), conditions, pods and API rate", len(charts))
	}

	// The trace's own eviction times, read from its pod lines.
	var want []string
	for _, line := range strings.Split(r.Trace, "\n") {
		if f := strings.Fields(line); len(f) > 5 && f[2] == "pod" && f[5] == "reason=Evicted" {
			want = append(want, f[3]+" "+f[0])
		}
	}
	var got []string
	for _, m := range evictionMark.FindAllStringSubmatch(page, -1) {
		got = append(got, m[1]+" "+m[3])
		at, err := time.Parse("15:04:05.000", m[3])
		if err != nil {
			t.Fatal(err)
		}
		d := at.Sub(time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC))
		if x := fmt.Sprintf("%.1f", xAt(d, s.Duration.D())); m[4] != x {
			t.Errorf("%s evicted at %s is marked at x=%s, want %s", m[1], m[3], m[4], x)
		}
	}
	want = dedupe(want)
	slices.Sort(want)
	wantSet := strings.Join(want, ", ")
	if g := strings.Join(got, ", "); g != wantSet || g != "default/late-best-effort 00:06:30.000, default/leaker 00:06:00.000" {
		t.Errorf("eviction marks %q; the trace evicts %q", g, wantSet)
	}

	for _, frag := range []string{
		`<h3>memory.available</h3>`,
		`<title>memory.available&lt;100Mi</title>`,
		`data-condition="MemoryPressure" x="782.5"`,
		`<title>MemoryPressure 00:06:00.000 to 00:07:01.000</title>`,
		`<title>default/web Running app=running from 00:00:05.000</title>`,
	} {
		if !strings.Contains(page, frag) {
			t.Errorf("the page lacks %q", frag)
		}
	}
	// The threshold of 100Mi of 1Gi, on a chart 140 high.
	if !regexp.MustCompile(`class="threshold" data-run="1" x1="220" y1="126.3"`).MatchString(page) {
		t.Errorf("no threshold line at 100Mi of 1Gi")
	}
	if strings.Count(page, "http") != len(charts) || strings.Contains(page, "<script") || strings.Contains(page, "<link") {
		t.Errorf("the page refers to something besides the SVG namespace")
	}
}

// dedupe keeps the first of each pod's evictions in the order the trace has them (a pod's
// Failed line repeats as its containers change).
func dedupe(lines []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, l := range lines {
		pod := strings.Fields(l)[0]
		if !seen[pod] {
			seen[pod] = true
			out = append(out, l)
		}
	}
	return out
}

// A compare's page overlays its runs: a lane per pod and run, each run's eviction at its own time
// and each run's threshold on the signal.
func TestComparePage(t *testing.T) {
	s, err := Load(filepath.Join("..", "..", "scenarios", "eviction-memory-leak-hard.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	sets, err := ParseSweep("eviction-hard=memory.available<300Mi,100Mi")
	if err != nil {
		t.Fatal(err)
	}
	runs, err := s.Compare(CompareOptions{Sets: sets[:1], SignalPeriod: s.SignalPeriod()})
	if err != nil {
		t.Fatal(err)
	}
	page := Page(s, runs)
	svgs(t, page)
	var leaker []string
	for _, m := range evictionMark.FindAllStringSubmatch(page, -1) {
		if m[1] == "default/leaker" {
			leaker = append(leaker, "run "+m[2]+" "+m[3])
		}
	}
	if g := strings.Join(leaker, ", "); g != "run 1 00:06:00.000, run 2 00:04:20.000" {
		t.Errorf("leaker's evictions %q, want run 1 at 6m and run 2 at 4m20s", g)
	}
	for _, frag := range []string{
		"default/leaker · run 2",
		`<title>memory.available&lt;300Mi</title>`,
		`<title>memory.available&lt;100Mi</title>`,
		`<title>MemoryPressure 00:04:20.000 to 00:05:21.000</title>`,
	} {
		if !strings.Contains(page, frag) {
			t.Errorf("the page lacks %q", frag)
		}
	}
}

// A crash loop's lane has a tick at each restart the trace records, at its time.
func TestPageMarksRestarts(t *testing.T) {
	s, r, page := reportPage(t, "crash-loop-backoff.yaml")
	svgs(t, page)
	var want []string
	restarts := 0
	for _, e := range r.Entries {
		if e.Node == "node-a" && e.Kind == "pod" && strings.HasPrefix(e.Text, "default/crash-node-a ") {
			if n := podRestarts(e.Text); n > restarts {
				restarts = n
				want = append(want, fmt.Sprintf(`x1="%.1f" y1="0" x2="%.1f" y2="16" stroke="#000" stroke-width="2"><title>restart at %s</title>`,
					xAt(e.At, s.Duration.D()), xAt(e.At, s.Duration.D()), sim.FormatOffset(e.At)))
			}
		}
	}
	if len(want) < 5 {
		t.Fatalf("%d restarts in the crash loop's trace, want 5 or more", len(want))
	}
	for _, w := range want {
		if !strings.Contains(page, w) {
			t.Errorf("no restart tick %s", w)
		}
	}
}
