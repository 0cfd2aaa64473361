package sim

import (
	"flag"
	"fmt"
	"math/rand"
	"slices"
	"testing"
	"time"

	"orch.io/orch/fakecri/script"
	"orch.io/orch/sim/converge"
)

var (
	soakFor  = flag.Duration("soak", 20*time.Minute, "simulated time of TestRuntimeFaultSoak (make soak-runtime: 10h)")
	soakSeed = flag.Int64("soak-seed", 1, "seed of TestRuntimeFaultSoak's faults and churn")
)

// soakFaults fail every method of the runtime at seeded random, and delay the methods only the pod
// workers call: a short and a long delay, and rarely a call held to its deadline. The simulator
// steps the collectors, the eviction manager and the log rotation in its driver, where a call
// waiting on the clock would wait for ever (only the pod workers' calls may park), so the methods
// those call are failed but not delayed.
func soakFaults() []script.FaultRule {
	rules := []script.FaultRule{
		{Method: "*", Probability: 0.02, Error: &script.FaultError{Code: "Unavailable", Message: "soak: runtime unavailable"}},
		{Method: "*", Probability: 0.01, Error: &script.FaultError{Code: "Internal", Message: "soak: runtime failed"}},
	}
	for _, m := range []string{"RunPodSandbox", "StopPodSandbox", "PodSandboxStatus", "CreateContainer", "StartContainer", "PullImage", "Version", "Status"} {
		rules = append(rules,
			script.FaultRule{Method: m, Probability: 0.05, Latency: script.Duration(2 * time.Second)},
			script.FaultRule{Method: m, Probability: 0.01, Latency: script.Duration(20 * time.Second)},
			script.FaultRule{Method: m, Probability: 0.002, Hang: true})
	}
	return rules
}

const (
	soakPods      = 110
	soakChurn     = 10 // pods replaced each soakEvery
	soakEvery     = 2 * time.Minute
	syncFrequency = time.Minute
)

// TestRuntimeFaultSoak runs a node of 110 pods, 10 of them replaced every 2 minutes, on a runtime
// that fails and delays every method at seeded random (soakFaults), for -soak of simulated time.
// Then the faults stop: within one sync period the runtime must run exactly the pods that should
// run, each once (Converged). A panic anywhere fails the run. make test runs 20 simulated minutes;
// make soak-runtime runs 10 hours.
func TestRuntimeFaultSoak(t *testing.T) {
	started := time.Now()
	w, err := New(Options{Seed: *soakSeed, Keep: func(Entry) bool { return false }})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	n, err := w.AddNode(NodeOptions{Name: "node-a", Script: &script.Script{Seed: *soakSeed, Faults: soakFaults()}, Args: []string{
		"--pod-manifest-path=/etc/orch/manifests", "--max-pods=220", fmt.Sprintf("--sync-frequency=%s", syncFrequency),
	}})
	if err != nil {
		t.Fatal(err)
	}
	images := []string{"busybox:1.36", "nginx:1.27", "registry.example/app:1"}
	want := map[string][]string{}
	next := 0
	add := func() {
		name := fmt.Sprintf("pod-%d", next)
		next++
		n.WriteManifest(name+".yaml", []byte(fmt.Sprintf("apiVersion: v1\nkind: Pod\nmetadata: {name: %s}\nspec:\n  containers:\n  - {name: app, image: %q}\n", name, images[next%len(images)])))
		want["default/"+name+"-node-a"] = []string{"app"}
	}
	for range soakPods {
		add()
	}
	rng := rand.New(rand.NewSource(*soakSeed))
	for at := soakEvery; at <= *soakFor; at += soakEvery {
		if err := w.RunUntil(at); err != nil {
			t.Fatal(err)
		}
		for range soakChurn {
			// The oldest of the pods that should run is not always the one removed: a seeded pick.
			var names []string
			for key := range want {
				names = append(names, key)
			}
			slices.Sort(names)
			victim := names[rng.Intn(len(names))]
			delete(want, victim)
			n.DeleteManifest(victim[len("default/"):len(victim)-len("-node-a")] + ".yaml")
			add()
		}
	}
	calls := n.Runtime.LastSeq()
	if err := n.SetScript(&script.Script{}); err != nil {
		t.Fatal(err)
	}
	stopped := w.Now()
	if err := w.Advance(syncFrequency); err != nil {
		t.Fatal(err)
	}
	st := n.Runtime.State()
	t.Logf("soak: %v simulated (seed %d) in %v; %d pods made, %d should run; %d runtime calls; at the end %d sandboxes and %d containers in the runtime",
		stopped, *soakSeed, time.Since(started).Round(time.Millisecond), next, len(want), calls, len(st.Sandboxes), len(st.Containers))
	if err := converge.Converged(st, want); err != nil {
		t.Fatalf("one sync period after the faults stopped: %v", err)
	}
}
