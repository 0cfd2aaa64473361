package validation

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	eventsv1 "orch.io/orch/components/apis/events/v1"
)

// kubePathToOrch maps the field paths Kubernetes prints (its internal core Event's names) to the paths
// of the events.orch.io/v1 object the user sent.
var kubePathToOrch = map[string]string{
	"message":                  "note",
	"count":                    "deprecatedCount",
	"source":                   "deprecatedSource",
	"firstTimestamp":           "deprecatedFirstTimestamp",
	"lastTimestamp":            "deprecatedLastTimestamp",
	"involvedObject":           "regarding",
	"involvedObject.namespace": "regarding.namespace",
}

// orchStatus turns a Kubernetes 422 body into the one orch answers for the same input, applying the
// documented differences: orch's field paths, one cause per broken rule (no qualified-name causes for a
// field already reported as Required, no repeated cause), and the message rebuilt from those causes the
// way apierrors.NewInvalid builds it.
func orchStatus(t *testing.T, kube metav1.Status) metav1.Status {
	t.Helper()
	want := kube
	d := *kube.Details
	d.Causes = nil
	requiredAt := map[string]bool{}
	seen := map[metav1.StatusCause]bool{}
	for _, c := range kube.Details.Causes {
		if p, ok := kubePathToOrch[c.Field]; ok {
			c.Field = p
		}
		if c.Type == metav1.CauseTypeFieldValueRequired {
			requiredAt[c.Field] = true
		} else if requiredAt[c.Field] && c.Type == metav1.CauseTypeFieldValueInvalid {
			continue
		}
		if seen[c] {
			continue
		}
		seen[c] = true
		d.Causes = append(d.Causes, c)
	}
	want.Details = &d
	parts := make([]string, 0, len(d.Causes))
	for _, c := range d.Causes {
		parts = append(parts, c.Field+": "+c.Message)
	}
	msg := strings.Join(parts, ", ")
	if len(parts) > 1 {
		msg = "[" + msg + "]"
	}
	want.Message = fmt.Sprintf("%s %q is invalid: %s", d.Kind, d.Name, msg)
	return want
}

func readReference(t *testing.T, file string) metav1.Status {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", file))
	if err != nil {
		t.Fatal(err)
	}
	var st metav1.Status
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatal(err)
	}
	return st
}

// TestReferenceBodies builds the 422 Status from orch's errors for inputs that break the same rules as
// the captured requests did, and compares it with Kubernetes' body after the documented differences.
func TestReferenceBodies(t *testing.T) {
	cases := []struct {
		file     string
		validate func() (string, field.ErrorList)
		// how the orch body differs from Kubernetes', beyond field paths (for the reader)
		differs string
	}{
		{"11-422-reason-too-long.json", func() (string, field.ErrorList) {
			e := validEvent()
			e.Name, e.Reason = "bad-1", strings.Repeat("r", 129)
			return e.Name, ValidateCreate(e)
		}, "identical"},
		{"12-422-missing-reportingController.json", func() (string, field.ErrorList) {
			e := validEvent()
			e.Name, e.ReportingController = "bad-2", ""
			return e.Name, ValidateCreate(e)
		}, "Required only; Kubernetes adds two qualified-name causes for the empty string"},
		{"13-422-multiple-errors.json", func() (string, field.ErrorList) {
			e := validEvent()
			e.Name, e.EventTime, e.Type = "bad-3", metav1.MicroTime{}, "Sideways"
			return e.Name, ValidateCreate(e)
		}, "identical"},
		{"13b-422-many-errors-with-eventTime.json", func() (string, field.ErrorList) {
			e := validEvent()
			e.Name = "bad-4"
			e.ReportingController, e.ReportingInstance, e.Action, e.Reason = "", "", "", ""
			e.Note = strings.Repeat("n", 1025)
			e.Series = &eventsv1.EventSeries{Count: 1, LastObservedTime: metav1.NewMicroTime(t1)}
			e.Type = "Sideways"
			e.DeprecatedCount = 3
			return e.Name, ValidateCreate(e)
		}, "paths note and deprecatedCount; reportingController Required only"},
		{"14-422-invalid-name.json", func() (string, field.ErrorList) {
			e := validEvent()
			e.Name = "Bad_Name"
			return e.Name, ValidateCreate(e)
		}, "identical"},
		{"25-422-update-immutable.json", func() (string, field.ErrorList) {
			old := storedEvent()
			e := copyEvent(old)
			e.Reason = "Changed"
			return e.Name, ValidateUpdate(e, old)
		}, "reason reported once; Kubernetes repeats the cause"},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			kube := readReference(t, c.file)
			want := orchStatus(t, kube)
			name, errs := c.validate()

			// Kubernetes reports events.k8s.io Events under its internal core group, so its Status has
			// no details.group and the message says `Event "x"`; NewInvalid with an empty group
			// reproduces that body exactly.
			got := apierrors.NewInvalid(schema.GroupKind{Kind: "Event"}, name, errs).ErrStatus
			// The serializer of the REST layer stamps kind and apiVersion on every Status it writes.
			got.TypeMeta = metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}
			if !reflect.DeepEqual(got, want) {
				gb, _ := json.MarshalIndent(got, "", "  ")
				wb, _ := json.MarshalIndent(want, "", "  ")
				t.Fatalf("(%s)\ngot  %s\nwant %s", c.differs, gb, wb)
			}
			if c.differs == "identical" && !reflect.DeepEqual(got, kube) {
				t.Errorf("expected the Kubernetes body unchanged")
			}

			// With orch's group the causes are the same; the message names the qualified kind and
			// details carry the group.
			withGroup := apierrors.NewInvalid(schema.GroupKind{Group: eventsv1.GroupName, Kind: "Event"}, name, errs).ErrStatus
			if !reflect.DeepEqual(withGroup.Details.Causes, want.Details.Causes) {
				t.Errorf("causes differ with the group set")
			}
			if wantMsg := strings.Replace(want.Message, "Event ", "Event.events.orch.io ", 1); withGroup.Message != wantMsg {
				t.Errorf("message with group:\n got  %s\n want %s", withGroup.Message, wantMsg)
			}
			if withGroup.Details.Group != "events.orch.io" || withGroup.Code != 422 || withGroup.Reason != metav1.StatusReasonInvalid {
				t.Errorf("status with group: %+v", withGroup)
			}
		})
	}
}
