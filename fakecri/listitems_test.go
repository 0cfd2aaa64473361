package fakecri

import (
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"orch.io/orch/fakecri/calllog"
	"orch.io/orch/fakecri/script"
)

// TestListItemsAsTheirResponses: PodSandboxes and Containers answer the items ListPodSandbox and
// ListContainers answer, and are logged as those calls are (method, request, code, answer, error),
// unfiltered, filtered, and failed by a fault on the method.
func TestListItemsAsTheirResponses(t *testing.T) {
	for _, faulted := range []bool{false, true} {
		s := &script.Script{}
		if faulted {
			s.Faults = []script.FaultRule{
				{Method: "ListPodSandbox", Error: &script.FaultError{Code: "Unavailable"}},
				{Method: "ListContainers", Error: &script.FaultError{Code: "Unavailable"}},
			}
		}
		f := newFixture(t, s)
		a := f.RunPod("a", map[string]string{"app": "a"})
		f.RunPod("b", nil)
		f.Create(a, "c", f.Pull("img:1"), 0)
		for _, tc := range []struct {
			name string
			sb   *runtimeapi.PodSandboxFilter
			ctr  *runtimeapi.ContainerFilter
		}{
			{"unfiltered", nil, nil},
			{"by id", &runtimeapi.PodSandboxFilter{Id: a}, &runtimeapi.ContainerFilter{PodSandboxId: a}},
			{"by label", &runtimeapi.PodSandboxFilter{LabelSelector: map[string]string{"app": "a"}}, &runtimeapi.ContainerFilter{LabelSelector: map[string]string{"app": "none"}}},
		} {
			sbReq, ctrReq := &runtimeapi.ListPodSandboxRequest{Filter: tc.sb}, &runtimeapi.ListContainersRequest{Filter: tc.ctr}
			since := f.RT.LastSeq()
			wantSb, wantSbErr := f.RT.ListPodSandbox(f.Ctx, sbReq)
			wantCtr, wantCtrErr := f.RT.ListContainers(f.Ctx, ctrReq)
			sbs, sbErr := f.RT.PodSandboxes(f.Ctx, sbReq)
			ctrs, ctrErr := f.RT.Containers(f.Ctx, ctrReq)
			if (sbErr == nil) != (wantSbErr == nil) || (ctrErr == nil) != (wantCtrErr == nil) || (sbErr != nil) != faulted {
				t.Fatalf("faulted %v, %s: errors %v, %v; want %v, %v", faulted, tc.name, sbErr, ctrErr, wantSbErr, wantCtrErr)
			}
			if len(sbs) != len(wantSb.GetItems()) || len(ctrs) != len(wantCtr.GetContainers()) || !faulted && len(sbs) == 0 {
				t.Fatalf("faulted %v, %s: %d sandboxes and %d containers, want %d and %d", faulted, tc.name, len(sbs), len(ctrs), len(wantSb.GetItems()), len(wantCtr.GetContainers()))
			}
			for i := range sbs {
				if sbs[i] != wantSb.Items[i] {
					t.Errorf("%s: sandbox %d is %v, want %v", tc.name, i, sbs[i], wantSb.Items[i])
				}
			}
			for i := range ctrs {
				if ctrs[i] != wantCtr.Containers[i] {
					t.Errorf("%s: container %d is %v, want %v", tc.name, i, ctrs[i], wantCtr.Containers[i])
				}
			}
			logged := f.RT.Calls(calllog.Filter{Since: since})
			if len(logged) != 4 {
				t.Fatalf("%s: %d calls logged, want 4", tc.name, len(logged))
			}
			for i := range 2 {
				w, g := logged[i], logged[i+2]
				if g.Method != w.Method || g.Request != w.Request || g.Code != w.Code || g.Response != w.Response || g.Error != w.Error || g.Fault != w.Fault {
					t.Errorf("faulted %v, %s: logged %+v, want %+v", faulted, tc.name, g, w)
				}
			}
		}
	}
}
