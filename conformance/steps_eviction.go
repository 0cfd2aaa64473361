package conformance

import (
	"fmt"
	"net/http"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"orch.io/orch/conformance/target"
)

// evictionSteps read what the agent's eviction manager does to the pods bound to it and to its
// node: a threshold given as a share of the machine's memory no machine can have free puts any
// node under pressure at once.
func evictionSteps() []StepDef {
	return []StepDef{
		{`^a pod "([^"]*)" requesting (\S+) of memory with a termination grace period of (\d+)s is bound to the agent's node through the API$`, func(w *World) any { return w.createRequestingPod }},
		{`^the API server reports pod "([^"]*)" Failed with reason "([^"]*)" and a message starting "([^"]*)"$`, func(w *World) any { return w.apiReportsFailed }},
		{`^pod "([^"]*)" is not Failed in the API for (\d+) seconds$`, func(w *World) any { return w.notFailedFor }},
		{`^the agent's node reports (MemoryPressure|DiskPressure|PIDPressure) (True|False)$`, func(w *World) any { return w.nodePressure }},
		{`^the runtime stopped a container with a (\d+)s timeout$`, func(w *World) any { return w.stoppedWithTimeout }},
	}
}

func (w *World) createRequestingPod(name, memory string, grace int64) error {
	q, err := resource.ParseQuantity(memory)
	if err != nil {
		return err
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: corev1.PodSpec{NodeName: nodeName, TerminationGracePeriodSeconds: &grace, Containers: []corev1.Container{{
			Name: "app", Image: "busybox:1.36", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceMemory: q}},
		}}},
	}
	code, data, err := w.apiDo(http.MethodPost, "/api/v1/namespaces/default/pods", pod)
	if err != nil {
		return err
	}
	if code != http.StatusCreated {
		return fmt.Errorf("creating pod %s: %d %s", name, code, data)
	}
	return nil
}

func (w *World) apiReportsFailed(name, reason, message string) error {
	return eventually(target.CommandTimeout, func() error {
		p := &corev1.Pod{}
		if err := w.apiGet("/api/v1/namespaces/default/pods/"+name, p); err != nil {
			return err
		}
		if p.Status.Phase != corev1.PodFailed || p.Status.Reason != reason || !strings.HasPrefix(p.Status.Message, message) {
			return fmt.Errorf("pod %s: phase %q reason %q message %q", name, p.Status.Phase, p.Status.Reason, p.Status.Message)
		}
		return nil
	})
}

// notFailedFor watches the pod for d: it must not turn Failed meanwhile.
func (w *World) notFailedFor(name string, seconds int) error {
	end := time.Now().Add(time.Duration(seconds) * time.Second)
	for time.Now().Before(end) {
		p := &corev1.Pod{}
		if err := w.apiGet("/api/v1/namespaces/default/pods/"+name, p); err != nil {
			return err
		}
		if p.Status.Phase == corev1.PodFailed {
			return fmt.Errorf("pod %s Failed (%s: %s) before %ds passed", name, p.Status.Reason, p.Status.Message, seconds)
		}
		time.Sleep(250 * time.Millisecond)
	}
	return nil
}

func (w *World) nodePressure(condition, status string) error {
	return w.nodeEventually(func(n *corev1.Node) error {
		for _, c := range n.Status.Conditions {
			if string(c.Type) == condition {
				if string(c.Status) != status {
					return fmt.Errorf("%s is %s (%s), want %s", condition, c.Status, c.Reason, status)
				}
				return nil
			}
		}
		return fmt.Errorf("the node reports no %s condition", condition)
	})
}

// stoppedWithTimeout looks for a StopContainer call with that timeout in the runtime's call log,
// as fakecri writes its request.
func (w *World) stoppedWithTimeout(timeout int) error {
	want := fmt.Sprintf("timeout=%d", timeout)
	return eventually(target.CommandTimeout, func() error {
		cs, err := w.calls("runtime", "StopContainer")
		if err != nil {
			return err
		}
		var seen []string
		for _, c := range cs {
			if strings.Contains(c.Request, want) {
				return nil
			}
			seen = append(seen, c.Request)
		}
		return fmt.Errorf("no StopContainer call with %s (calls: %v)", want, seen)
	})
}
