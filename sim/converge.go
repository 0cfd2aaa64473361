package sim

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
