package sim

import (
	"strings"
	"testing"
	"time"

	"orch.io/orch/fakecri/script"
)

// gather reads the node's pressure conditions only when a reader stepped or the agent is new
// (read): at the end of every settle of a node whose memory crosses the hard threshold back and
// forth, and whose agent is killed and restarted under pressure, the traced conditions are what
// the eviction manager holds. Reading them at every look, as before, passes too; skipping a change
// fails.
func TestPressureTracedWhenItMoves(t *testing.T) {
	w, err := New(Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	q := func(s string) script.Quantity {
		v, err := script.ParseQuantity(s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	gi, system := q("1Gi"), q("200Mi")
	sc := &script.Script{Containers: []script.ContainerRule{{Match: script.ContainerMatch{Image: "flapper*"},
		Usage: &script.Usage{Memory: &script.Curve{Steps: []script.Step{
			{At: 0, Value: q("100Mi")}, {At: script.Duration(55 * time.Second), Value: q("800Mi")},
			{At: script.Duration(85 * time.Second), Value: q("100Mi")}, {At: script.Duration(115 * time.Second), Value: q("800Mi")},
			{At: script.Duration(145 * time.Second), Value: q("100Mi")}}}}}}}
	n, err := w.AddNode(NodeOptions{Name: "node-a", Script: sc, Host: &Host{Memory: &gi, SystemMemory: &system},
		Args: []string{"--pod-manifest-path=/etc/orch/manifests", "--eviction-hard=memory.available<100Mi", "--eviction-pressure-transition-period=20s"}})
	if err != nil {
		t.Fatal(err)
	}
	n.WriteManifest("flapper.yaml", []byte("apiVersion: v1\nkind: Pod\nmetadata: {name: flapper}\nspec:\n  containers:\n  - {name: app, image: flapper:1}\n"))
	restarted := false
	for {
		if err := w.settle(); err != nil {
			t.Fatal(err)
		}
		if want := pressureText(n); n.pressure != want {
			t.Fatalf("at %v: traced conditions %q, the eviction manager's %q", w.Now(), n.pressure, want)
		}
		if n.pressure != "" && n.pressure != "none" && !restarted {
			// Under pressure: a new agent's eviction manager starts without conditions.
			if err := n.Kill(); err != nil {
				t.Fatal(err)
			}
			if err := n.Restart(); err != nil {
				t.Fatal(err)
			}
			restarted = true
			continue
		}
		next, ok := w.next()
		if !ok || next.After(w.start.Add(5*time.Minute)) {
			break
		}
		w.Clock.Set(next)
	}
	lines := 0
	for _, e := range w.Trace() {
		if e.Kind == KindNode && strings.HasPrefix(e.Text, "conditions ") {
			lines++
		}
	}
	if !restarted || lines < 4 {
		t.Fatalf("restarted %v, %d conditions lines: the pressure did not move enough to test", restarted, lines)
	}
}
