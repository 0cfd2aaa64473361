package server

import (
	"bytes"
	"net/http"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	k8seventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
)

// Events speak protobuf as events.k8s.io/v1's Event, the form their strategy names: a create sent
// and answered in protobuf, and a list read so, carry the event whole under orch's group.
func TestEventsInProtobuf(t *testing.T) {
	e := newEnv(t)
	scheme := runtime.NewScheme()
	gv := schema.GroupVersion{Group: "events.orch.io", Version: "v1"}
	scheme.AddKnownTypes(gv, &k8seventsv1.Event{}, &k8seventsv1.EventList{})
	codec := protobuf.NewSerializer(scheme, scheme)
	const pb = "application/vnd.orch.protobuf"

	sent := &k8seventsv1.Event{
		TypeMeta:            metav1.TypeMeta{APIVersion: gv.String(), Kind: "Event"},
		ObjectMeta:          metav1.ObjectMeta{Name: "pb"},
		EventTime:           metav1.NewMicroTime(time.Date(2026, 11, 21, 23, 3, 57, 523342000, time.UTC)),
		ReportingController: "peers.io/capture", ReportingInstance: "capture-1", Action: "Started", Reason: "Pulled",
		Regarding: corev1.ObjectReference{Kind: "Pod", Namespace: "default", Name: "web-0", APIVersion: "v1"},
		Note:      "sent in protobuf", Type: "Normal",
	}
	var body bytes.Buffer
	if err := codec.Encode(sent, &body); err != nil {
		t.Fatal(err)
	}
	r := e.do(http.MethodPost, eventsPath, body.Bytes(), "Content-Type", pb, "Accept", pb)
	if r.code != http.StatusCreated || r.header.Get("Content-Type") != pb {
		t.Fatalf("create: %d %s %q", r.code, r.header.Get("Content-Type"), r.body)
	}
	created := &k8seventsv1.Event{}
	if _, _, err := codec.Decode(r.body, nil, created); err != nil {
		t.Fatal(err)
	}
	if created.Note != sent.Note || created.UID == "" || created.APIVersion != gv.String() || created.Kind != "Event" {
		t.Fatalf("created %+v", created)
	}
	if got := e.do(http.MethodGet, eventsPath+"/pb", nil).event(t); got.Note != sent.Note || got.UID != created.UID {
		t.Fatalf("read back as JSON: %+v", got)
	}

	r = e.do(http.MethodGet, eventsPath, nil, "Accept", pb)
	list := &k8seventsv1.EventList{}
	if _, _, err := codec.Decode(r.body, nil, list); err != nil {
		t.Fatalf("list: %d %v", r.code, err)
	}
	if list.Kind != "EventList" || len(list.Items) != 1 || list.Items[0].Note != sent.Note {
		t.Fatalf("list %+v", list)
	}
}
