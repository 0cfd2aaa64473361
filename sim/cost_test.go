package sim

import (
	"bytes"
	"os"
	"runtime/pprof"
	"strings"
	"testing"

	"github.com/google/pprof/profile"
)

// cost splits the CPU a benchmark spends between the simulator's own work and the production
// code it drives, when SIM_COST is set (not with go test -cpuprofile: one CPU profile at a time).
// A sample goes by its innermost frame of this module: sim and fakecri are the harness,
// components/ the production code; samples with no such frame (the garbage collector's and the
// scheduler's own goroutines) are the rest.
type cost struct {
	buf bytes.Buffer
	on  bool
}

func startCost(b *testing.B) *cost {
	c := &cost{on: os.Getenv("SIM_COST") != ""}
	if c.on {
		if err := pprof.StartCPUProfile(&c.buf); err != nil {
			b.Fatal(err)
		}
	}
	return c
}

// report stops the profile and reports each share, and the harness's and the production code's
// CPU per trace line and per simulated node-second.
func (c *cost) report(b *testing.B, lines int, nodeSeconds float64) {
	if !c.on {
		return
	}
	pprof.StopCPUProfile()
	p, err := profile.Parse(&c.buf)
	if err != nil {
		b.Fatal(err)
	}
	cpu := len(p.SampleType) - 1 // cpu nanoseconds, after the sample count
	var harness, production, apiserver, rest int64
	for _, s := range p.Sample {
		switch owner(s) {
		case "harness":
			harness += s.Value[cpu]
		case "apiserver":
			apiserver += s.Value[cpu]
			production += s.Value[cpu]
		case "production":
			production += s.Value[cpu]
		default:
			rest += s.Value[cpu]
		}
	}
	total := float64(harness + production + rest)
	if total == 0 {
		return
	}
	b.ReportMetric(100*float64(harness)/total, "harness-%")
	b.ReportMetric(100*float64(production)/total, "production-%")
	b.ReportMetric(100*float64(apiserver)/total, "apiserver-%")
	b.ReportMetric(100*float64(rest)/total, "runtime-other-%")
	b.ReportMetric(float64(harness)/1e3/float64(max(lines, 1)), "harness-µs/line")
	b.ReportMetric(float64(harness)/1e3/nodeSeconds, "harness-µs/node-s")
	b.ReportMetric(float64(production)/1e3/nodeSeconds, "production-µs/node-s")
}

// owner is "harness" or "production" by the sample's innermost frame of this module, "" for none;
// production's "apiserver" when that frame is the API server's (a part of production).
func owner(s *profile.Sample) string {
	for _, loc := range s.Location {
		for _, l := range loc.Line {
			name := l.Function.Name
			switch {
			case strings.HasPrefix(name, "orch.io/orch/sim.") || strings.HasPrefix(name, "orch.io/orch/fakecri"):
				return "harness"
			case strings.HasPrefix(name, "orch.io/orch/components/apiserver/"):
				return "apiserver"
			case strings.HasPrefix(name, "orch.io/orch/components/") || strings.HasPrefix(name, "orch.io/orch/third_party/"):
				return "production"
			}
		}
	}
	return ""
}

func TestOwner(t *testing.T) {
	frame := func(names ...string) *profile.Sample {
		s := &profile.Sample{}
		for _, n := range names {
			s.Location = append(s.Location, &profile.Location{Line: []profile.Line{{Function: &profile.Function{Name: n}}}})
		}
		return s
	}
	for _, tc := range []struct {
		s    *profile.Sample
		want string
	}{
		{frame("runtime.mallocgc", "orch.io/orch/components/orchlet/pods.(*Manager).Step", "orch.io/orch/sim.(*World).settle"), "production"},
		{frame("syscall.Syscall6", "orch.io/orch/fakecri.(*Runtime).ListContainers", "orch.io/orch/components/orchlet/pods.(*Manager).Step"), "harness"},
		{frame("runtime.gcBgMarkWorker"), ""},
		{frame("encoding/json.Unmarshal", "orch.io/orch/components/apiserver/registry/generic.(*Store).decode", "orch.io/orch/sim.roundTripper.RoundTrip"), "apiserver"},
		{frame("strings.Index", "orch.io/orch/sim.(*World).record"), "harness"},
	} {
		if got := owner(tc.s); got != tc.want {
			t.Errorf("owner %v = %q, want %q", tc.s.Location[0].Line[0].Function.Name, got, tc.want)
		}
	}
}
