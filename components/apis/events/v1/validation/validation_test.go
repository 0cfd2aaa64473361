package validation

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	eventsv1 "orch.io/orch/components/apis/events/v1"
)

// Messages apimachinery prints, pinned here so a change of wording shows up as a test failure.
const (
	msgSubdomain = `a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', ` +
		`and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is ` +
		`'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`
	msgLabel = `a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must ` +
		`start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation ` +
		`is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')`
	msgNamePart = `name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end ` +
		`with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation ` +
		`is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')`
	msgQualified = `a valid label key must consist of alphanumeric characters, '-', '_' or '.', and must start ` +
		`and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for ` +
		`validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' ` +
		`(e.g. 'example.com/MyName')`
	msgLabelValue = `a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', ` +
		`and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', ` +
		`regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')`
)

var (
	t0 = time.Date(2026, 11, 21, 23, 3, 57, 523342000, time.UTC)
	t1 = t0.Add(time.Minute)
)

// cause is one expected error: its type, field path and message as a Status cause carries it.
type cause struct {
	Type  field.ErrorType
	Field string
	Msg   string
}

func required(path string) cause { return cause{field.ErrorTypeRequired, path, "Required value"} }
func invalid(path, msg string) cause {
	return cause{field.ErrorTypeInvalid, path, "Invalid value: " + msg}
}
func tooLongEmpty(path string, n int) cause {
	return invalid(path, fmt.Sprintf(`"": can have at most %d characters`, n))
}
func immutable(path, value string) cause { return invalid(path, value+": field is immutable") }

func causes(errs field.ErrorList) []cause {
	out := []cause{}
	for _, e := range errs {
		out = append(out, cause{e.Type, e.Field, e.ErrorBody()})
	}
	return out
}

