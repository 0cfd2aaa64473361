package endpoints

import (
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"strings"

	certificatesv1 "k8s.io/api/certificates/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	k8seventsv1 "k8s.io/api/events/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apimachinery/pkg/watch"
	sigsjson "sigs.k8s.io/json"

	orchEventsv1 "orch.io/orch/components/apis/events/v1"
)

// Kubernetes' protobuf media type, renamed; Kubernetes' own name is accepted too, so stock
// clients speak it unchanged.
const (
	ProtobufMediaType    = "application/vnd.orch.protobuf"
	K8sProtobufMediaType = "application/vnd.kubernetes.protobuf"
)

// coordinationGroupVersion is where leases are served.
var coordinationGroupVersion = schema.GroupVersion{Group: "coordination.orch.io", Version: "v1"}

// certificatesGroupVersion is where certificate signing requests are served, Kubernetes'
// certificates.k8s.io/v1 renamed.
var certificatesGroupVersion = schema.GroupVersion{Group: "certificates.orch.io", Version: "v1"}

// protobufScheme knows every kind orch serves in protobuf: core v1, coordination.orch.io/v1 and
// certificates.orch.io/v1,
// with the meta types (Status, WatchEvent, lists) of each version.
var protobufScheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := corev1.AddToScheme(s); err != nil {
		panic(err)
	}
	s.AddKnownTypes(coordinationGroupVersion, &coordinationv1.Lease{}, &coordinationv1.LeaseList{})
	metav1.AddToGroupVersion(s, coordinationGroupVersion)
	s.AddKnownTypes(certificatesGroupVersion, &certificatesv1.CertificateSigningRequest{}, &certificatesv1.CertificateSigningRequestList{})
	metav1.AddToGroupVersion(s, certificatesGroupVersion)
	s.AddKnownTypes(policyv1.SchemeGroupVersion, &policyv1.Eviction{})
	// events.orch.io/v1 has Kubernetes' events.k8s.io/v1 fields, so its protobuf form is theirs.
	s.AddKnownTypes(orchEventsv1.SchemeGroupVersion, &k8seventsv1.Event{}, &k8seventsv1.EventList{})
	metav1.AddToGroupVersion(s, orchEventsv1.SchemeGroupVersion)
	return s
}()

var (
	protobufSerializer = protobuf.NewSerializer(protobufScheme, protobufScheme)
	protobufRaw        = protobuf.NewRawSerializer(protobufScheme, protobufScheme)
)

func isProtobuf(mediaType string) bool {
	return mediaType == ProtobufMediaType || mediaType == K8sProtobufMediaType
}

// negotiateProtobuf tells whether the client prefers protobuf to everything else orch makes for
// this request, and the media type it named.
func negotiateProtobuf(r *http.Request) (string, bool) {
	accept := r.Header.Get("Accept")
	if accept == "" || accept == "application/json" { // what most requests send, without parsing
		return "", false
	}
	for _, entry := range strings.Split(accept, ",") {
		parts := strings.Split(entry, ";")
		mediaType := strings.TrimSpace(parts[0])
		if isProtobuf(mediaType) {
			for _, p := range parts[1:] {
				if k, _, _ := strings.Cut(strings.TrimSpace(p), "="); k == "as" {
					return "", false // a Table or metadata view is JSON only
				}
			}
			return mediaType, true
		}
		if _, ok := negotiate(&http.Request{Header: http.Header{"Accept": []string{entry}}}); ok {
			return "", false // something orch makes comes first
		}
	}
	return "", false
}

// writeProtobuf answers obj in Kubernetes' protobuf envelope.
func writeProtobuf(w http.ResponseWriter, code int, mediaType string, obj runtime.Object) {
	var buf strings.Builder
	obj, err := protobufForm(obj)
	if err == nil {
		err = protobufSerializer.Encode(obj, &buf)
	}
	if err != nil {
		WriteObject(w, &http.Request{}, http.StatusInternalServerError, ErrorStatus(fmt.Errorf("encoding the response as protobuf: %w", err)))
		return
	}
	h := w.Header()
	h.Set("Content-Type", mediaType)
	h.Set("Cache-Control", "no-cache, private")
	w.WriteHeader(code)
	_, _ = w.Write([]byte(buf.String()))
}

