// Package eventsapi is the Events requests orchchaos' campaigns send: on orch's group, or on
// Kubernetes' own when the server attacked is kube-apiserver, the same bytes but for the group's
// name.
package eventsapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

// Path is the events of namespace default on orch's group.
const Path = "/apis/" + OrchGroup + "/v1/namespaces/default/events"

// The groups serving Events: orch's, and Kubernetes' on kube-apiserver, the same objects.
const (
	OrchGroup = "events.orch.io"
	KubeGroup = "events.k8s.io"
)

// OnGroup is a request of orch's events group, its path or its body, as it is sent to a server
// serving Events in group: the same bytes with group in place of orch's name ("" is orch's).
func OnGroup(s, group string) string {
	if group == "" {
		return s
	}
	return strings.ReplaceAll(s, OrchGroup, group)
}

// JSON is an Event of orch's group named name, its value the note and the label "value", written
// by client.
func JSON(name, value, client string) []byte {
	data, _ := json.Marshal(map[string]any{
		"apiVersion":          OrchGroup + "/v1",
		"kind":                "Event",
		"metadata":            map[string]any{"name": name, "namespace": "default", "labels": map[string]string{"value": value}},
		"eventTime":           "2026-11-29T00:00:00.000000Z",
		"reportingController": "orch.io/orchchaos",
		"reportingInstance":   client,
		"action":              "Writing",
		"reason":              "Chaos",
		"type":                "Normal",
		"note":                value,
		"regarding":           map[string]any{"apiVersion": "v1", "kind": "Pod", "namespace": "default", "name": name},
	})
	return data
}

// Item is what the campaigns read of a stored event.
type Item struct {
	Metadata struct {
		Name            string
		ResourceVersion string
		Labels          map[string]string
	}
	Note string
}

// List reads every event of namespace default from the server at url serving Events in group, and
// the list's resourceVersion.
func List(c *http.Client, url, group string) ([]Item, int64, error) {
	resp, err := c.Get(url + OnGroup(Path, group))
	if err != nil {
		return nil, 0, err
	}
	defer resp.Body.Close()
	var l struct {
		Metadata struct{ ResourceVersion string }
		Items    []Item
	}
	if resp.StatusCode != http.StatusOK {
		return nil, 0, fmt.Errorf("list events: %d", resp.StatusCode)
	}
	if err := json.NewDecoder(resp.Body).Decode(&l); err != nil {
		return nil, 0, err
	}
	rv, _ := strconv.ParseInt(l.Metadata.ResourceVersion, 10, 64)
	return l.Items, rv, nil
}