func assertCauses(t *testing.T, errs field.ErrorList, want []cause) {
	t.Helper()
	got := causes(errs)
	if want == nil {
		want = []cause{}
	}
	if len(got) != len(want) {
		t.Fatalf("got %d causes, want %d:\n got  %s\n want %s", len(got), len(want), fmtCauses(got), fmtCauses(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("cause %d:\n got  %+v\n want %+v", i, got[i], want[i])
		}
	}
}

func fmtCauses(cs []cause) string {
	var b strings.Builder
	for _, c := range cs {
		fmt.Fprintf(&b, "\n    %s | %s | %s", c.Type, c.Field, c.Msg)
	}
	return b.String()
}

// validEvent is an Event that passes ValidateCreate.
func validEvent() *eventsv1.Event {
	return &eventsv1.Event{
		ObjectMeta:          metav1.ObjectMeta{Name: "sample-1", Namespace: "default"},
		EventTime:           metav1.NewMicroTime(t0),
		ReportingController: "orch.io/capture",
		ReportingInstance:   "capture-1",
		Action:              "Started",
		Reason:              "Pulled",
		Regarding: corev1.ObjectReference{
			Kind: "Pod", Namespace: "default", Name: "web-0",
			UID: "11111111-2222-3333-4444-555555555555", APIVersion: "v1",
		},
		Note: "sample event sample-1",
		Type: eventsv1.EventTypeNormal,
	}
}

// storedEvent is validEvent as the store holds it after create.
func storedEvent() *eventsv1.Event {
	e := validEvent()
	e.UID = "401c7d8e-e5b1-41d4-8129-f18e97a64d10"
	e.ResourceVersion = "15252"
	e.CreationTimestamp = metav1.NewTime(t0.Truncate(time.Second))
	return e
}

func TestValidateCreate(t *testing.T) {
	s := strings.Repeat
	cases := []struct {
		name   string
		mutate func(e *eventsv1.Event)
		want   []cause
	}{
		{"valid", func(e *eventsv1.Event) {}, nil},

		// metadata.name: a DNS-1123 subdomain (message of 14-422-invalid-name.json).
		{"name dotted subdomain", func(e *eventsv1.Event) { e.Name = "web-0.17c8e2a1b4f5" }, nil},
		{"name invalid", func(e *eventsv1.Event) { e.Name = "Bad_Name" },
			[]cause{invalid("metadata.name", `"Bad_Name": `+msgSubdomain)}},
		{"name empty", func(e *eventsv1.Event) { e.Name = "" },
			[]cause{{field.ErrorTypeRequired, "metadata.name", "Required value: name or generateName is required"}}},

		// metadata.namespace: a DNS-1123 label.
		{"namespace label", func(e *eventsv1.Event) { e.Namespace, e.Regarding.Namespace = "team-a", "team-a" }, nil},
		{"namespace invalid", func(e *eventsv1.Event) { e.Namespace, e.Regarding.Namespace = "Team-A", "Team-A" },
			[]cause{invalid("metadata.namespace", `"Team-A": `+msgLabel)}},
		{"namespace empty", func(e *eventsv1.Event) { e.Namespace = "" },
			[]cause{required("metadata.namespace")}},

		// labels and annotations as Kubernetes validates ObjectMeta.
		{"labels valid", func(e *eventsv1.Event) {
			e.Labels = map[string]string{"app": "web", "orch.io/component": "capture", "empty": ""}
		}, nil},
		{"label key invalid", func(e *eventsv1.Event) { e.Labels = map[string]string{"bad key": "v"} },
			[]cause{invalid("metadata.labels", `"bad key": `+msgNamePart)}},
		{"label value invalid", func(e *eventsv1.Event) { e.Labels = map[string]string{"k": "bad value!"} },
			[]cause{invalid("metadata.labels", `"bad value!": `+msgLabelValue)}},
		{"annotations at 256 kB", func(e *eventsv1.Event) {
			e.Annotations = map[string]string{"a": s("x", 256*1024-1)}
		}, nil},
		{"annotations over 256 kB", func(e *eventsv1.Event) {
			e.Annotations = map[string]string{"a": s("x", 256*1024)}
		}, []cause{{field.ErrorTypeTooLong, "metadata.annotations", "Too long: may not be more than 262144 bytes"}}},
		{"annotation key invalid", func(e *eventsv1.Event) { e.Annotations = map[string]string{"a/b/c": "v"} },
			[]cause{invalid("metadata.annotations", `"a/b/c": `+msgQualified)}},

		// eventTime required.
		{"eventTime missing", func(e *eventsv1.Event) { e.EventTime = metav1.MicroTime{} },
			[]cause{required("eventTime")}},

		// action, reason, reportingInstance: non-empty, at most 128 characters.
		{"action 128", func(e *eventsv1.Event) { e.Action = s("a", 128) }, nil},
		{"action 129", func(e *eventsv1.Event) { e.Action = s("a", 129) }, []cause{tooLongEmpty("action", 128)}},
		{"action empty", func(e *eventsv1.Event) { e.Action = "" }, []cause{required("action")}},
		{"reason 128", func(e *eventsv1.Event) { e.Reason = s("r", 128) }, nil},
		{"reason 129", func(e *eventsv1.Event) { e.Reason = s("r", 129) }, []cause{tooLongEmpty("reason", 128)}},
		{"reason empty", func(e *eventsv1.Event) { e.Reason = "" }, []cause{required("reason")}},
		// Lengths are bytes, as Kubernetes counts them: 43 three-byte runes are 129 bytes.
		{"reason 129 bytes of 43 runes", func(e *eventsv1.Event) { e.Reason = s("€", 43) },
			[]cause{tooLongEmpty("reason", 128)}},
		{"reportingInstance 128", func(e *eventsv1.Event) { e.ReportingInstance = s("i", 128) }, nil},
		{"reportingInstance 129", func(e *eventsv1.Event) { e.ReportingInstance = s("i", 129) },
			[]cause{tooLongEmpty("reportingInstance", 128)}},
		{"reportingInstance empty", func(e *eventsv1.Event) { e.ReportingInstance = "" },
			[]cause{required("reportingInstance")}},

		// reportingController: non-empty (Required only) and a qualified name.
		{"reportingController plain", func(e *eventsv1.Event) { e.ReportingController = "orchlet" }, nil},
		{"reportingController empty", func(e *eventsv1.Event) { e.ReportingController = "" },
			[]cause{required("reportingController")}},
		{"reportingController invalid", func(e *eventsv1.Event) { e.ReportingController = "Bad Controller" },
			[]cause{invalid("reportingController", `"Bad Controller": `+msgNamePart)}},
		{"reportingController two slashes", func(e *eventsv1.Event) { e.ReportingController = "a/b/c" },
			[]cause{invalid("reportingController", `"a/b/c": `+msgQualified)}},

		// note: at most 1024 characters, at path note (Kubernetes: message).
		{"note empty", func(e *eventsv1.Event) { e.Note = "" }, nil},
		{"note 1024", func(e *eventsv1.Event) { e.Note = s("n", 1024) }, nil},
		{"note 1025", func(e *eventsv1.Event) { e.Note = s("n", 1025) }, []cause{tooLongEmpty("note", 1024)}},

		// type: non-empty, Normal or Warning.
		{"type Warning", func(e *eventsv1.Event) { e.Type = eventsv1.EventTypeWarning }, nil},
		{"type empty", func(e *eventsv1.Event) { e.Type = "" }, []cause{required("type")}},
		{"type Sideways", func(e *eventsv1.Event) { e.Type = "Sideways" },
			[]cause{invalid("type", `"": has invalid value: Sideways`)}},
		{"type lower case", func(e *eventsv1.Event) { e.Type = "normal" },
			[]cause{invalid("type", `"": has invalid value: normal`)}},

		// series: count at least 2, lastObservedTime required.
		{"series valid", func(e *eventsv1.Event) {
			e.Series = &eventsv1.EventSeries{Count: 2, LastObservedTime: metav1.NewMicroTime(t1)}
		}, nil},
		{"series count 1", func(e *eventsv1.Event) {
			e.Series = &eventsv1.EventSeries{Count: 1, LastObservedTime: metav1.NewMicroTime(t1)}
		}, []cause{invalid("series.count", `"": should be at least 2`)}},
		{"series lastObservedTime missing", func(e *eventsv1.Event) { e.Series = &eventsv1.EventSeries{Count: 5} },
			[]cause{required("series.lastObservedTime")}},
		{"series empty", func(e *eventsv1.Event) { e.Series = &eventsv1.EventSeries{} },
			[]cause{invalid("series.count", `"": should be at least 2`), required("series.lastObservedTime")}},

		// The deprecated fields unset on create.
		{"deprecatedCount set", func(e *eventsv1.Event) { e.DeprecatedCount = 3 },
			[]cause{invalid("deprecatedCount", `"": needs to be unset`)}},
		{"deprecatedSource component", func(e *eventsv1.Event) { e.DeprecatedSource.Component = "orchlet" },
			[]cause{invalid("deprecatedSource", `"": needs to be unset`)}},
		{"deprecatedSource host", func(e *eventsv1.Event) { e.DeprecatedSource.Host = "node-1" },
			[]cause{invalid("deprecatedSource", `"": needs to be unset`)}},
		{"deprecatedFirstTimestamp set", func(e *eventsv1.Event) { e.DeprecatedFirstTimestamp = metav1.NewTime(t0) },
			[]cause{invalid("deprecatedFirstTimestamp", `"": needs to be unset`)}},
		{"deprecatedLastTimestamp set", func(e *eventsv1.Event) { e.DeprecatedLastTimestamp = metav1.NewTime(t0) },
			[]cause{invalid("deprecatedLastTimestamp", `"": needs to be unset`)}},

		// regarding.namespace: any namespace for an event with eventTime; empty only in default or
		// orch-system.
		{"regarding cluster-scoped in default", func(e *eventsv1.Event) { e.Regarding = corev1.ObjectReference{Kind: "Node", Name: "node-1"} }, nil},
		{"regarding cluster-scoped in orch-system", func(e *eventsv1.Event) {
			e.Namespace, e.Regarding = "orch-system", corev1.ObjectReference{Kind: "Node", Name: "node-1"}
		}, nil},
		{"regarding cluster-scoped in kube-system", func(e *eventsv1.Event) {
			e.Namespace, e.Regarding = "kube-system", corev1.ObjectReference{Kind: "Node", Name: "node-1"}
		}, []cause{invalid("regarding.namespace", `"": does not match event.namespace`)}},
		{"regarding empty in team-a", func(e *eventsv1.Event) { e.Namespace, e.Regarding.Namespace = "team-a", "" },
			[]cause{invalid("regarding.namespace", `"": does not match event.namespace`)}},
		{"regarding other namespace", func(e *eventsv1.Event) { e.Namespace, e.Regarding.Namespace = "team-a", "team-b" }, nil},
		{"regarding other namespace from default", func(e *eventsv1.Event) { e.Regarding.Namespace = "team-b" }, nil},
		{"regarding same namespace in orch-system", func(e *eventsv1.Event) {
			e.Namespace, e.Regarding.Namespace = "orch-system", "orch-system"
		}, nil},
		{"related free", func(e *eventsv1.Event) {
			e.Related = &corev1.ObjectReference{Kind: "Node", Name: "node-1"}
		}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := validEvent()
			c.mutate(e)
			assertCauses(t, ValidateCreate(e), c.want)
		})
	}
}

