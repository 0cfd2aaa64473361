package sources

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/benbjohnson/clock"
)

const node = "node-a"

// podYAML is a minimal valid pod manifest; extra lines are appended under metadata.
func podYAML(name, image string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: Pod\nmetadata:\n  name: %s\nspec:\n  containers:\n  - name: c\n    image: %s\n", name, image)
}

func podJSON(name, image string) string {
	return fmt.Sprintf(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":%q},"spec":{"containers":[{"name":"c","image":%q}]}}`, name, image)
}

func file(s string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(s)} }

// problems collects reports in order.
type problems struct{ got []Problem }

func (p *problems) Report(pr Problem) { p.got = append(p.got, pr) }

func (p *problems) reasons() []string {
	var out []string
	for _, pr := range p.got {
		out = append(out, pr.Reason+" "+pr.Origin)
	}
	return out
}

func newMock() *clock.Mock {
	clk := clock.NewMock()
	clk.Set(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	return clk
}

func mustNew(t *testing.T, clk clock.Clock, r Reporter, polls ...Poll) *Sources {
	t.Helper()
	s, err := New(Options{Clock: clk, NodeName: node, Reporter: r}, polls...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// lines renders updates one per line for comparison.
func lines(us []Update) string {
	var b strings.Builder
	for _, u := range us {
		fmt.Fprintf(&b, "%s %s %s/%s\n", u.Op, u.Source, u.Pod.Namespace, u.Pod.Name)
	}
	return b.String()
}

// counting wraps a source and records the clock time of each read.
type counting struct {
	Source
	clk   clock.Clock
	reads []time.Duration
	start time.Time
}

func (c *counting) Read(ctx context.Context) ([]Manifest, error) {
	c.reads = append(c.reads, c.clk.Now().Sub(c.start))
	return c.Source.Read(ctx)
}
