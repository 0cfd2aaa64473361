package v1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupName is the API group these types are served under.
const GroupName = "events.orch.io"

// SchemeGroupVersion is the group-version of every type in this package.
var SchemeGroupVersion = schema.GroupVersion{Group: GroupName, Version: "v1"}

// Resource names the events resource in this group, for errors and discovery.
var Resource = SchemeGroupVersion.WithResource("events").GroupResource()

// Event types SPEC.md allows; more may be added later.
const (
	EventTypeNormal  = "Normal"
	EventTypeWarning = "Warning"
)

// Event is a report of something that happened in the cluster. Field order follows Kubernetes'
// events/v1 Event so the JSON reads the same.
type Event struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	EventTime                metav1.MicroTime        `json:"eventTime"`
	Series                   *EventSeries            `json:"series,omitempty"`
	ReportingController      string                  `json:"reportingController,omitempty"`
	ReportingInstance        string                  `json:"reportingInstance,omitempty"`
	Action                   string                  `json:"action,omitempty"`
	Reason                   string                  `json:"reason,omitempty"`
	Regarding                corev1.ObjectReference  `json:"regarding,omitempty"`
	Related                  *corev1.ObjectReference `json:"related,omitempty"`
	Note                     string                  `json:"note,omitempty"`
	Type                     string                  `json:"type,omitempty"`
	DeprecatedSource         corev1.EventSource      `json:"deprecatedSource,omitempty"`
	DeprecatedFirstTimestamp metav1.Time             `json:"deprecatedFirstTimestamp,omitempty"`
	DeprecatedLastTimestamp  metav1.Time             `json:"deprecatedLastTimestamp,omitempty"`
	DeprecatedCount          int32                   `json:"deprecatedCount,omitempty"`
}

// EventSeries describes an event that keeps happening; absent for a singleton event.
type EventSeries struct {
	Count            int32            `json:"count"`
	LastObservedTime metav1.MicroTime `json:"lastObservedTime"`
}

// EventList is a page of Events.
type EventList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Event `json:"items"`
}
