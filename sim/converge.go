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
	var errs []string
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
			errs = append(errs, fmt.Sprintf("sandbox %s of %s ready, no such pod", sb.ID, pod))
		}
	}
	running := map[string]int{}
	for _, c := range st.Containers {
		if c.State != runtimeapi.ContainerState_CONTAINER_RUNNING.String() {
			continue
		}
		pod, ok := ready[c.SandboxID]
		if !ok {
			errs = append(errs, fmt.Sprintf("container %s (%s) running outside a ready sandbox", c.ID, c.Name))
			continue
		}
		running[pod+"/"+c.Name]++
		if !slices.Contains(want[pod], c.Name) {
			errs = append(errs, fmt.Sprintf("container %s of %s running, not in the pod", c.Name, pod))
		}
	}
	for _, pod := range slices.Sorted(maps.Keys(want)) {
		if readyOf[pod] != 1 {
			errs = append(errs, fmt.Sprintf("%s: %d ready sandboxes", pod, readyOf[pod]))
		}
		for _, c := range want[pod] {
			if got := running[pod+"/"+c]; got != 1 {
				errs = append(errs, fmt.Sprintf("%s/%s: %d running", pod, c, got))
			}
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return nil
}
