package pods

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"orch.io/orch/components/orchlet/pods/images"
)

// The sandbox's port mappings as generatePodSandboxConfig makes them with
// kubecontainer.MakePortMappings: every app container's ports, protocols as the CRI names them,
// a repeated port name (or unnamed, the same family, protocol, host IP and ports) dropped.
func TestPortMappings(t *testing.T) {
	a := ctr("a", "nginx")
	a.Ports = []corev1.ContainerPort{
		{Name: "http", ContainerPort: 80, HostPort: 8080, HostIP: "192.0.2.10"},
		{Name: "http", ContainerPort: 81},
		{ContainerPort: 53, Protocol: corev1.ProtocolUDP},
		{ContainerPort: 53, Protocol: corev1.ProtocolUDP},
		{ContainerPort: 53, Protocol: corev1.ProtocolUDP, HostIP: "::1"},
	}
	b := ctr("b", "nginx")
	b.Ports = []corev1.ContainerPort{{Name: "http", ContainerPort: 9000, Protocol: corev1.ProtocolSCTP}}
	h := newHarness(t, nil, config(nil), nil)
	pod := newPod("p", a, b)
	pod.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "regcred"}, {Name: "other"}}
	h.add(pod)
	h.runUntil(time.Second)
	sbs := sent[*runtimeapi.RunPodSandboxRequest](h, "RunPodSandbox")
	if len(sbs) != 1 {
		t.Fatalf("%d sandboxes", len(sbs))
	}
	want := []*runtimeapi.PortMapping{
		{ContainerPort: 80, HostPort: 8080, HostIp: "192.0.2.10"},
		{ContainerPort: 53, Protocol: runtimeapi.Protocol_UDP},
		{ContainerPort: 53, Protocol: runtimeapi.Protocol_UDP, HostIp: "::1"},
		{ContainerPort: 9000, Protocol: runtimeapi.Protocol_SCTP},
	}
	got := sbs[0].Config.PortMappings
	if len(got) != len(want) {
		t.Fatalf("port mappings %v, want %v", got, want)
	}
	for i := range want {
		diffProto(t, "port mapping", want[i], got[i])
	}
	// Pull secrets this agent cannot read: the kubelet's warning, and the pod still runs.
	evs := h.rec.reasons(images.ReasonFailedToRetrieveImagePullSecret)
	if len(evs) != 1 || evs[0].note != "Unable to retrieve some image pull secrets (regcred, other); attempting to pull the image may not succeed." {
		t.Errorf("events %+v", evs)
	}
	if n := len(h.calls("CreateContainer", "")); n != 2 {
		t.Errorf("%d containers created", n)
	}
}