// decodeProtobuf reads a protobuf body into into, refusing another kind.
func decodeProtobuf(data []byte, into runtime.Object, gvk schema.GroupVersionKind) error {
	if e, ok := into.(*orchEventsv1.Event); ok {
		return decodeProtobufEvent(data, e)
	}
	out, got, err := protobufSerializer.Decode(data, &gvk, into)
	if err != nil {
		return apierrors.NewBadRequest(fmt.Sprintf("the object provided is unrecognized (must be of type %s): %v", gvk.Kind, err))
	}
	if got.Kind != gvk.Kind || out != into {
		return apierrors.NewBadRequest(fmt.Sprintf("the object provided is unrecognized (must be of type %s): kind %q is not %s", gvk.Kind, got.Kind, gvk.Kind))
	}
	return nil
}

// DecodeBody reads a request body, JSON or protobuf, into into, which is of kind gvk.
func DecodeBody(r *http.Request, into runtime.Object, gvk schema.GroupVersionKind) error {
	data, err := readBody(r)
	if err != nil {
		return err
	}
	if isProtobuf(bodyMediaType(r)) {
		return decodeProtobuf(data, into, gvk)
	}
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(data, into); err != nil {
		return apierrors.NewBadRequest(fmt.Sprintf("the object provided is unrecognized (must be of type %s): %v", gvk.Kind, err))
	}
	return nil
}

// protobufForm is obj as protobuf encodes it: an Event or EventList of events.orch.io/v1 becomes
// the Kubernetes type whose fields and protobuf numbering it shares; other objects pass unchanged.
func protobufForm(obj runtime.Object) (runtime.Object, error) {
	var out runtime.Object
	kind := "Event"
	switch obj.(type) {
	case *orchEventsv1.Event:
		out = &k8seventsv1.Event{}
	case *orchEventsv1.EventList:
		out, kind = &k8seventsv1.EventList{}, "EventList"
	default:
		return obj, nil
	}
	data, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(data, out); err != nil {
		return nil, err
	}
	out.GetObjectKind().SetGroupVersionKind(orchEventsv1.SchemeGroupVersion.WithKind(kind))
	return out, nil
}

// decodeProtobufEvent reads a protobuf Event body, in its Kubernetes form, into e.
func decodeProtobufEvent(data []byte, e *orchEventsv1.Event) error {
	k8s := &k8seventsv1.Event{}
	if err := decodeProtobuf(data, k8s, orchEventsv1.SchemeGroupVersion.WithKind("Event")); err != nil {
		return err
	}
	raw, err := json.Marshal(k8s)
	if err != nil {
		return apierrors.NewBadRequest(err.Error())
	}
	if err := json.Unmarshal(raw, e); err != nil {
		return apierrors.NewBadRequest(err.Error())
	}
	return nil
}

// bodyMediaType is the request body's media type, JSON when unnamed.
func bodyMediaType(r *http.Request) string {
	ct := r.Header.Get("Content-Type")
	if ct == "" {
		return "application/json"
	}
	mediaType, _, err := mime.ParseMediaType(ct)
	if err != nil {
		return ct
	}
	return mediaType
}

// protobufWatchFrame encodes one watch event as Kubernetes' protobuf stream does: a WatchEvent
// without envelope whose object is in the envelope, framed by a 4-byte big-endian length.
func protobufWatchFrame(eventType watch.EventType, obj runtime.Object) ([]byte, error) {
	var inner strings.Builder
	obj, err := protobufForm(obj)
	if err != nil {
		return nil, err
	}
	if err := protobufSerializer.Encode(obj, &inner); err != nil {
		return nil, err
	}
	ev := &metav1.WatchEvent{Type: string(eventType), Object: runtime.RawExtension{Raw: []byte(inner.String())}}
	var outer strings.Builder
	if err := protobufRaw.Encode(ev, &outer); err != nil {
		return nil, err
	}
	n := outer.Len()
	frame := make([]byte, 4, 4+n)
	frame[0], frame[1], frame[2], frame[3] = byte(n>>24), byte(n>>16), byte(n>>8), byte(n)
	return append(frame, outer.String()...), nil
}

func acceptsProtobuf(r *http.Request) bool {
	_, ok := negotiateProtobuf(r)
	return ok
}
