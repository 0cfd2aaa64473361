package pods

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// From the kubelet's makeEnvironmentVariables (kubelet_pods.go) with podFieldSelectorRuntimeValue,
// fieldpath.ExtractFieldPathAsString and containerResourceRuntimeValue, and
// ExpandContainerCommandAndArgs for the command line.
func TestEnvOnTheWire(t *testing.T) {
	h := newHarness(t, nil, config(nil), func(o *Options) {
		o.Node = Node{Name: "node-a", HostIPs: []string{"192.0.2.10", "2001:db8::10"}, MemoryCapacity: 8 << 30}
	})
	field := func(path string) *corev1.EnvVarSource {
		return &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: path}}
	}
	res := func(r, div string) *corev1.EnvVarSource {
		s := &corev1.ResourceFieldSelector{Resource: r}
		if div != "" {
			s.Divisor = resource.MustParse(div)
		}
		return &corev1.EnvVarSource{ResourceFieldRef: s}
	}
	c := withResources(ctr("app", "nginx"), corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
		corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("128Mi")})
	c.Command = []string{"/bin/sh", "-c", "echo $(GREETING) $$(NOT_EXPANDED) $(MISSING)"}
	c.Args = []string{"--name=$(POD_NAME)"}
	c.Env = []corev1.EnvVar{
		{Name: "GREETING", Value: "hello"},
		{Name: "POD_NAME", ValueFrom: field("metadata.name")},
		{Name: "NAMESPACE", ValueFrom: field("metadata.namespace")},
		{Name: "UID", ValueFrom: field("metadata.uid")},
		{Name: "APP", ValueFrom: field("metadata.labels['app']")},
		{Name: "NOTE", ValueFrom: field("metadata.annotations['note']")},
		{Name: "NODE", ValueFrom: field("spec.nodeName")},
		{Name: "SA", ValueFrom: field("spec.serviceAccountName")},
		{Name: "POD_IP", ValueFrom: field("status.podIP")},
		{Name: "POD_IPS", ValueFrom: field("status.podIPs")},
		{Name: "HOST_IP", ValueFrom: field("status.hostIP")},
		{Name: "HOST_IPS", ValueFrom: field("status.hostIPs")},
		{Name: "CPU_REQ_MILLI", ValueFrom: res("requests.cpu", "1m")},
		{Name: "CPU_REQ", ValueFrom: res("requests.cpu", "")},
		{Name: "MEM_LIMIT_MI", ValueFrom: res("limits.memory", "1Mi")},
		// No CPU limit: the node's allocatable, its 2 cores (defaultPodLimitsForDownwardAPI).
		{Name: "CPU_LIMIT", ValueFrom: res("limits.cpu", "")},
		{Name: "URL", Value: "http://$(POD_IP):80/$(GREETING)"},
		{Name: "GREETING", Value: "hi, $(GREETING)"},
	}
	pod := newPod("web", c)
	pod.Annotations = map[string]string{"note": "n1"}
	pod.Spec.ServiceAccountName = ""
	h.add(pod)
	h.runUntil(time.Second)
	ctrs := sent[*runtimeapi.CreateContainerRequest](h, "CreateContainer")
	if len(ctrs) != 1 {
		t.Fatalf("%d containers; events %q", len(ctrs), h.rec.lines())
	}
	ip := h.pod("web").Status.PodIP
	if ip == "" {
		t.Fatal("no pod IP")
	}
	got := map[string]string{}
	var order []string
	for _, kv := range ctrs[0].Config.Envs {
		got[kv.Key] = string(kv.Value)
		order = append(order, kv.Key)
	}
	want := map[string]string{
		"GREETING": "hi, hello", "POD_NAME": "web", "NAMESPACE": "default", "UID": "uid-web", "APP": "web", "NOTE": "n1",
		"NODE": "node-a", "SA": "", "POD_IP": ip, "POD_IPS": ip, "HOST_IP": "192.0.2.10", "HOST_IPS": "192.0.2.10,2001:db8::10",
		"CPU_REQ_MILLI": "250", "CPU_REQ": "1", "MEM_LIMIT_MI": "128", "CPU_LIMIT": "2",
		"URL": "http://" + ip + ":80/hello",
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("env (-want +got):\n%s", d)
	}
	if order[0] != "GREETING" || len(order) != len(want) {
		t.Errorf("order %q: a redefined variable keeps its first place", order)
	}
	if d := cmp.Diff([]string{"/bin/sh", "-c", "echo hi, hello $(NOT_EXPANDED) $(MISSING)"}, ctrs[0].Config.Command); d != "" {
		t.Errorf("command (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]string{"--name=web"}, ctrs[0].Config.Args); d != "" {
		t.Errorf("args (-want +got):\n%s", d)
	}
}
