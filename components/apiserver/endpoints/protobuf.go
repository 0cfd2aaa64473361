package endpoints

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apimachinery/pkg/watch"
	sigsjson "sigs.k8s.io/json"
)

// Kubernetes' protobuf media type, renamed; Kubernetes' own name is accepted too, so stock
// clients speak it unchanged.
const (
	ProtobufMediaType    = "application/vnd.orch.protobuf"
	K8sProtobufMediaType = "application/vnd.kubernetes.protobuf"
)

// ProtobufForm is a Strategy whose objects have no protobuf form of their own: they are encoded as
// object and list, other types with the same fields and field numbers, converted field for field
// (events.orch.io/v1's Event is events.k8s.io/v1's).
type ProtobufForm interface {
	ProtobufTypes() (object, list runtime.Object)
}

// protobufKinds are what the server encodes and decodes as protobuf: the scheme of every kind it serves,
// and the types some are encoded as. The core v1 kinds (with the meta kinds: Status, WatchEvent,
// DeleteOptions) and policy/v1 Eviction, the pods/eviction body, are there from the start; each
// group version adds its resources as it is served (registerProtobuf). Decoding reads the scheme
// under mu, since a server can be built while another decodes.
var protobufKinds = struct {
	mu     sync.RWMutex
	scheme *runtime.Scheme
	forms  map[reflect.Type]protobufType // the Go type of a served object or list: the type it is encoded as
}{scheme: func() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := corev1.AddToScheme(s); err != nil {
		panic(err)
	}
	s.AddKnownTypes(policyv1.SchemeGroupVersion, &policyv1.Eviction{})
	return s
}(), forms: map[reflect.Type]protobufType{}}

// protobufType is a type objects are encoded as, and the kind they are encoded under.
type protobufType struct {
	typ  reflect.Type
	kind schema.GroupVersionKind
}

// registerProtobuf adds the objects and lists of g's resources to the protobuf scheme under g's
// group version, each as itself or as its strategy's ProtobufForm.
func registerProtobuf(g GroupVersion) {
	protobufKinds.mu.Lock()
	defer protobufKinds.mu.Unlock()
	registered := protobufKinds.scheme.IsVersionRegistered(g.GroupVersion)
	for _, r := range g.Resources {
		s := r.Store.Strategy()
		object, list := s.New(), s.NewList()
		if pf, ok := s.(ProtobufForm); ok {
			pbObject, pbList := pf.ProtobufTypes()
			protobufKinds.forms[reflect.TypeOf(object)] = protobufType{reflect.TypeOf(pbObject), g.GroupVersion.WithKind(s.Kind())}
			protobufKinds.forms[reflect.TypeOf(list)] = protobufType{reflect.TypeOf(pbList), g.GroupVersion.WithKind(s.Kind() + "List")}
			object, list = pbObject, pbList
		}
		protobufKinds.scheme.AddKnownTypes(g.GroupVersion, object, list)
	}
	if !registered {
		metav1.AddToGroupVersion(protobufKinds.scheme, g.GroupVersion)
	}
}

