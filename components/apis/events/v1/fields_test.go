package v1

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
)

var _ runtime.FieldLabelConversionFunc = ConvertFieldLabel

func sampleEvent() *Event {
	return &Event{
		ObjectMeta:          metav1.ObjectMeta{Name: "sample-1", Namespace: "default"},
		ReportingController: "orch.io/capture",
		Reason:              "Pulled",
		Type:                EventTypeNormal,
		Regarding: corev1.ObjectReference{
			Kind: "Pod", Namespace: "default", Name: "web-0", UID: "11111111-2222-3333-4444-555555555555",
			APIVersion: "v1", ResourceVersion: "42", FieldPath: "spec.containers{web}",
		},
	}
}

func TestSelectableFieldsValues(t *testing.T) {
	want := fields.Set{
		"metadata.name":             "sample-1",
		"metadata.namespace":        "default",
		"type":                      "Normal",
		"reason":                    "Pulled",
		"reportingController":       "orch.io/capture",
		"regarding.kind":            "Pod",
		"regarding.namespace":       "default",
		"regarding.name":            "web-0",
		"regarding.uid":             "11111111-2222-3333-4444-555555555555",
		"regarding.apiVersion":      "v1",
		"regarding.resourceVersion": "42",
		"regarding.fieldPath":       "spec.containers{web}",
	}
	got := SelectableFields(sampleEvent())
	if len(got) != len(want) {
		t.Fatalf("got %d keys %v, want %d", len(got), got, len(want))
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
}

func TestSelectableFieldsKeysMatchLabels(t *testing.T) {
	set := SelectableFields(&Event{})
	labels := SelectableFieldLabels()
	if len(set) != len(labels) {
		t.Fatalf("SelectableFields has %d keys, SelectableFieldLabels %d", len(set), len(labels))
	}
	for _, l := range labels {
		if _, ok := set[l]; !ok {
			t.Errorf("label %q missing from SelectableFields", l)
		}
		if !IsSelectableField(l) {
			t.Errorf("IsSelectableField(%q) = false", l)
		}
	}
	// The returned list is a copy.
	labels[0] = "changed"
	if !slices.Contains(SelectableFieldLabels(), "metadata.name") {
		t.Error("SelectableFieldLabels shares its backing array")
	}
}

func TestIsSelectableFieldRefusesOthers(t *testing.T) {
	for _, l := range []string{
		"", "note", "action", "source", "involvedObject.name", "reportingComponent",
		"metadata.uid", "regarding", "Reason", "series.count", "deprecatedSource.component",
	} {
		if IsSelectableField(l) {
			t.Errorf("IsSelectableField(%q) = true", l)
		}
		if _, _, err := ConvertFieldLabel(l, "x"); err == nil || err.Error() != "field label not supported: "+l {
			t.Errorf("ConvertFieldLabel(%q) error = %v", l, err)
		}
	}
	if l, v, err := ConvertFieldLabel("regarding.name", "web-0"); err != nil || l != "regarding.name" || v != "web-0" {
		t.Errorf("ConvertFieldLabel(regarding.name) = %q, %q, %v", l, v, err)
	}
}

func TestSelectorMatchesSelectableFields(t *testing.T) {
	e := sampleEvent()
	for sel, want := range map[string]bool{
		"regarding.name=web-0":                               true,
		"regarding.kind=Pod,type=Normal":                     true,
		"reason!=Pulled":                                     false,
		"reportingController=orch.io/capture":                true,
		"regarding.namespace=default,metadata.name=x":        false,
		"regarding.uid=11111111-2222-3333-4444-555555555555": true,
	} {
		s, err := fields.ParseSelector(sel)
		if err != nil {
			t.Fatalf("ParseSelector(%q): %v", sel, err)
		}
		for _, r := range s.Requirements() {
			if !IsSelectableField(r.Field) {
				t.Fatalf("%q uses unsupported %q", sel, r.Field)
			}
		}
		if got := s.Matches(SelectableFields(e)); got != want {
			t.Errorf("%q matches = %v, want %v", sel, got, want)
		}
	}
}
