package main

import (
	"testing"

	"orch.io/orch/fakecri"
)

func TestReplaced(t *testing.T) {
	want := map[string][]string{"default/a-chaos-agent": {"sleeper"}, "default/b-chaos-agent": {"sleeper"}}
	sb := func(id, name, state string) fakecri.SandboxState {
		return fakecri.SandboxState{ID: id, Name: name + "-chaos-agent", Namespace: "default", State: state}
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
		pods, containers := replaced(before, tc.after, want)
		if pods != tc.pods || containers != tc.containers {
			t.Errorf("%s: replaced %d pods, %d containers; want %d, %d", tc.name, pods, containers, tc.pods, tc.containers)
		}
	}
}
