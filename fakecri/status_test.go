package fakecri

import (
	"testing"

	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"orch.io/orch/fakecri/script"
)

// TestStatusAsMadeOneByOne: the Status answer made in one piece is the answer made a message at a
// time, for conditions ready or not, with every handler count, and two answers share nothing.
func TestStatusAsMadeOneByOne(t *testing.T) {
	notReady := &script.Condition{Status: false, Reason: "NetworkPluginNotReady", Message: "cni plugin not initialized"}
	for _, tc := range []struct {
		name string
		s    *script.Script
	}{
		{"default", nil},
		{"the default handler alone", &script.Script{Node: script.NodeScript{RuntimeHandlers: []string{}}}},
		{"three handlers", &script.Script{Node: script.NodeScript{RuntimeHandlers: []string{"runc", "kata", "gvisor"}}}},
		{"network not ready", &script.Script{Node: script.NodeScript{NetworkReady: notReady}}},
		{"runtime not ready", &script.Script{Node: script.NodeScript{RuntimeReady: &script.Condition{Reason: "Down", Message: "no daemon"}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, tc.s)
			c := f.RT.cur.Load()
			want := statusOneByOne(c)
			for _, verbose := range []bool{false, true} {
				got, err := f.RT.Status(f.Ctx, &runtimeapi.StatusRequest{Verbose: verbose})
				if err != nil {
					t.Fatal(err)
				}
				got.Info = nil // the verbose info, made as it was
				if !proto.Equal(got, want) {
					t.Errorf("verbose %v: %v, want %v", verbose, got, want)
				}
			}
			a, b := newStatusAnswer(c), newStatusAnswer(c)
			a.Status.Conditions[0].Reason, a.Features.MountOptions = "changed", false
			for _, h := range a.RuntimeHandlers {
				h.Name, h.Features.UserNamespaces = "changed", false
			}
			if !proto.Equal(b, want) {
				t.Errorf("one answer's change reached another: %v, want %v", b, want)
			}
		})
	}
}

// statusOneByOne is the Status answer as Status made it before, a message at a time.
func statusOneByOne(c *script.Compiled) *runtimeapi.StatusResponse {
	cond := func(typ string, s script.Condition) *runtimeapi.RuntimeCondition {
		return &runtimeapi.RuntimeCondition{Type: typ, Status: s.Status, Reason: s.Reason, Message: s.Message}
	}
	resp := &runtimeapi.StatusResponse{
		Status: &runtimeapi.RuntimeStatus{Conditions: []*runtimeapi.RuntimeCondition{
			cond(runtimeapi.RuntimeReady, c.RuntimeReady),
			cond(runtimeapi.NetworkReady, c.NetworkReady),
		}},
		Features: &runtimeapi.RuntimeFeatures{SupplementalGroupsPolicy: true, MountOptions: true},
	}
	for _, h := range c.Handlers {
		resp.RuntimeHandlers = append(resp.RuntimeHandlers, &runtimeapi.RuntimeHandler{
			Name:     h,
			Features: &runtimeapi.RuntimeHandlerFeatures{RecursiveReadOnlyMounts: true, UserNamespaces: true},
		})
	}
	return resp
}
