package v1

import (
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/fields"
)

// selectableFieldLabels are the field-selector keys an Event list or watch may filter on: the ones
// Kubernetes accepts for events.k8s.io/v1 (its regarding.* keys map to core's involvedObject.*),
// spelled as the fields of events.orch.io/v1. Kubernetes also accepts "source" (deprecatedSource's
// component, else reportingController); orch does not offer it.
var selectableFieldLabels = []string{
	"metadata.name",
	"metadata.namespace",
	"type",
	"reason",
	"reportingController",
	"regarding.kind",
	"regarding.namespace",
	"regarding.name",
	"regarding.uid",
	"regarding.apiVersion",
	"regarding.resourceVersion",
	"regarding.fieldPath",
}

// SelectableFields returns the values of e that a field selector matches against, keyed by
// field-selector label; it holds exactly the labels of SelectableFieldLabels.
func SelectableFields(e *Event) fields.Set {
	r := &e.Regarding
	return fields.Set{
		"metadata.name":             e.Name,
		"metadata.namespace":        e.Namespace,
		"type":                      e.Type,
		"reason":                    e.Reason,
		"reportingController":       e.ReportingController,
		"regarding.kind":            r.Kind,
		"regarding.namespace":       r.Namespace,
		"regarding.name":            r.Name,
		"regarding.uid":             string(r.UID),
		"regarding.apiVersion":      r.APIVersion,
		"regarding.resourceVersion": r.ResourceVersion,
		"regarding.fieldPath":       r.FieldPath,
	}
}

// IsSelectableField tells whether label is a field-selector key Events support.
func IsSelectableField(label string) bool {
	return slices.Contains(selectableFieldLabels, label)
}

// SelectableFieldLabels returns the supported field-selector keys, in a fixed order (a copy).
func SelectableFieldLabels() []string {
	return slices.Clone(selectableFieldLabels)
}

// ConvertFieldLabel has the shape of runtime.FieldLabelConversionFunc: it passes a supported label and
// its value through unchanged and refuses any other label with Kubernetes' message
// "field label not supported: <label>" (which the REST layer answers with 400 Bad Request).
func ConvertFieldLabel(label, value string) (string, string, error) {
	if !IsSelectableField(label) {
		return "", "", fmt.Errorf("field label not supported: %s", label)
	}
	return label, value, nil
}
