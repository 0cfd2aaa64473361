package script

import (
	"encoding/json"
	"math"
	"reflect"
	"testing"
	"time"
)

func TestExampleScript(t *testing.T) {
	s, err := Load("../examples/scenario.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if s.Seed != 42 || s.Node.RuntimeName != "containerd" || len(s.Images) != 4 || len(s.Containers) != 6 ||
		len(s.Exec) != 3 || len(s.Faults) != 4 {
		t.Fatalf("%+v", s)
	}
	if s.Images[0].PullDuration.D() != 12*time.Second || s.Images[0].Size.Value() != 70*mi {
		t.Fatalf("%+v", s.Images[0])
	}
	if s.Node.ImageFs.Capacity.Value() != 20*gi {
		t.Fatal("capacity")
	}
	m := s.Containers[1].Usage.Memory
	if m.Ramp == nil || m.Ramp.PerSecond.Value() != 2*mi {
		t.Fatalf("%+v", m)
	}
	if s.Containers[5].Usage.PIDs.Constant.Value() != 12 || len(s.Containers[5].Usage.Disk.Steps) != 3 {
		t.Fatal("shorthand curves")
	}
	// renders and reads back the same
	y, err := s.YAML()
	if err != nil {
		t.Fatal(err)
	}
	s2, err := Parse(y)
	if err != nil {
		t.Fatalf("%v\n%s", err, y)
	}
	a, _ := json.Marshal(s)
	b, _ := json.Marshal(s2)
	if string(a) != string(b) {
		t.Fatalf("round trip differs:\n%s\n%s", a, b)
	}
}

func TestScriptErrors(t *testing.T) {
	for _, bad := range []string{
		"nodes: {}",                                // unknown field
		"images: [{size: 1Gi}]",                    // match missing
		"images: [{match: x, size: lots}]",         // bad quantity
		"images: [{match: x, pullDuration: soon}]", // bad duration
		"images: [{match: x, digest: sha256:abc}]", // bad digest
		"faults: [{method: Nope, latency: 1s}]",    // no such method
		"faults: [{method: Status, error: {code: Teapot}}]",
		"faults: [{method: Status, probability: 2, error: {code: Internal}}]",
		"faults: [{method: Status, hang: true, error: {code: Internal}}]",
		"node: {cgroupDriver: openrc}",
		"node: {podCIDR: 10.0.0.0/31}",
		"node: {containerFs: tmpfs}",
		"node: {imageFs: {capacity: 1Gi, used: 2Gi}}",
		"containers: [{match: {name: x}, usage: {memory: {ramp: {from: 1Mi}}}}]",
		"containers: [{match: {name: x}, usage: {cpu: {constant: 1, steps: [{at: 0s, value: 1}]}}}]",
		"containers: [{match: {name: x}, exit: {after: -1s}}]",
	} {
		if _, err := Parse([]byte(bad)); err == nil {
			t.Errorf("accepted %q", bad)
		}
	}
	if s, err := Parse(nil); err != nil || !reflect.DeepEqual(s, &Script{}) {
		t.Fatal(s, err)
	}
}

func TestLogScriptErrors(t *testing.T) {
	for _, bad := range []string{
		"containers: [{match: {name: x}, logs: {every: 1s}}]",
		"containers: [{match: {name: x}, logs: {lines: [a]}}]",
		"containers: [{match: {name: x}, logs: {lines: [a], every: 1s, stream: stdin}}]",
		"containers: [{match: {name: x}, logs: {lines: [a], every: 1s, count: -1}}]",
	} {
		if _, err := Parse([]byte(bad)); err == nil {
			t.Errorf("accepted %q", bad)
		}
	}
}

func TestPortRulesValidated(t *testing.T) {
	for _, s := range []Script{
		{Ports: []PortRule{{Port: 80}}},
		{Ports: []PortRule{{Port: 80, Echo: true, HTTP: &HTTPAnswer{}}}},
		{Ports: []PortRule{{Port: 0, Echo: true}}},
		{Ports: []PortRule{{Port: 80, Echo: true, Match: ContainerMatch{Name: "app"}}}},
		{Files: []FileRule{{Path: "relative"}}},
	} {
		if _, err := Compile(&s, 1); err == nil {
			t.Errorf("%+v accepted", s)
		}
	}
}

func TestCurves(t *testing.T) {
	c, err := compileCurve(&Curve{Ramp: &Ramp{From: N(10), To: ptrQ("110"), Over: Duration(10 * time.Second), After: Duration(5 * time.Second)}}, "x")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		t    time.Duration
		v, i float64
	}{{0, 10, 0}, {5 * time.Second, 10, 50}, {10 * time.Second, 60, 50 + 175}, {15 * time.Second, 110, 50 + 600}, {20 * time.Second, 110, 650 + 550}} {
		if got := c.At(tc.t); math.Abs(got-tc.v) > 1e-9 {
			t.Errorf("at(%v)=%v want %v", tc.t, got, tc.v)
		}
		if got := c.integral(tc.t); math.Abs(got-tc.i) > 1e-6 {
			t.Errorf("integral(%v)=%v want %v", tc.t, got, tc.i)
		}
	}
	if d, ok := c.FirstReach(60); !ok || d != 10*time.Second {
		t.Errorf("firstReach %v %v", d, ok)
	}
	if _, ok := c.FirstReach(111); ok {
		t.Error("never reaches 111")
	}
	s, _ := compileCurve(&Curve{Steps: []Step{{At: Duration(time.Second), Value: N(5)}, {At: Duration(3 * time.Second), Value: N(1)}}}, "s")
	if s.At(0) != 0 || s.At(2*time.Second) != 5 || s.At(time.Hour) != 1 || s.integral(4*time.Second) != 11 {
		t.Errorf("steps %v %v %v %v", s.At(0), s.At(2*time.Second), s.At(time.Hour), s.integral(4*time.Second))
	}
	if d, ok := s.FirstReach(4); !ok || d != time.Second {
		t.Error("steps firstReach")
	}
	if got := s.IntegralCapped(4*time.Second, 2); got != 5 {
		t.Errorf("capped %v", got)
	}
	for _, bad := range []*Curve{
		{Ramp: &Ramp{From: N(1)}},
		{Ramp: &Ramp{From: N(1), To: ptrQ("2")}},
		{Constant: ptrQ("-1")},
		{Constant: ptrQ("1"), Steps: []Step{{Value: N(1)}}},
	} {
		if _, err := compileCurve(bad, "bad"); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}

func ptrQ(s string) *Quantity {
	q := Q(s)
	return &q
}

// A script without fault rules compiles to no fault table (the runtime reads none at a call); one
// with a rule has a row for every method, the rule in the rows of the methods it names.
func TestFaultTable(t *testing.T) {
	for _, s := range []*Script{nil, {}} {
		c, err := Compile(s, 1)
		if err != nil {
			t.Fatal(err)
		}
		if c.Faults != nil {
			t.Fatalf("%+v: a fault table %v", s, c.Faults)
		}
	}
	c, err := Compile(&Script{Faults: []FaultRule{{Method: "List*", Hang: true}}}, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Faults) != len(Methods) {
		t.Fatalf("%d rows, want one for each of %d methods", len(c.Faults), len(Methods))
	}
	for m, name := range Methods {
		if want := len(name) > 4 && name[:4] == "List"; (len(c.Faults[m]) == 1) != want {
			t.Errorf("%s: rules %v, want the rule %v", name, c.Faults[m], want)
		}
	}
}
