package conformance

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"orch.io/orch/conformance/target"
)

// ephemeralSteps add ephemeral containers through pods/ephemeralcontainers, as kubectl debug does,
// and read their status.
func ephemeralSteps() []StepDef {
	return []StepDef{
		{`^an ephemeral container "([^"]*)" targeting "([^"]*)" is added to pod "([^"]*)" through the API$`, func(w *World) any { return w.addEphemeral }},
		{`^adding an ephemeral container "([^"]*)" targeting "([^"]*)" to pod "([^"]*)" through the API is refused with (\d+) and "([^"]*)"$`, func(w *World) any { return w.addEphemeralRefused }},
		{`^the API server reports ephemeral container "([^"]*)" of pod "([^"]*)" running$`, func(w *World) any { return w.apiReportsEphemeralRunning }},
	}
}

// putEphemeral updates pods/ephemeralcontainers with the pod as stored plus one ephemeral
// container running a shell on its standard input, as kubectl debug -i --image=busybox does.
func (w *World) putEphemeral(name, target, pod string) (int, []byte, error) {
	p := &corev1.Pod{}
	if err := w.apiGet("/api/v1/namespaces/default/pods/"+pod, p); err != nil {
		return 0, nil, err
	}
	p.Spec.EphemeralContainers = append(p.Spec.EphemeralContainers, corev1.EphemeralContainer{TargetContainerName: target,
		EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: name, Image: "busybox:1.36", Command: []string{"sh"}, Stdin: true,
			ImagePullPolicy: corev1.PullIfNotPresent}})
	return w.apiDo(http.MethodPut, "/api/v1/namespaces/default/pods/"+pod+"/ephemeralcontainers", p)
}

func (w *World) addEphemeral(name, target, pod string) error {
	code, data, err := w.putEphemeral(name, target, pod)
	if err != nil {
		return err
	}
	if code != http.StatusOK {
		return fmt.Errorf("adding ephemeral container %s to pod %s: %d %s", name, pod, code, data)
	}
	return nil
}

func (w *World) addEphemeralRefused(name, target, pod string, want int, message string) error {
	code, data, err := w.putEphemeral(name, target, pod)
	if err != nil {
		return err
	}
	var status struct{ Message string }
	_ = json.Unmarshal(data, &status)
	if code != want || !strings.Contains(status.Message, message) {
		return fmt.Errorf("adding ephemeral container %s to pod %s: %d %q, want %d with %q", name, pod, code, status.Message, want, message)
	}
	return nil
}

func (w *World) apiReportsEphemeralRunning(name, pod string) error {
	return eventually(target.CommandTimeout, func() error {
		p := &corev1.Pod{}
		if err := w.apiGet("/api/v1/namespaces/default/pods/"+pod, p); err != nil {
			return err
		}
		for _, s := range p.Status.EphemeralContainerStatuses {
			if s.Name == name && s.State.Running != nil {
				return nil
			}
		}
		return fmt.Errorf("pod %s: ephemeral container statuses %+v", pod, p.Status.EphemeralContainerStatuses)
	})
}
