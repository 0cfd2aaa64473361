package endpoints

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"

	eventsv1 "orch.io/orch/components/apis/events/v1"
)

// eventColumns are Kubernetes' event printer columns, so `get events` looks the same.
var eventColumns = []metav1.TableColumnDefinition{
	{Name: "Last Seen", Type: "string", Description: "The time at which the most recent occurrence of this event was recorded."},
	{Name: "Type", Type: "string", Description: "Type of this event (Normal, Warning), new types could be added in the future"},
	{Name: "Reason", Type: "string", Description: "This should be a short, machine understandable string that gives the reason for the transition into the object's current status."},
	{Name: "Object", Type: "string", Description: "The object that this event is about."},
	{Name: "Subobject", Type: "string", Priority: 1, Description: "If referring to a piece of an object instead of an entire object, this string should contain a valid JSON/Go field access statement, such as desiredState.manifest.containers[2]."},
	{Name: "Source", Type: "string", Priority: 1, Description: "The component reporting this event. Should be a short machine understandable string."},
	{Name: "Message", Type: "string", Description: "A human-readable description of the status of this operation."},
	{Name: "First Seen", Type: "string", Priority: 1, Description: "The time at which the event was first recorded. (Time of server receipt is in TypeMeta.)"},
	{Name: "Count", Type: "string", Priority: 1, Description: "The number of times this event has occurred."},
	{Name: "Name", Type: "string", Format: "name", Priority: 1, Description: "Name must be unique within a namespace."},
}

// table renders events the way Kubernetes' server-side printer does for kubectl.
func (h *handlers) table(items []eventsv1.Event, meta metav1.ListMeta) *metav1.Table {
	now := h.Clock.Now()
	t := &metav1.Table{
		TypeMeta:          metav1.TypeMeta{Kind: "Table", APIVersion: "meta.k8s.io/v1"},
		ListMeta:          meta,
		ColumnDefinitions: eventColumns,
		Rows:              make([]metav1.TableRow, 0, len(items)),
	}
	for i := range items {
		e := &items[i]
		first := since(now, e.DeprecatedFirstTimestamp.Time)
		if e.DeprecatedFirstTimestamp.IsZero() {
			first = since(now, e.EventTime.Time)
		}
		last := since(now, e.DeprecatedLastTimestamp.Time)
		if e.DeprecatedLastTimestamp.IsZero() {
			last = first
		}
		count := e.DeprecatedCount
		if e.Series != nil {
			last, count = since(now, e.Series.LastObservedTime.Time), e.Series.Count
		} else if count == 0 {
			count = 1 // a singleton event has no count in this API
		}
		object := strings.ToLower(e.Regarding.Kind)
		if e.Regarding.Name != "" {
			object = fmt.Sprintf("%s/%s", object, e.Regarding.Name)
		}
		// RawExtension marshals only Raw, so the row's object is encoded here.
		partial, _ := json.Marshal(&metav1.PartialObjectMetadata{
			TypeMeta:   metav1.TypeMeta{Kind: "PartialObjectMetadata", APIVersion: "meta.k8s.io/v1"},
			ObjectMeta: e.ObjectMeta,
		})
		t.Rows = append(t.Rows, metav1.TableRow{
			Cells: []any{last, e.Type, e.Reason, object, e.Regarding.FieldPath,
				source(firstNonEmpty(e.DeprecatedSource.Component, e.ReportingController), firstNonEmpty(e.DeprecatedSource.Host, e.ReportingInstance)),
				strings.TrimSpace(e.Note), first, int64(count), e.Name},
			Object: runtime.RawExtension{Raw: partial},
		})
	}
	return t
}

func since(now, t time.Time) string {
	if t.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(now.Sub(t))
}

func source(component, instance string) string {
	if instance == "" {
		return component
	}
	return component + ", " + instance
}

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
