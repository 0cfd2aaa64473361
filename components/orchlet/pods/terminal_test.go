package pods

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	fakescript "orch.io/orch/fakecri/script"
)

// A pod the API already shows Failed or Succeeded (evicted or completed before the agent
// restarted) is not started again; one still Running in the API is.
func TestTerminalPodsFromTheAPINotRestarted(t *testing.T) {
	h := newHarness(t, &fakescript.Script{}, config(nil), nil)
	pod := func(name string, phase corev1.PodPhase) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name)},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "busybox:1.36"}}},
			Status:     corev1.PodStatus{Phase: phase, Reason: "Evicted"},
		}
	}
	h.add(pod("evicted", corev1.PodFailed), pod("done", corev1.PodSucceeded), pod("running", corev1.PodRunning))
	h.runUntil(5 * time.Second)
	sandboxes := h.calls("RunPodSandbox", "")
	if len(sandboxes) != 1 || len(h.calls("RunPodSandbox", "running")) != 1 {
		t.Fatalf("sandboxes run: %+v, want only the running pod's", sandboxes)
	}
}
