package events

import (
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/apimachinery/pkg/util/validation/field"

	k8seventsv1 "k8s.io/api/events/v1"

	eventsv1 "orch.io/orch/components/apis/events/v1"
	"orch.io/orch/components/apis/events/v1/validation"
)

// KeyRoot is where events live in storage: <KeyRoot><namespace>/<name>.
const KeyRoot = "/registry/events.orch.io/events/"

// Strategy is events.orch.io/v1 events: namespaced, created on update, kept TTL after their last
// write.
type Strategy struct {
	// TTL is how long an event is kept after its last write (--event-ttl); 0 keeps it.
	TTL time.Duration
}

// TimeToLive is the events' TTL (a generic.ExpiringStrategy).
func (s Strategy) TimeToLive() time.Duration { return s.TTL }

// Resource names the events resource.
func (Strategy) Resource() schema.GroupVersionResource {
	return eventsv1.SchemeGroupVersion.WithResource("events")
}

func (Strategy) Kind() string                             { return "Event" }
func (Strategy) NamespaceScoped() bool                    { return true }
func (Strategy) New() runtime.Object                      { return &eventsv1.Event{} }
func (Strategy) NewList() runtime.Object                  { return &eventsv1.EventList{} }
func (Strategy) AllowCreateOnUpdate() bool                { return true }
func (Strategy) PrepareForCreate(runtime.Object)          {}
func (Strategy) PrepareForUpdate(obj, old runtime.Object) {}

// SchemaType is events.k8s.io/v1's Event, which Event is field for field: server-side apply and
// managedFields follow its schema.
func (Strategy) SchemaType() runtime.Object { return &k8seventsv1.Event{} }

// ProtobufTypes are events.k8s.io/v1's Event and EventList, whose fields and protobuf numbering
// Event and EventList share: orch's events speak protobuf as theirs (an endpoints.ProtobufForm).
func (Strategy) ProtobufTypes() (object, list runtime.Object) {
	return &k8seventsv1.Event{}, &k8seventsv1.EventList{}
}

// InvalidKind is Kubernetes' internal kind of events: a 422 reads `Event "x" is invalid`.
func (Strategy) InvalidKind() schema.GroupKind { return schema.GroupKind{Kind: "Event"} }

func (Strategy) Validate(obj runtime.Object) field.ErrorList {
	return validation.ValidateCreate(obj.(*eventsv1.Event))
}

func (Strategy) ValidateUpdate(obj, old runtime.Object) field.ErrorList {
	return validation.ValidateUpdate(obj.(*eventsv1.Event), old.(*eventsv1.Event))
}

func (Strategy) SelectableFields(obj runtime.Object) fields.Set {
	return eventsv1.SelectableFields(obj.(*eventsv1.Event))
}

// columns are Kubernetes' event printer columns, so `get events` looks the same.
var columns = []metav1.TableColumnDefinition{
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

func (Strategy) Columns() []metav1.TableColumnDefinition { return columns }

// Row renders an event the way Kubernetes' server-side printer does for kubectl.
func (Strategy) Row(obj runtime.Object, now time.Time) []any {
	e := obj.(*eventsv1.Event)
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
	return []any{last, e.Type, e.Reason, object, e.Regarding.FieldPath,
		source(firstNonEmpty(e.DeprecatedSource.Component, e.ReportingController), firstNonEmpty(e.DeprecatedSource.Host, e.ReportingInstance)),
		strings.TrimSpace(e.Note), first, int64(count), e.Name}
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
