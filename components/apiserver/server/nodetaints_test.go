package server

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

func nodeTaints(t *testing.T, e *env, name string) []corev1.Taint {
	t.Helper()
	r := e.do("GET", "/api/v1/nodes/"+name, nil, as("admin")...)
	n := &corev1.Node{}
	if r.code != http.StatusOK || json.Unmarshal(r.body, n) != nil {
		t.Fatalf("GET node %s: %d %s", name, r.code, r.body)
	}
	return n.Spec.Taints
}

// The NoSchedule taints of a node's conditions and spec.unschedulable follow them as Kubernetes'
// node lifecycle controller keeps them (node.kubernetes.io renamed): added when the agent reports
// the condition, dated by the server's clock, gone when it clears; the node's own taints stay,
// and an agent may post any status even though it may not touch taints itself.
func TestConditionTaintsFollowTheNode(t *testing.T) {
	e := nodeEnv(t, "Node,AlwaysAllow")
	registerNode(t, e, "node-a")
	mergePatch := []string{"Content-Type", "application/merge-patch+json"}
	if r := e.do("PATCH", "/api/v1/nodes/node-a", `{"spec":{"taints":[{"key":"dedicated","value":"infra","effect":"NoSchedule"}]}}`, append(as("admin"), mergePatch...)...); r.code != 200 {
		t.Fatalf("admin tainting: %d %s", r.code, r.body)
	}
	e.clock.Add(time.Minute)
	status := func(conditions string) {
		t.Helper()
		r := e.do("PATCH", "/api/v1/nodes/node-a/status", `{"status":{"conditions":`+conditions+`}}`, append(as("node-a"), mergePatch...)...)
		if r.code != http.StatusOK {
			t.Fatalf("the agent posting its status: %d %s", r.code, r.body)
		}
	}
	keys := func(taints []corev1.Taint) []string {
		var out []string
		for _, tn := range taints {
			out = append(out, tn.Key+":"+string(tn.Effect))
		}
		return out
	}

	status(`[{"type":"Ready","status":"True"},{"type":"MemoryPressure","status":"True"},{"type":"DiskPressure","status":"False"},{"type":"PIDPressure","status":"True"}]`)
	taints := nodeTaints(t, e, "node-a")
	if got := keys(taints); len(got) != 3 || got[0] != "dedicated:NoSchedule" || got[1] != "node.orch.io/memory-pressure:NoSchedule" || got[2] != "node.orch.io/pid-pressure:NoSchedule" {
		t.Fatalf("taints under memory and pid pressure: %v", got)
	}
	if at := taints[1].TimeAdded; at == nil || !at.Time.Equal(start.Add(time.Minute)) {
		t.Fatalf("memory-pressure taint added at %v, want the server clock's %v", at, start.Add(time.Minute))
	}

	e.clock.Add(time.Minute)
	status(`[{"type":"Ready","status":"False"},{"type":"MemoryPressure","status":"True"},{"type":"PIDPressure","status":"False"}]`)
	taints = nodeTaints(t, e, "node-a")
	if got := keys(taints); len(got) != 3 || got[1] != "node.orch.io/memory-pressure:NoSchedule" || got[2] != "node.orch.io/not-ready:NoSchedule" {
		t.Fatalf("taints once pid pressure cleared and the node is not ready: %v", got)
	}
	if at := taints[1].TimeAdded; at == nil || !at.Time.Equal(start.Add(time.Minute)) {
		t.Fatalf("a kept taint keeps its date: %v", at)
	}

	status(`[{"type":"Ready","status":"Unknown"}]`)
	if got := keys(nodeTaints(t, e, "node-a")); len(got) != 2 || got[1] != "node.orch.io/unreachable:NoSchedule" {
		t.Fatalf("taints of an unknown node: %v", got)
	}

	// kubectl cordon, then uncordon.
	if r := e.do("PATCH", "/api/v1/nodes/node-a", `{"spec":{"unschedulable":true}}`, append(as("admin"), mergePatch...)...); r.code != 200 {
		t.Fatalf("cordon: %d %s", r.code, r.body)
	}
	if got := keys(nodeTaints(t, e, "node-a")); len(got) != 3 || got[2] != "node.orch.io/unschedulable:NoSchedule" {
		t.Fatalf("taints of a cordoned node: %v", got)
	}
	if r := e.do("PATCH", "/api/v1/nodes/node-a", `{"spec":{"unschedulable":false}}`, append(as("admin"), mergePatch...)...); r.code != 200 {
		t.Fatalf("uncordon: %d %s", r.code, r.body)
	}
	status(`[{"type":"Ready","status":"True"}]`)
	if got := keys(nodeTaints(t, e, "node-a")); len(got) != 1 || got[0] != "dedicated:NoSchedule" {
		t.Fatalf("taints of a ready node without pressure: %v", got)
	}
}
