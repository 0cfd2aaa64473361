package calllog

import (
	"testing"

	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// The requests copied by hand for the call log are what proto.Clone makes of them, and share
// nothing with the caller's.
func TestCloneRequestAsProtoClone(t *testing.T) {
	for _, req := range []proto.Message{
		&runtimeapi.ContainerStatusRequest{ContainerId: "c1", Verbose: true},
		&runtimeapi.PodSandboxStatusRequest{PodSandboxId: "s1"},
		&runtimeapi.ListPodSandboxRequest{},
		&runtimeapi.ListPodSandboxRequest{Filter: &runtimeapi.PodSandboxFilter{}},
		&runtimeapi.ListPodSandboxRequest{Filter: &runtimeapi.PodSandboxFilter{Id: "s", LabelSelector: map[string]string{}}},
		&runtimeapi.ListPodSandboxRequest{Filter: &runtimeapi.PodSandboxFilter{
			State: &runtimeapi.PodSandboxStateValue{State: runtimeapi.PodSandboxState_SANDBOX_NOTREADY}, LabelSelector: map[string]string{"io.kubernetes.pod.uid": "u"}}},
		&runtimeapi.ListContainersRequest{},
		&runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{Id: "c", PodSandboxId: "s",
			State: &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_EXITED}, LabelSelector: map[string]string{"a": "b", "c": "d"}}},
	} {
		got, want := CloneRequest(req), proto.Clone(req)
		if !proto.Equal(got, want) || Summarize(got) != Summarize(req) {
			t.Errorf("%T: %v, proto.Clone %v", req, got, want)
		}
		switch q := req.(type) {
		case *runtimeapi.ListPodSandboxRequest:
			if f := q.GetFilter(); f != nil {
				if f.State != nil {
					f.State.State = runtimeapi.PodSandboxState_SANDBOX_READY
				}
				if f.LabelSelector != nil {
					f.LabelSelector["changed"] = "after the call"
				}
			}
		case *runtimeapi.ListContainersRequest:
			if f := q.GetFilter(); f != nil {
				f.State.State = runtimeapi.ContainerState_CONTAINER_RUNNING
				f.LabelSelector["changed"] = "after the call"
			}
		}
		if !proto.Equal(got, want) {
			t.Errorf("%T: the copy changed with the caller's request: %v, want %v", req, got, want)
		}
	}
}