func TestValidateCreateFiveMistakesFiveCauses(t *testing.T) {
	e := validEvent()
	e.EventTime = metav1.MicroTime{}                                                      // 1
	e.Reason = strings.Repeat("r", 200)                                                   // 2
	e.Type = "Sideways"                                                                   // 3
	e.DeprecatedCount = 7                                                                 // 4
	e.Series = &eventsv1.EventSeries{Count: 1, LastObservedTime: metav1.NewMicroTime(t1)} // 5
	assertCauses(t, ValidateCreate(e), []cause{
		tooLongEmpty("reason", 128),
		invalid("series.count", `"": should be at least 2`),
		required("eventTime"),
		invalid("type", `"": has invalid value: Sideways`),
		invalid("deprecatedCount", `"": needs to be unset`),
	})
}

// Every rule is checked whether or not eventTime is set; Kubernetes checks reportingController,
// reportingInstance, action, reason and note only for events with eventTime.
func TestValidateCreateChecksContentWithoutEventTime(t *testing.T) {
	e := validEvent()
	e.EventTime = metav1.MicroTime{}
	e.ReportingController = ""
	e.Action = ""
	assertCauses(t, ValidateCreate(e), []cause{
		required("reportingController"),
		required("action"),
		required("eventTime"),
	})
}

