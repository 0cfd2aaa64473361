package server

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"
)

// The managedFields an event's create, update and merge patch record, byte for byte as they are
// answered: what speeding up their bookkeeping must not change. The second create takes its
// fields from the first's shape, the first computes them.
func TestEventManagedFieldsAnswered(t *testing.T) {
	e := newEnv(t)
	managed := func(r response, code int) string {
		t.Helper()
		if r.code != code {
			t.Fatalf("%d %s", r.code, r.body)
		}
		data, err := json.Marshal(r.event(t).ManagedFields)
		if err != nil {
			t.Fatal(err)
		}
		return string(data)
	}
	const created = `[{"manager":"orchload","operation":"Update","apiVersion":"events.orch.io/v1","time":"2026-11-21T23:00:00Z","fieldsType":"FieldsV1","fieldsV1":{"f:action":{},"f:eventTime":{},"f:metadata":{"f:labels":{".":{},"f:app":{}}},"f:note":{},"f:reason":{},"f:regarding":{},"f:reportingController":{},"f:reportingInstance":{},"f:type":{}}}]`
	for _, name := range []string{"first", "second"} {
		if got := managed(e.do("POST", eventsPath, sample(name), "User-Agent", "orchload/v0"), http.StatusCreated); got != created {
			t.Errorf("create %s: managedFields\n%s\nwant\n%s", name, got, created)
		}
	}
	e.clock.Add(time.Minute)
	ev := sample("second")
	ev["series"] = map[string]any{"count": 2, "lastObservedTime": "2026-11-21T23:04:00.000000Z"}
	ev["metadata"].(map[string]any)["labels"] = map[string]any{"app": "web", "tier": "front"}
	const updated = `[{"manager":"orchload","operation":"Update","apiVersion":"events.orch.io/v1","time":"2026-11-21T23:00:00Z","fieldsType":"FieldsV1","fieldsV1":{"f:action":{},"f:eventTime":{},"f:metadata":{"f:labels":{".":{},"f:app":{}}},"f:note":{},"f:reason":{},"f:regarding":{},"f:reportingController":{},"f:reportingInstance":{},"f:type":{}}},{"manager":"editor","operation":"Update","apiVersion":"events.orch.io/v1","time":"2026-11-21T23:01:00Z","fieldsType":"FieldsV1","fieldsV1":{"f:metadata":{"f:labels":{"f:tier":{}}},"f:series":{".":{},"f:count":{},"f:lastObservedTime":{}}}}]`
	if got := managed(e.do("PUT", eventsPath+"/second?fieldManager=editor", ev), http.StatusOK); got != updated {
		t.Errorf("update: managedFields\n%s\nwant\n%s", got, updated)
	}
	e.clock.Add(time.Minute)
	const patched = `[{"manager":"orchload","operation":"Update","apiVersion":"events.orch.io/v1","time":"2026-11-21T23:00:00Z","fieldsType":"FieldsV1","fieldsV1":{"f:action":{},"f:eventTime":{},"f:metadata":{"f:labels":{".":{},"f:app":{}}},"f:note":{},"f:reason":{},"f:regarding":{},"f:reportingController":{},"f:reportingInstance":{},"f:type":{}}},{"manager":"editor","operation":"Update","apiVersion":"events.orch.io/v1","time":"2026-11-21T23:01:00Z","fieldsType":"FieldsV1","fieldsV1":{"f:metadata":{"f:labels":{"f:tier":{}}},"f:series":{".":{},"f:lastObservedTime":{}}}},{"manager":"kubectl","operation":"Update","apiVersion":"events.orch.io/v1","time":"2026-11-21T23:02:00Z","fieldsType":"FieldsV1","fieldsV1":{"f:metadata":{"f:annotations":{".":{},"f:note":{}}},"f:series":{"f:count":{}}}}]`
	r := e.do("PATCH", eventsPath+"/second", `{"metadata":{"annotations":{"note":"x"}},"series":{"count":3}}`,
		"Content-Type", "application/merge-patch+json", "User-Agent", "kubectl/v1.34.4 (linux/amd64)")
	if got := managed(r, http.StatusOK); got != patched {
		t.Errorf("merge patch: managedFields\n%s\nwant\n%s", got, patched)
	}
}
