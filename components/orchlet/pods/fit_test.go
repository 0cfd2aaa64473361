package pods

import (
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	fakescript "orch.io/orch/fakecri/script"
)

func requesting(name string, requests ...string) *corev1.Pod {
	c := ctr("app", "app:1")
	c.Resources.Requests = corev1.ResourceList{}
	for i := 0; i+1 < len(requests); i += 2 {
		c.Resources.Requests[corev1.ResourceName(requests[i])] = resource.MustParse(requests[i+1])
	}
	return newPod(name, c)
}

// The kubelet's noderesources fit, with its reasons and messages: cpu in millicores, the first
// resource short reported; huge pages the node lacks are short, ephemeral storage the node does
// not measure is not checked, extended resources are left out.
func TestInsufficientResource(t *testing.T) {
	alloc := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")}
	withStorage := alloc.DeepCopy()
	withStorage[corev1.ResourceEphemeralStorage] = resource.MustParse("10Gi")
	active := []*corev1.Pod{requesting("a", "cpu", "600m", "memory", "512Mi")}
	for _, tc := range []struct {
		name        string
		pod         *corev1.Pod
		allocatable corev1.ResourceList
		reason, msg string
	}{
		{"fits", requesting("p", "cpu", "400m", "memory", "512Mi"), alloc, "", ""},
		{"best effort", requesting("p"), alloc, "", ""},
		{"cpu", requesting("p", "cpu", "500m", "memory", "1Gi"), alloc, "OutOfcpu", "Node didn't have enough resource: cpu, requested: 500, used: 600, capacity: 1000"},
		{"memory", requesting("p", "memory", "600Mi"), alloc, "OutOfmemory", "Node didn't have enough resource: memory, requested: 629145600, used: 536870912, capacity: 1073741824"},
		{"huge pages the node lacks", requesting("p", "hugepages-2Mi", "4Mi"), alloc, "OutOfhugepages-2Mi", "Node didn't have enough resource: hugepages-2Mi, requested: 4194304, used: 0, capacity: 0"},
		{"storage not measured", requesting("p", "ephemeral-storage", "1Ti"), alloc, "", ""},
		{"storage measured", requesting("p", "ephemeral-storage", "11Gi"), withStorage, "OutOfephemeral-storage", "Node didn't have enough resource: ephemeral-storage, requested: 11811160064, used: 0, capacity: 10737418240"},
		{"extended resources left out", requesting("p", "example.com/gpu", "1"), alloc, "", ""},
	} {
		reason, msg := insufficientResource(tc.pod, active, tc.allocatable)
		if reason != tc.reason || msg != tc.msg {
			t.Errorf("%s: %q %q, want %q %q", tc.name, reason, msg, tc.reason, tc.msg)
		}
	}
}

// With the node's allocatable known, a pod the admitted pods leave no room for fails for good
// with OutOf<resource> and a Warning event; a pod finished or removed gives its room back.
func TestAdmissionFitsAllocatable(t *testing.T) {
	h := newHarness(t, &fakescript.Script{Node: fakescript.NodeScript{PreloadImages: []string{"app:1"}}}, config(nil), func(o *Options) {
		o.Node.Allocatable = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")}
	})
	a, b, c, d := requesting("a", "cpu", "600m"), requesting("b", "cpu", "600m"), requesting("c", "memory", "2Gi"), requesting("d")
	h.add(a, b, c, d)
	h.runUntil(5 * time.Second)
	for name, want := range map[string]string{"a": "", "b": "OutOfcpu", "c": "OutOfmemory", "d": ""} {
		st := h.pod(name).Status
		if want == "" && st.Phase != corev1.PodRunning {
			t.Errorf("%s: phase %s, want Running", name, st.Phase)
		}
		if want != "" && (st.Phase != corev1.PodFailed || st.Reason != want || !strings.HasPrefix(st.Message, "Node didn't have enough resource: ")) {
			t.Errorf("%s: status %s %s %q, want Failed %s", name, st.Phase, st.Reason, st.Message, want)
		}
	}
	if got := h.rec.reasons("OutOfcpu"); len(got) != 1 {
		t.Errorf("OutOfcpu events %v, want one", got)
	}
	h.remove(a)
	h.runUntil(10 * time.Second)
	e := requesting("e", "cpu", "900m")
	h.add(e)
	h.runUntil(15 * time.Second)
	if st := h.pod("e").Status; st.Phase != corev1.PodRunning {
		t.Errorf("e after a's removal: %s %s %q, want Running", st.Phase, st.Reason, st.Message)
	}
	var ran []string
	for _, call := range h.calls("RunPodSandbox", "") {
		ran = append(ran, strings.TrimPrefix(strings.Fields(call.Request)[0], "name="))
	}
	if !slices.Equal(ran, []string{"a", "d", "e"}) {
		t.Errorf("sandboxes for %v, want a, d, e", ran)
	}
}
