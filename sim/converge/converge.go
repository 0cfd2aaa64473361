package converge

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"orch.io/orch/fakecri"
)

// Converged judges a runtime's state against the pods that should run, want (namespace/name to
// container names): each pod in one ready sandbox with each of its containers running once in it,
// no other sandbox ready and no other container running. Exited containers and stopped sandboxes
// are the garbage collectors' to remove, and are not judged. The error lists every difference.
func Converged(st fakecri.State, want map[string][]string) error {
	d := Differences(st, want)
	if d.None() {
		return nil
	}
	return fmt.Errorf("%s", strings.Join(slices.Concat(d.Leaked, d.Doubled, d.Missing), "; "))
}

// Difference is what Differences found between a runtime's state and the pods that should run,
// one sentence per finding, in three kinds.
type Difference struct {
	// Leaked: a sandbox ready or a container running that no pod should have.
	Leaked []string
	// Doubled: a pod in more than one ready sandbox, a container running more than once.
	Doubled []string
	// Missing: a pod with no ready sandbox, a container not running.
	Missing []string
}

// None tells whether the state is converged.
func (d Difference) None() bool {
	return len(d.Leaked)+len(d.Doubled)+len(d.Missing) == 0
}

// Differences is Converged's judgement, sorted into kinds for a caller that counts them.
func Differences(st fakecri.State, want map[string][]string) Difference {
	var d Difference
	ready := map[string]string{} // sandbox id to pod
	readyOf := map[string]int{}
	for _, sb := range st.Sandboxes {
		if sb.State != runtimeapi.PodSandboxState_SANDBOX_READY.String() {
			continue
		}
		pod := sb.Namespace + "/" + sb.Name
		ready[sb.ID] = pod
		readyOf[pod]++
		if _, ok := want[pod]; !ok {
			d.Leaked = append(d.Leaked, fmt.Sprintf("sandbox %s of %s ready, no such pod", sb.ID, pod))
		}
	}
	running := map[string]int{}
	for _, c := range st.Containers {
		if c.State != runtimeapi.ContainerState_CONTAINER_RUNNING.String() {
			continue
		}
		pod, ok := ready[c.SandboxID]
		if !ok {
			d.Leaked = append(d.Leaked, fmt.Sprintf("container %s (%s) running outside a ready sandbox", c.ID, c.Name))
			continue
		}
		running[pod+"/"+c.Name]++
		if !slices.Contains(want[pod], c.Name) {
			d.Leaked = append(d.Leaked, fmt.Sprintf("container %s of %s running, not in the pod", c.Name, pod))
		}
	}
	for _, pod := range slices.Sorted(maps.Keys(want)) {
		switch n := readyOf[pod]; {
		case n == 0:
			d.Missing = append(d.Missing, fmt.Sprintf("%s: 0 ready sandboxes", pod))
		case n > 1:
			d.Doubled = append(d.Doubled, fmt.Sprintf("%s: %d ready sandboxes", pod, n))
		}
		for _, c := range want[pod] {
			switch got := running[pod+"/"+c]; {
			case got == 0:
				d.Missing = append(d.Missing, fmt.Sprintf("%s/%s: 0 running", pod, c))
			case got > 1:
				d.Doubled = append(d.Doubled, fmt.Sprintf("%s/%s: %d running", pod, c, got))
			}
		}
	}
	return d
}

// Replaced compares a runtime's state before an agent was killed with its state after the restart,
// for the pods that should run (want): a pod whose ready sandbox then is not its ready sandbox now
// was made again (its containers killed and run a second time), and a container running then
// whose running instance now is another was run again. An agent restarted adopts what it finds
// running, so each is a finding, one sentence each: the pods made again, the containers run again.
func Replaced(before, after fakecri.State, want map[string][]string) (pods, containers []string) {
	readyOf := func(st fakecri.State) map[string]string { // pod to its ready sandbox
		m := map[string]string{}
		for _, sb := range st.Sandboxes {
			if _, ok := want[sb.Namespace+"/"+sb.Name]; ok && sb.State == runtimeapi.PodSandboxState_SANDBOX_READY.String() {
				m[sb.Namespace+"/"+sb.Name] = sb.ID
			}
		}
		return m
	}
	runningOf := func(st fakecri.State) map[string]string { // sandbox/container name to its running id
		m := map[string]string{}
		for _, c := range st.Containers {
			if c.State == runtimeapi.ContainerState_CONTAINER_RUNNING.String() {
				m[c.SandboxID+"/"+c.Name] = c.ID
			}
		}
		return m
	}
	was, is := readyOf(before), readyOf(after)
	ran, runs := runningOf(before), runningOf(after)
	for _, pod := range slices.Sorted(maps.Keys(was)) {
		sb := was[pod]
		if is[pod] != sb {
			pods = append(pods, fmt.Sprintf("%s: sandbox %s made again (now %q)", pod, sb, is[pod]))
			continue
		}
		for _, name := range want[pod] {
			if id, ok := ran[sb+"/"+name]; ok && runs[sb+"/"+name] != id {
				containers = append(containers, fmt.Sprintf("%s/%s: container %s run again (now %q)", pod, name, id, runs[sb+"/"+name]))
			}
		}
	}
	return pods, containers
}