func TestValidateCreateStableOrder(t *testing.T) {
	e := validEvent()
	e.Name = "Bad_Name"
	e.ReportingController, e.ReportingInstance, e.Action, e.Reason, e.Type = "", "", "", "", ""
	e.Note = strings.Repeat("n", 2000)
	e.Regarding.Namespace = "elsewhere"
	e.DeprecatedCount, e.DeprecatedSource.Host = 1, "h"
	e.DeprecatedFirstTimestamp, e.DeprecatedLastTimestamp = metav1.NewTime(t0), metav1.NewTime(t0)
	e.Series = &eventsv1.EventSeries{}
	e.EventTime = metav1.MicroTime{}
	want := []cause{
		invalid("regarding.namespace", `"elsewhere": does not match event.namespace`),
		required("reportingController"),
		required("reportingInstance"),
		required("action"),
		required("reason"),
		tooLongEmpty("note", 1024),
		invalid("metadata.name", `"Bad_Name": `+msgSubdomain),
		invalid("series.count", `"": should be at least 2`),
		required("series.lastObservedTime"),
		required("eventTime"),
		required("type"),
		invalid("deprecatedFirstTimestamp", `"": needs to be unset`),
		invalid("deprecatedLastTimestamp", `"": needs to be unset`),
		invalid("deprecatedCount", `"": needs to be unset`),
		invalid("deprecatedSource", `"": needs to be unset`),
	}
	for i := 0; i < 5; i++ {
		assertCauses(t, ValidateCreate(e), want)
	}
}

func TestValidateNil(t *testing.T) {
	if errs := ValidateCreate(nil); len(errs) != 1 || errs[0].Type != field.ErrorTypeInternal {
		t.Errorf("ValidateCreate(nil) = %v", errs)
	}
	if errs := ValidateUpdate(nil, storedEvent()); len(errs) != 1 || errs[0].Type != field.ErrorTypeInternal {
		t.Errorf("ValidateUpdate(nil, old) = %v", errs)
	}
}

