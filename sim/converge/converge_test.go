package converge

import (
	"strings"
	"testing"

	"orch.io/orch/fakecri"
)

func TestConverged(t *testing.T) {
	const ready, notReady, running, exited = "SANDBOX_READY", "SANDBOX_NOTREADY", "CONTAINER_RUNNING", "CONTAINER_EXITED"
	sb := func(id, name, state string) fakecri.SandboxState {
		return fakecri.SandboxState{ID: id, Name: name, Namespace: "default", State: state}
	}
	ctr := func(id, sandbox, name, state string) fakecri.ContainerState {
		return fakecri.ContainerState{ID: id, SandboxID: sandbox, Name: name, State: state}
	}
	want := map[string][]string{"default/web": {"app"}, "default/pair": {"a", "b"}}
	good := fakecri.State{
		Sandboxes:  []fakecri.SandboxState{sb("s1", "web", ready), sb("s2", "pair", ready), sb("s0", "web", notReady)},
		Containers: []fakecri.ContainerState{ctr("c1", "s1", "app", running), ctr("c2", "s2", "a", running), ctr("c3", "s2", "b", running), ctr("c0", "s0", "app", exited)},
	}
	for _, tc := range []struct {
		name string
		st   fakecri.State
		want []string // parts of the error, none for converged
		// kinds counts Differences' findings: leaked, doubled, missing.
		kinds [3]int
	}{
		{name: "each pod once, what is left stopped", st: good},
		{name: "a pod with two ready sandboxes", st: fakecri.State{
			Sandboxes:  append(append([]fakecri.SandboxState{}, good.Sandboxes...), sb("s3", "web", ready)),
			Containers: good.Containers,
		}, want: []string{"default/web: 2 ready sandboxes"}, kinds: [3]int{0, 1, 0}},
		{name: "a container twice, one missing", st: fakecri.State{
			Sandboxes:  good.Sandboxes,
			Containers: []fakecri.ContainerState{ctr("c1", "s1", "app", running), ctr("c2", "s2", "a", running), ctr("c4", "s2", "a", running)},
		}, want: []string{"default/pair/a: 2 running", "default/pair/b: 0 running"}, kinds: [3]int{0, 1, 1}},
		{name: "a pod that should not run, a container outside a ready sandbox", st: fakecri.State{
			Sandboxes:  append(append([]fakecri.SandboxState{}, good.Sandboxes...), sb("s9", "gone", ready)),
			Containers: append(append([]fakecri.ContainerState{}, good.Containers...), ctr("c9", "s0", "app", running)),
		}, want: []string{"sandbox s9 of default/gone ready, no such pod", "container c9 (app) running outside a ready sandbox"}, kinds: [3]int{2, 0, 0}},
		{name: "nothing runs", st: fakecri.State{}, want: []string{"default/pair: 0 ready sandboxes", "default/web/app: 0 running"}, kinds: [3]int{0, 0, 5}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := Differences(tc.st, want)
			if got := [3]int{len(d.Leaked), len(d.Doubled), len(d.Missing)}; got != tc.kinds {
				t.Errorf("Differences: leaked, doubled, missing %v, want %v (%+v)", got, tc.kinds, d)
			}
			err := Converged(tc.st, want)
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("Converged: %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Converged: nil, want %q", tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Converged: %v, want it to say %q", err, w)
				}
			}
		})
	}
}

// Replaced finds the pods running before a kill whose sandbox is another after it, and the
// containers running before whose running instance is another; a pod gone from want is not judged.
func TestReplaced(t *testing.T) {
	want := map[string][]string{"default/a-node-a": {"sleeper"}, "default/b-node-a": {"sleeper"}}
	sb := func(id, name, state string) fakecri.SandboxState {
		return fakecri.SandboxState{ID: id, Name: name + "-node-a", Namespace: "default", State: state}
	}
	ctr := func(id, sandbox, state string) fakecri.ContainerState {
		return fakecri.ContainerState{ID: id, SandboxID: sandbox, Name: "sleeper", State: state}
	}
	before := fakecri.State{
		Sandboxes:  []fakecri.SandboxState{sb("sa", "a", "SANDBOX_READY"), sb("sb", "b", "SANDBOX_READY"), sb("sg", "gone", "SANDBOX_READY")},
		Containers: []fakecri.ContainerState{ctr("ca", "sa", "CONTAINER_RUNNING"), ctr("cb", "sb", "CONTAINER_CREATED")},
	}
	for _, tc := range []struct {
		name             string
		after            fakecri.State
		pods, containers int
	}{
		{"everything adopted; a container created but not started run anew; a pod deleted gone", fakecri.State{
			Sandboxes:  []fakecri.SandboxState{sb("sa", "a", "SANDBOX_READY"), sb("sb", "b", "SANDBOX_READY"), sb("sg", "gone", "SANDBOX_NOTREADY")},
			Containers: []fakecri.ContainerState{ctr("ca", "sa", "CONTAINER_RUNNING"), ctr("cb", "sb", "CONTAINER_EXITED"), ctr("cb2", "sb", "CONTAINER_RUNNING")},
		}, 0, 0},
		{"a running container killed and run again in its sandbox", fakecri.State{
			Sandboxes:  []fakecri.SandboxState{sb("sa", "a", "SANDBOX_READY"), sb("sb", "b", "SANDBOX_READY")},
			Containers: []fakecri.ContainerState{ctr("ca", "sa", "CONTAINER_EXITED"), ctr("ca2", "sa", "CONTAINER_RUNNING"), ctr("cb2", "sb", "CONTAINER_RUNNING")},
		}, 0, 1},
		{"both pods made again in new sandboxes", fakecri.State{
			Sandboxes:  []fakecri.SandboxState{sb("sa", "a", "SANDBOX_NOTREADY"), sb("sa2", "a", "SANDBOX_READY"), sb("sb2", "b", "SANDBOX_READY")},
			Containers: []fakecri.ContainerState{ctr("ca2", "sa2", "CONTAINER_RUNNING"), ctr("cb2", "sb2", "CONTAINER_RUNNING")},
		}, 2, 0},
	} {
		pods, containers := Replaced(before, tc.after, want)
		if len(pods) != tc.pods || len(containers) != tc.containers {
			t.Errorf("%s: replaced pods %q, containers %q; want %d, %d", tc.name, pods, containers, tc.pods, tc.containers)
		}
	}
}
