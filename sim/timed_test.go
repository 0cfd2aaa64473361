package sim

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"orch.io/orch/components/orchlet/agent"
	"orch.io/orch/fakecri/script"
)

// The node keeps its timed readers' earliest deadline (the garbage collectors' and the volume
// stats' periods) and its sources' next poll, and does not ask them again until it passed: at
// every instant a settle ends, none of them is left due, and the node's next due time is not after
// any of their deadlines, while a manifest comes and goes. A restart's new agent has collectors
// and polls due at once, earlier than the killed one's kept deadlines: the test fails if a kept
// deadline outlives the agent it was read from. A third node's eviction manager is woken by the
// simulated kernel's notification at 57s, before its deadline, and evicts: the test fails if the
// deadline kept from before that round outlives it.
func TestTimedReadersStepWhenDue(t *testing.T) {
	var host Host
	var grower script.Script
	if err := json.Unmarshal([]byte(`{"memory": "1Gi", "systemMemory": "200Mi"}`), &host); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(`{"containers": [{"match": {"image": "grower*"},
		"usage": {"memory": {"steps": [{"at": "0s", "value": "10Mi"}, {"at": "52s", "value": "800Mi"}]}}}]}`), &grower); err != nil {
		t.Fatal(err)
	}
	w, nodes := worldOf(t, Options{Seed: 1, APIServer: true},
		NodeOptions{Name: "standalone", Args: []string{"--pod-manifest-path=/etc/orch/manifests"}},
		NodeOptions{Name: "api", API: true},
		NodeOptions{Name: "notified", API: true, Host: &host, Script: &grower,
			Args: []string{"--kernel-memcg-notification", "--eviction-hard=memory.available<100Mi", "--eviction-pressure-transition-period=30s"}})
	timed := 0
	check := func() {
		t.Helper()
		now := w.Clock.Now()
		for _, n := range nodes {
			if n.down {
				continue
			}
			due := n.nextDue(now)
			for _, c := range append(n.readers, n.feeders...) {
				if !timedReader[c.Name()] && c.Name() != agent.ComponentSources {
					continue
				}
				timed++
				if !c.Idle() {
					t.Fatalf("%s at %v: the %s is due and was not stepped", n.Name, w.Now(), c.Name())
				}
				d, ok := c.NextDeadline()
				if ok && (due.IsZero() || due.After(d)) {
					t.Fatalf("%s at %v: next due %v, after the %s's deadline %v", n.Name, w.Now(), due.Sub(w.start), c.Name(), d.Sub(w.start))
				}
				if kept := n.timedKnown && n.timedAny && n.timedDue.After(now); kept && timedReader[c.Name()] && ok && n.timedDue.After(d) {
					t.Fatalf("%s at %v: the timed readers' deadline kept %v, after the %s's %v", n.Name, w.Now(), n.timedDue.Sub(w.start), c.Name(), d.Sub(w.start))
				}
			}
		}
	}
	for s := 1; s <= 11*60; s++ {
		if err := w.RunUntil(time.Duration(s) * time.Second); err != nil {
			t.Fatal(err)
		}
		check()
		switch s {
		case 5:
			if err := w.CreatePod(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "grower"}, Spec: corev1.PodSpec{NodeName: "notified",
				Containers: []corev1.Container{{Name: "app", Image: "grower:1"}}}}); err != nil {
				t.Fatal(err)
			}
		case 30:
			nodes[0].WriteManifest("web.yaml", []byte(webManifest))
		case 200:
			nodes[0].DeleteManifest("web.yaml")
		case 90, 400:
			for _, n := range nodes {
				if err := n.Kill(); err != nil {
					t.Fatal(err)
				}
			}
		case 93, 403:
			for _, n := range nodes {
				if err := n.Restart(); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	if timed == 0 {
		t.Fatal("no timed reader checked")
	}
}

// begin takes a node that rested with none of its pod workers' calls in progress, and no Step
// since, as settled once its runtime is: noCalls must never be set while a call is in progress.
// Background pulls of 30s outlive the Steps that start them, and a manifest written later starts
// another while the first runs; the node is killed and restarted mid-pull. With serialized pulls
// the same story holds the Steps instead. Fails when a rest that finds a call in progress leaves
// noCalls as an earlier rest set it, or when rest trusts the Step alone with background pulls.
func TestNoCallsOnlyWhenNone(t *testing.T) {
	for _, serialize := range []string{"false", "true"} {
		t.Run("serialize-image-pulls="+serialize, func(t *testing.T) { noCallsOnlyWhenNone(t, serialize) })
	}
}

func noCallsOnlyWhenNone(t *testing.T, serialize string) {
	w, err := New(Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	slow := &script.Script{Images: []script.ImageRule{{Match: "busybox*", PullDuration: script.Duration(30 * time.Second)}}}
	n, err := w.AddNode(NodeOptions{Name: "node-a", Script: slow, Args: []string{"--pod-manifest-path=/etc/orch/manifests", "--serialize-image-pulls=" + serialize}})
	if err != nil {
		t.Fatal(err)
	}
	n.WriteManifest("web.yaml", []byte(webManifest))
	set, during := 0, 0
	for s := 1; s <= 180; s++ {
		if err := w.RunUntil(time.Duration(s) * time.Second); err != nil {
			t.Fatal(err)
		}
		if !n.down {
			c := n.pods.PeekCalls()
			if n.noCalls && (n.stepping || c.InFlight > 0) {
				t.Fatalf("at %v: noCalls with %d calls in progress (stepping %v)", w.Now(), c.InFlight, n.stepping)
			}
			if n.noCalls {
				set++
			}
			if c.InFlight > 0 {
				during++
			}
		}
		switch s {
		case 10:
			n.WriteManifest("db.yaml", []byte(strings.ReplaceAll(strings.ReplaceAll(webManifest, "web", "db"), "1.36", "1.37")))
		case 100:
			n.WriteManifest("late.yaml", []byte(strings.ReplaceAll(strings.ReplaceAll(webManifest, "web", "late"), "1.36", "1.38")))
		case 110:
			if err := n.Kill(); err != nil {
				t.Fatal(err)
			}
		case 112:
			if err := n.Restart(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if set == 0 || during == 0 {
		t.Fatalf("noCalls set at %d settles, calls in progress at %d: the test does not exercise both", set, during)
	}
}
