package events

import (
	"reflect"

	eventsv1 "orch.io/orch/components/apis/events/v1"
	"orch.io/orch/components/apiserver/openapi"
)

// OpenAPIDescriptions are Kubernetes' descriptions of events.k8s.io/v1's types, which
// kubectl explain reads from the OpenAPI documents (an openapi.Documented).
func (Strategy) OpenAPIDescriptions() map[reflect.Type]openapi.Descriptions {
	return map[reflect.Type]openapi.Descriptions{
		reflect.TypeFor[eventsv1.Event](): {
			Type: "Event is a report of an event somewhere in the cluster. It generally denotes some state change in the system. Events have a limited retention time and triggers and messages may evolve with time. Event consumers should not rely on the timing of an event with a given Reason reflecting a consistent underlying trigger, or the continued existence of events with that Reason.",
			Fields: map[string]string{
				"apiVersion":               "APIVersion defines the versioned schema of this representation of an object.",
				"kind":                     "Kind is a string value representing the REST resource this object represents.",
				"metadata":                 "Standard object's metadata.",
				"eventTime":                "eventTime is the time when this Event was first observed. It is required.",
				"series":                   "series is data about the Event series this event represents or nil if it's a singleton Event.",
				"reportingController":      "reportingController is the name of the controller that emitted this Event. This field cannot be empty for new Events.",
				"reportingInstance":        "reportingInstance is the ID of the controller instance. This field cannot be empty for new Events and it can have at most 128 characters.",
				"action":                   "action is what action was taken/failed regarding the regarding object. It is machine-readable. This field cannot be empty for new Events and it can have at most 128 characters.",
				"reason":                   "reason is why the action was taken. It is human-readable. This field cannot be empty for new Events and it can have at most 128 characters.",
				"regarding":                "regarding contains the object this Event is about.",
				"related":                  "related is the optional secondary object for more complex actions.",
				"note":                     "note is a human-readable description of the status of this operation. Maximal length of the note is 1kB, but libraries should be prepared to handle values up to 64kB.",
				"type":                     "type is the type of this event (Normal, Warning), new types could be added in the future. It is machine-readable. This field cannot be empty for new Events.",
				"deprecatedSource":         "deprecatedSource is the deprecated field assuring backward compatibility with core.v1 Event type.",
				"deprecatedFirstTimestamp": "deprecatedFirstTimestamp is the deprecated field assuring backward compatibility with core.v1 Event type.",
				"deprecatedLastTimestamp":  "deprecatedLastTimestamp is the deprecated field assuring backward compatibility with core.v1 Event type.",
				"deprecatedCount":          "deprecatedCount is the deprecated field assuring backward compatibility with core.v1 Event type.",
			},
		},
		reflect.TypeFor[eventsv1.EventSeries](): {
			Type: "EventSeries contain information on series of events, i.e. thing that was/is happening continuously for some time.",
			Fields: map[string]string{
				"count":            "count is the number of occurrences in this series up to the last heartbeat time.",
				"lastObservedTime": "lastObservedTime is the time when last Event from the series was seen before last heartbeat.",
			},
		},
		reflect.TypeFor[eventsv1.EventList](): {
			Type:   "EventList is a list of Event objects.",
			Fields: map[string]string{"items": "items is a list of schema objects."},
		},
	}
}