func TestValidateUpdate(t *testing.T) {
	s := strings.Repeat
	cases := []struct {
		name   string
		old    func(e *eventsv1.Event) // how the stored object differs from storedEvent
		mutate func(e *eventsv1.Event) // the update
		want   []cause
	}{
		{"unchanged", nil, func(e *eventsv1.Event) {}, nil},

		// series may change, and is validated again when it does.
		{"series added", nil, func(e *eventsv1.Event) {
			e.Series = &eventsv1.EventSeries{Count: 2, LastObservedTime: metav1.NewMicroTime(t1)}
		}, nil},
		{"series counted up", func(e *eventsv1.Event) {
			e.Series = &eventsv1.EventSeries{Count: 2, LastObservedTime: metav1.NewMicroTime(t1)}
		}, func(e *eventsv1.Event) {
			e.Series = &eventsv1.EventSeries{Count: 3, LastObservedTime: metav1.NewMicroTime(t1.Add(time.Second))}
		}, nil},
		{"series removed", func(e *eventsv1.Event) {
			e.Series = &eventsv1.EventSeries{Count: 2, LastObservedTime: metav1.NewMicroTime(t1)}
		}, func(e *eventsv1.Event) { e.Series = nil }, nil},
		{"series added with count 1", nil, func(e *eventsv1.Event) {
			e.Series = &eventsv1.EventSeries{Count: 1, LastObservedTime: metav1.NewMicroTime(t1)}
		}, []cause{invalid("series.count", `"": should be at least 2`)}},
		{"series lastObservedTime dropped", func(e *eventsv1.Event) {
			e.Series = &eventsv1.EventSeries{Count: 2, LastObservedTime: metav1.NewMicroTime(t1)}
		}, func(e *eventsv1.Event) { e.Series = &eventsv1.EventSeries{Count: 3} },
			[]cause{required("series.lastObservedTime")}},
		// An unchanged series is not judged again (as Kubernetes).
		{"series unchanged though invalid", func(e *eventsv1.Event) { e.Series = &eventsv1.EventSeries{Count: 1} },
			func(e *eventsv1.Event) {}, nil},

		// labels and annotations may change, and are validated.
		{"labels changed", nil, func(e *eventsv1.Event) { e.Labels = map[string]string{"app": "web"} }, nil},
		{"labels invalid", nil, func(e *eventsv1.Event) { e.Labels = map[string]string{"bad key": "v"} },
			[]cause{invalid("metadata.labels", `"bad key": `+msgNamePart)}},
		{"annotations changed", nil, func(e *eventsv1.Event) { e.Annotations = map[string]string{"orch.io/x": "y"} }, nil},
		{"annotations over 256 kB", nil, func(e *eventsv1.Event) {
			e.Annotations = map[string]string{"a": s("x", 256*1024)}
		}, []cause{{field.ErrorTypeTooLong, "metadata.annotations", "Too long: may not be more than 262144 bytes"}}},

		// metadata as Kubernetes checks it on update.
		{"metadata.name changed", nil, func(e *eventsv1.Event) { e.Name = "sample-2" },
			[]cause{immutable("metadata.name", `"sample-2"`)}},
		{"metadata.namespace changed", nil, func(e *eventsv1.Event) { e.Namespace = "team-a" },
			[]cause{immutable("metadata.namespace", `"team-a"`)}},
		{"metadata.uid changed", nil, func(e *eventsv1.Event) { e.UID = "other" },
			[]cause{immutable("metadata.uid", `"other"`)}},
		{"metadata.creationTimestamp changed", nil, func(e *eventsv1.Event) { e.CreationTimestamp = metav1.NewTime(t1) },
			[]cause{immutable("metadata.creationTimestamp", `"2026-11-21T23:04:57Z"`)}},
		{"metadata.resourceVersion missing", nil, func(e *eventsv1.Event) { e.ResourceVersion = "" },
			[]cause{invalid("metadata.resourceVersion", `"": must be specified for an update`)}},

		// Every other field immutable, each reported once with its new value (25-422-update-immutable).
		{"reason changed", nil, func(e *eventsv1.Event) { e.Reason = "Changed" },
			[]cause{immutable("reason", `"Changed"`)}},
		{"action changed", nil, func(e *eventsv1.Event) { e.Action = "Stopped" },
			[]cause{immutable("action", `"Stopped"`)}},
		{"note changed", nil, func(e *eventsv1.Event) { e.Note = "other" },
			[]cause{immutable("note", `"other"`)}},
		{"type changed", nil, func(e *eventsv1.Event) { e.Type = eventsv1.EventTypeWarning },
			[]cause{immutable("type", `"Warning"`)}},
		{"eventTime changed", nil, func(e *eventsv1.Event) { e.EventTime = metav1.NewMicroTime(t1) },
			[]cause{immutable("eventTime", `"2026-11-21T23:04:57.523342Z"`)}},
		{"regarding changed", nil, func(e *eventsv1.Event) { e.Regarding.Name = "web-1" },
			[]cause{immutable("regarding", `{"kind":"Pod","namespace":"default","name":"web-1","uid":"11111111-2222-3333-4444-555555555555","apiVersion":"v1"}`)}},
		{"related set", nil, func(e *eventsv1.Event) { e.Related = &corev1.ObjectReference{Kind: "Node", Name: "n"} },
			[]cause{immutable("related", `{"kind":"Node","name":"n"}`)}},
		{"related removed", func(e *eventsv1.Event) { e.Related = &corev1.ObjectReference{Kind: "Node", Name: "n"} },
			func(e *eventsv1.Event) { e.Related = nil }, []cause{immutable("related", `null`)}},
		{"reportingController changed", nil, func(e *eventsv1.Event) { e.ReportingController = "orch.io/other" },
			[]cause{immutable("reportingController", `"orch.io/other"`)}},
		{"reportingInstance changed", nil, func(e *eventsv1.Event) { e.ReportingInstance = "capture-2" },
			[]cause{immutable("reportingInstance", `"capture-2"`)}},
		{"deprecatedCount changed", nil, func(e *eventsv1.Event) { e.DeprecatedCount = 3 },
			[]cause{immutable("deprecatedCount", `3`)}},
		{"deprecatedSource changed", nil, func(e *eventsv1.Event) { e.DeprecatedSource.Host = "node-1" },
			[]cause{immutable("deprecatedSource", `{"host":"node-1"}`)}},
		{"deprecatedFirstTimestamp changed", nil, func(e *eventsv1.Event) { e.DeprecatedFirstTimestamp = metav1.NewTime(t0) },
			[]cause{immutable("deprecatedFirstTimestamp", `"2026-11-21T23:03:57Z"`)}},
		{"deprecatedLastTimestamp changed", nil, func(e *eventsv1.Event) { e.DeprecatedLastTimestamp = metav1.NewTime(t0) },
			[]cause{immutable("deprecatedLastTimestamp", `"2026-11-21T23:03:57Z"`)}},
		{"many changed, each once, in order", nil, func(e *eventsv1.Event) {
			e.Reason, e.Note, e.Type, e.Action = "Changed", "n2", eventsv1.EventTypeWarning, "A2"
		}, []cause{
			immutable("reason", `"Changed"`), immutable("note", `"n2"`),
			immutable("type", `"Warning"`), immutable("action", `"A2"`),
		}},

		// The create rules apply to a changed value, as Kubernetes' legacyValidateEvent does on update.
		{"reason changed too long", nil, func(e *eventsv1.Event) { e.Reason = s("r", 129) },
			[]cause{tooLongEmpty("reason", 128), immutable("reason", `"`+s("r", 129)+`"`)}},
		{"reportingController changed empty", nil, func(e *eventsv1.Event) { e.ReportingController = "" },
			[]cause{required("reportingController"), immutable("reportingController", `""`)}},
		{"type changed invalid", nil, func(e *eventsv1.Event) { e.Type = "Sideways" },
			[]cause{invalid("type", `"": has invalid value: Sideways`), immutable("type", `"Sideways"`)}},
		{"eventTime removed", nil, func(e *eventsv1.Event) { e.EventTime = metav1.MicroTime{} },
			[]cause{required("eventTime"), immutable("eventTime", `null`)}},
		{"regarding moved to another namespace", nil, func(e *eventsv1.Event) { e.Regarding.Namespace = "team-b" },
			[]cause{
				immutable("regarding", `{"kind":"Pod","namespace":"team-b","name":"web-0","uid":"11111111-2222-3333-4444-555555555555","apiVersion":"v1"}`),
			}},

		// ...but never to a value the store already holds (ratcheting): SPEC.md lets a stored note be up
		// to 64 kB and clients must read it back, so such an Event stays updatable (series, labels).
		{"stored 64 kB note, series heartbeat", func(e *eventsv1.Event) { e.Note = s("n", 64*1024) },
			func(e *eventsv1.Event) {
				e.Series = &eventsv1.EventSeries{Count: 2, LastObservedTime: metav1.NewMicroTime(t1)}
			}, nil},
		{"stored 64 kB note, labels changed", func(e *eventsv1.Event) { e.Note = s("n", 64*1024) },
			func(e *eventsv1.Event) { e.Labels = map[string]string{"seen": "true"} }, nil},
		{"stored 64 kB note, replaced by another 64 kB note", func(e *eventsv1.Event) { e.Note = s("n", 64*1024) },
			func(e *eventsv1.Event) { e.Note = s("m", 64*1024) },
			[]cause{tooLongEmpty("note", 1024), immutable("note", `"`+s("m", 64*1024)+`"`)}},
		{"stored invalid reportingController unchanged", func(e *eventsv1.Event) { e.ReportingController = "Bad Controller" },
			func(e *eventsv1.Event) { e.Labels = map[string]string{"a": "b"} }, nil},
		{"stored cluster-scoped regarding in team-a unchanged", func(e *eventsv1.Event) {
			e.Namespace, e.Regarding = "team-a", corev1.ObjectReference{Kind: "Node", Name: "n"}
		}, func(e *eventsv1.Event) {}, nil},
		// The deprecated-fields-unset rules are create-only, as in Kubernetes.
		{"stored deprecated fields unchanged", func(e *eventsv1.Event) {
			e.DeprecatedCount, e.DeprecatedSource.Component = 4, "orchlet"
			e.DeprecatedFirstTimestamp, e.DeprecatedLastTimestamp = metav1.NewTime(t0), metav1.NewTime(t1)
		}, func(e *eventsv1.Event) {
			e.Series = &eventsv1.EventSeries{Count: 2, LastObservedTime: metav1.NewMicroTime(t1)}
		}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			old := storedEvent()
			if c.old != nil {
				c.old(old)
			}
			newEvent := copyEvent(old)
			c.mutate(newEvent)
			assertCauses(t, ValidateUpdate(newEvent, old), c.want)
		})
	}
}

// A 64 kB note: rejected on create (SPEC.md: at most 1 kB), yet an Event stored with one stays readable
// and updatable while its note is unchanged (see ValidateUpdate and TestValidateUpdate).
func TestNote64kB(t *testing.T) {
	e := validEvent()
	e.Note = strings.Repeat("n", 64*1024)
	assertCauses(t, ValidateCreate(e), []cause{tooLongEmpty("note", 1024)})

	old := storedEvent()
	old.Note = e.Note
	newEvent := copyEvent(old)
	newEvent.Series = &eventsv1.EventSeries{Count: 2, LastObservedTime: metav1.NewMicroTime(t1)}
	assertCauses(t, ValidateUpdate(newEvent, old), nil)
}

// copyEvent deep-copies e (the wire types have no generated DeepCopy).
func copyEvent(e *eventsv1.Event) *eventsv1.Event {
	c := *e
	e.ObjectMeta.DeepCopyInto(&c.ObjectMeta)
	e.EventTime.DeepCopyInto(&c.EventTime)
	if e.Series != nil {
		s := *e.Series
		c.Series = &s
	}
	c.Related = e.Related.DeepCopy()
	return &c
}
