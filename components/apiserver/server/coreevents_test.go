package server

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// Core v1 Events are the same stored events seen through v1: what events.orch.io/v1 writes, v1
// reads (note as message, regarding as involvedObject, deprecatedSource as source) with its field
// selectors, and what a v1 client writes without eventTime, as client-go's old recorder does, the
// events API reads.
func TestCoreEventsView(t *testing.T) {
	e := newEnv(t)
	body := `apiVersion: events.orch.io/v1
kind: Event
metadata: {name: web.pulled, namespace: default}
eventTime: "2026-11-21T23:03:57.523342Z"
reportingController: orch.io/orchlet
reportingInstance: node-a
action: Pulling
reason: Pulled
type: Normal
note: Successfully pulled image
regarding: {kind: Pod, namespace: default, name: web, uid: uid-web, apiVersion: v1}
`
	if r := e.do("POST", eventsPath, body, "Content-Type", "application/yaml"); r.code != http.StatusCreated {
		t.Fatalf("create: %d %s", r.code, r.body)
	}
	var ev corev1.Event
	decode(t, e.do("GET", "/api/v1/namespaces/default/events/web.pulled", nil), &ev)
	if ev.Kind != "Event" || ev.APIVersion != "v1" || ev.Message != "Successfully pulled image" || ev.InvolvedObject.Name != "web" ||
		ev.ReportingController != "orch.io/orchlet" || ev.EventTime.IsZero() || ev.ResourceVersion == "" {
		t.Fatalf("v1 view: %+v", ev)
	}

	for selector, want := range map[string]int{
		"involvedObject.name=web,involvedObject.namespace=default,involvedObject.uid=uid-web": 1,
		"involvedObject.kind=Pod,reason=Pulled,type=Normal":                                   1,
		"reportingComponent=orch.io/orchlet":                                                  1,
		"involvedObject.name=db":                                                              0,
	} {
		var list corev1.EventList
		decode(t, e.do("GET", "/api/v1/namespaces/default/events?fieldSelector="+strings.ReplaceAll(selector, "=", "%3D"), nil), &list)
		if len(list.Items) != want || list.Kind != "EventList" {
			t.Errorf("fieldSelector %s: %d items (%s), want %d", selector, len(list.Items), list.Kind, want)
		}
	}
	if r := e.do("GET", "/api/v1/namespaces/default/events?fieldSelector=note%3Dx", nil); r.code != http.StatusBadRequest {
		t.Errorf("an events.orch.io selector on v1: %d %s, want 400", r.code, r.body)
	}

	legacy := `{"apiVersion":"v1","kind":"Event","metadata":{"name":"web.started"},"involvedObject":{"kind":"Pod","namespace":"default","name":"web"},
"reason":"Started","message":"Started container app","type":"Normal","source":{"component":"kubelet"},"count":3,
"firstTimestamp":"2026-11-21T23:00:00Z","lastTimestamp":"2026-11-21T23:05:00Z"}`
	if r := e.do("POST", "/api/v1/namespaces/default/events", legacy); r.code != http.StatusCreated {
		t.Fatalf("v1 create: %d %s", r.code, r.body)
	}
	r := e.do("GET", eventsPath+"/web.started", nil)
	var stored map[string]any
	if err := json.Unmarshal(r.body, &stored); err != nil || r.code != 200 {
		t.Fatalf("events.orch.io view of a v1 event: %d %s", r.code, r.body)
	}
	if stored["note"] != "Started container app" || stored["deprecatedCount"] != float64(3) || stored["apiVersion"] != "events.orch.io/v1" ||
		stored["deprecatedSource"].(map[string]any)["component"] != "kubelet" {
		t.Errorf("events.orch.io view: %s", r.body)
	}

	var bySource corev1.EventList
	decode(t, e.do("GET", "/api/v1/namespaces/default/events?fieldSelector=source%3Dkubelet", nil), &bySource)
	if len(bySource.Items) != 1 || bySource.Items[0].Name != "web.started" || bySource.Items[0].Count != 3 {
		t.Errorf("source=kubelet: %+v", bySource.Items)
	}

	mismatched := strings.Replace(legacy, `"namespace":"default","name":"web"`, `"namespace":"other","name":"web"`, 1)
	mismatched = strings.Replace(mismatched, "web.started", "web.other", 1)
	if r := e.do("POST", "/api/v1/namespaces/default/events", mismatched); r.code != http.StatusUnprocessableEntity || !strings.Contains(string(r.body), "does not match event.namespace") {
		t.Errorf("involvedObject in another namespace: %d %s", r.code, r.body)
	}
	if r := e.do("DELETE", "/api/v1/namespaces/default/events/web.pulled", nil); r.code != http.StatusOK {
		t.Fatalf("v1 delete: %d %s", r.code, r.body)
	}
	if r := e.do("GET", eventsPath+"/web.pulled", nil); r.code != http.StatusNotFound {
		t.Errorf("deleted through v1, still in events.orch.io: %d", r.code)
	}
}