var (
	protobufSerializer = protobuf.NewSerializer(protobufKinds.scheme, protobufKinds.scheme)
	protobufRaw        = protobuf.NewRawSerializer(protobufKinds.scheme, protobufKinds.scheme)
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
	for entry := range strings.SplitSeq(accept, ",") { // no slices made: this is every answer's
		mediaType, params, _ := strings.Cut(entry, ";")
		mediaType = strings.TrimSpace(mediaType)
		if isProtobuf(mediaType) {
			for p := range strings.SplitSeq(params, ";") {
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

// writeProtobuf answers obj in Kubernetes' protobuf envelope. The serializer encodes into a
// pooled buffer, as Kubernetes' response writers do, and writes it once, after anything that can
// fail: the header is set at that write (the encoding was copied twice more on its way to the
// response, a fifth of what a status post's round trip allocates outside the store).
func writeProtobuf(w http.ResponseWriter, code int, mediaType string, obj runtime.Object) {
	obj, err := protobufForm(obj)
	if err == nil {
		alloc := runtime.AllocatorPool.Get().(*runtime.Allocator)
		defer runtime.AllocatorPool.Put(alloc)
		out := &protobufResponse{w: w, code: code, mediaType: mediaType}
		if err = protobufSerializer.EncodeWithAllocator(obj, out, alloc); out.written {
			return // a failed write is a client that left
		}
	}
	if err != nil {
		// The Status in plain JSON: a request with an empty URL asks for no other form (one
		// without a URL panicked reading its parameters).
		WriteObject(w, &http.Request{URL: &url.URL{}}, http.StatusInternalServerError, ErrorStatus(fmt.Errorf("encoding the response as protobuf: %w", err)))
	}
}

// protobufResponse writes the header of a protobuf answer with its first bytes.
type protobufResponse struct {
	w         http.ResponseWriter
	code      int
	mediaType string
	written   bool
}

func (r *protobufResponse) Write(b []byte) (int, error) {
	if !r.written {
		h := r.w.Header()
		h.Set("Content-Type", r.mediaType)
		h.Set("Cache-Control", "no-cache, private")
		r.w.WriteHeader(r.code)
		r.written = true
	}
	return r.w.Write(b)
}

// decodeProtobuf reads a protobuf body into into, refusing another kind.
func decodeProtobuf(data []byte, into runtime.Object, gvk schema.GroupVersionKind) error {
	if form, ok := protobufFormOf(into); ok {
		return decodeConverted(data, into, form, gvk)
	}
	if ok, err := decodeNamed(data, into, gvk); ok {
		return err
	}
	return decodeSerialized(data, into, gvk)
}

// decodeSerialized is decodeProtobuf by the serializer.
func decodeSerialized(data []byte, into runtime.Object, gvk schema.GroupVersionKind) error {
	protobufKinds.mu.RLock()
	out, got, err := protobufSerializer.Decode(data, &gvk, into)
	protobufKinds.mu.RUnlock()
	if err != nil {
		return apierrors.NewBadRequest(fmt.Sprintf("the object provided is unrecognized (must be of type %s): %v", gvk.Kind, err))
	}
	if got.Kind != gvk.Kind || out != into {
		return apierrors.NewBadRequest(fmt.Sprintf("the object provided is unrecognized (must be of type %s): kind %q is not %s", gvk.Kind, got.Kind, gvk.Kind))
	}
	return nil
}

// decodeNamed decodes, as the serializer would, a body whose envelope names gvk into into, a type
// the scheme has under gvk; ok is false for any other body, which is the serializer's to decode
// or refuse. It reads the envelope in place: the serializer copies the object's bytes out of it,
// and looks up into's kinds twice.
func decodeNamed(data []byte, into runtime.Object, gvk schema.GroupVersionKind) (ok bool, err error) {
	m, isMessage := into.(interface {
		Reset()
		Unmarshal([]byte) error
	})
	body, isEnvelope := bytes.CutPrefix(data, protobufPrefix)
	if !isMessage || !isEnvelope || gvk.Version == "" {
		return false, nil
	}
	var typeMeta, raw []byte
	if !protobufFields(body, func(field uint64, v []byte) bool {
		switch field {
		case 1:
			typeMeta = v
		case 2:
			raw = v
		}
		return field <= 4 // contentEncoding and contentType, which the serializer does not read
	}) || typeMeta == nil {
		return false, nil
	}
	var apiVersion, kind []byte
	if !protobufFields(typeMeta, func(field uint64, v []byte) bool {
		switch field {
		case 1:
			apiVersion = v
		case 2:
			kind = v
		}
		return field == 1 || field == 2
	}) || string(kind) != gvk.Kind || !isAPIVersion(apiVersion, gvk.GroupVersion()) {
		return false, nil
	}
	protobufKinds.mu.RLock()
	kinds, _, kindsErr := protobufKinds.scheme.ObjectKinds(into)
	protobufKinds.mu.RUnlock()
	if kindsErr != nil || !slices.Contains(kinds, gvk) {
		return false, nil
	}
	m.Reset()
	if err := m.Unmarshal(raw); err != nil {
		return true, apierrors.NewBadRequest(fmt.Sprintf("the object provided is unrecognized (must be of type %s): %v", gvk.Kind, err))
	}
	into.GetObjectKind().SetGroupVersionKind(gvk)
	return true, nil
}

// protobufPrefix begins every protobuf body: "k8s" and a zero byte.
var protobufPrefix = []byte{0x6b, 0x38, 0x73, 0x00}

// protobufFields hands each field of the message b to use, which tells whether it is one the
// caller knows; false if one is not, is given twice, is not length-delimited (as every field of
// an envelope and its TypeMeta is) or b is malformed.
func protobufFields(b []byte, use func(field uint64, v []byte) bool) bool {
	var seen uint64 // the fields given, by bit; the caller knows fields 1 to 4 at most
	for len(b) > 0 {
		tag, n := binary.Uvarint(b)
		if n <= 0 || tag&7 != 2 || tag>>3 == 0 || tag>>3 > 63 || seen&(1<<(tag>>3)) != 0 {
			return false
		}
		seen |= 1 << (tag >> 3)
		b = b[n:]
		length, n := binary.Uvarint(b)
		if n <= 0 || length > uint64(len(b)-n) {
			return false
		}
		if !use(tag>>3, b[n:n+int(length)]) {
			return false
		}
		b = b[n+int(length):]
	}
	return true
}

// isAPIVersion tells whether b is gv's apiVersion, gv.String(), without making it.
func isAPIVersion(b []byte, gv schema.GroupVersion) bool {
	if gv.Group == "" {
		return string(b) == gv.Version
	}
	g := len(gv.Group)
	return len(b) == g+1+len(gv.Version) && string(b[:g]) == gv.Group && b[g] == '/' && string(b[g+1:]) == gv.Version
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

func protobufFormOf(obj runtime.Object) (protobufType, bool) {
	protobufKinds.mu.RLock()
	defer protobufKinds.mu.RUnlock()
	form, ok := protobufKinds.forms[reflect.TypeOf(obj)]
	return form, ok
}

// protobufForm is obj as protobuf encodes it: converted field for field to the type of its
// resource's ProtobufForm, or obj itself.
func protobufForm(obj runtime.Object) (runtime.Object, error) {
	form, ok := protobufFormOf(obj)
	if !ok {
		return obj, nil
	}
	out := reflect.New(form.typ.Elem()).Interface().(runtime.Object)
	data, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(data, out); err != nil {
		return nil, err
	}
	out.GetObjectKind().SetGroupVersionKind(form.kind)
	return out, nil
}

// decodeConverted reads a protobuf body in its form's type and converts it into into.
func decodeConverted(data []byte, into runtime.Object, form protobufType, gvk schema.GroupVersionKind) error {
	decoded := reflect.New(form.typ.Elem()).Interface().(runtime.Object)
	if err := decodeProtobuf(data, decoded, gvk); err != nil {
		return err
	}
	raw, err := json.Marshal(decoded)
	if err != nil {
		return apierrors.NewBadRequest(err.Error())
	}
	if err := json.Unmarshal(raw, into); err != nil {
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
	mediaType, err := parseMediaType(ct)
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

// protobufMessage is a Kubernetes type with its generated protobuf decoding.
type protobufMessage interface {
	Unmarshal(data []byte) error
}

// decodeEnvelope decodes a protobuf body of kind gvk that is not stored (a review, which kubectl's
// typed clients post as protobuf): the envelope must name gvk, and its object is decoded into m.
func decodeEnvelope(data []byte, m protobufMessage, gvk schema.GroupVersionKind) error {
	var u runtime.Unknown
	if !bytes.HasPrefix(data, protobufPrefix) {
		return apierrors.NewBadRequest(fmt.Sprintf("the object provided is unrecognized (must be of type %s): not a protobuf envelope", gvk.Kind))
	}
	if err := u.Unmarshal(data[len(protobufPrefix):]); err != nil {
		return apierrors.NewBadRequest(fmt.Sprintf("the object provided is unrecognized (must be of type %s): %v", gvk.Kind, err))
	}
	if u.Kind != gvk.Kind {
		return apierrors.NewBadRequest(fmt.Sprintf("the object provided is unrecognized (must be of type %s): kind %q is not %s", gvk.Kind, u.Kind, gvk.Kind))
	}
	if u.APIVersion != gvk.GroupVersion().String() {
		return apierrors.NewBadRequest(fmt.Sprintf("the API version in the data (%s) does not match the expected API version (%s)", u.APIVersion, gvk.GroupVersion().String()))
	}
	if err := m.Unmarshal(u.Raw); err != nil {
		return apierrors.NewBadRequest(fmt.Sprintf("the object provided is unrecognized (must be of type %s): %v", gvk.Kind, err))
	}
	return nil
}
