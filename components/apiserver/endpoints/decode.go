package endpoints

import (
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	"orch.io/orch/components/apiserver/registry/generic"
)

// MaxRequestBodyBytes is Kubernetes' limit on a request body: 3 MiB.
const MaxRequestBodyBytes = 3 * 1024 * 1024

// exactBodyBytes is the largest body read into a slice of its declared length before it arrives.
const exactBodyBytes = 64 << 10

func readBody(r *http.Request) ([]byte, error) {
	if n := r.ContentLength; n >= 0 && n <= exactBodyBytes {
		// The server ends the body at its Content-Length, so one read into a slice of that size
		// is the whole body, without ReadAll's growing copies. Only up to exactBodyBytes: a
		// larger Content-Length is only a claim, and memory is spent on the bytes that arrive.
		data := make([]byte, n)
		if _, err := io.ReadFull(r.Body, data); err != nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("reading the request body failed: %v", err))
		}
		return data, nil
	}
	data, err := io.ReadAll(io.LimitReader(r.Body, MaxRequestBodyBytes+1))
	if err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("reading the request body failed: %v", err))
	}
	if len(data) > MaxRequestBodyBytes {
		return nil, apierrors.NewRequestEntityTooLargeError(fmt.Sprintf("limit is %d", MaxRequestBodyBytes))
	}
	return data, nil
}

// bodyJSON reads a create or update body as JSON, converting YAML; other media types are 415.
func bodyJSON(r *http.Request, kind string) ([]byte, error) {
	contentType := r.Header.Get("Content-Type")
	mediaType := "application/json"
	if contentType != "" {
		var err error
		if mediaType, err = parseMediaType(contentType); err != nil {
			return nil, mediaTypeError("application/json, application/yaml")
		}
	}
	if mediaType != "application/json" && mediaType != "application/yaml" {
		return nil, mediaTypeError("application/json, application/yaml")
	}
	data, err := readBody(r)
	if err != nil {
		return nil, err
	}
	if mediaType == "application/yaml" {
		converted, err := yaml.YAMLToJSON(data)
		if err != nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("the object provided is unrecognized (must be of type %s): yaml parse error: %v", kind, err))
		}
		data = converted
	}
	return data, nil
}

func mediaTypeError(accepted string) error {
	status := apierrors.NewGenericServerResponse(http.StatusUnsupportedMediaType, "", schema.GroupResource{}, "", "", 0, false)
	status.ErrStatus.Message = "the body of the request was in an unknown format - accepted media types include: " + accepted
	status.ErrStatus.Details = nil
	return status
}

// parseMediaType is mime.ParseMediaType's media type; the exact types clients send are their own,
// without the parse (which makes a map of parameters each time).
func parseMediaType(v string) (string, error) {
	switch v {
	case "application/json", "application/yaml", ProtobufMediaType, K8sProtobufMediaType:
		return v, nil
	}
	mediaType, _, err := mime.ParseMediaType(v)
	return mediaType, err
}

// Query is r's query parameters. Most requests have none and are not parsed: URL.Query makes a
// map at every call, and a write reads three parameters.
func Query(r *http.Request) url.Values {
	if r.URL.RawQuery == "" {
		return nil
	}
	return r.URL.Query()
}

// fieldValidation is the fieldValidation query parameter: what to do with unknown and duplicate fields.
type fieldValidation string

const (
	validationIgnore fieldValidation = "Ignore"
	validationWarn   fieldValidation = "Warn"
	validationStrict fieldValidation = "Strict"
)

func parseFieldValidation(r *http.Request) (fieldValidation, error) {
	switch v := Query(r).Get("fieldValidation"); v {
	case "":
		return validationWarn, nil
	case string(validationIgnore), string(validationWarn), string(validationStrict):
		return fieldValidation(v), nil
	default:
		return "", apierrors.NewBadRequest(fmt.Sprintf("fieldValidation: Unsupported value: %q: supported values: \"Ignore\", \"Strict\", \"Warn\"", v))
	}
}

// decodeObject decodes data into obj case-sensitively, as Kubernetes does, refusing another kind
// or version. Unknown and duplicate fields fail the request under Strict and become Warning
// headers under Warn.
func decodeObject(w http.ResponseWriter, data []byte, mode fieldValidation, obj any, gvk schema.GroupVersionKind) error {
	strictErrs, err := sigsjson.UnmarshalStrict(data, obj, sigsjson.DisallowDuplicateFields, sigsjson.DisallowUnknownFields)
	if err != nil {
		return apierrors.NewBadRequest(fmt.Sprintf("the object provided is unrecognized (must be of type %s): json parse error: %v (%s)", gvk.Kind, err, excerpt(data)))
	}
	tm := typeMetaOf(obj, data)
	if tm.Kind != "" && tm.Kind != gvk.Kind {
		return apierrors.NewBadRequest(fmt.Sprintf("the object provided is unrecognized (must be of type %s): kind %q is not %s", gvk.Kind, tm.Kind, gvk.Kind))
	}
	if tm.APIVersion != "" && tm.APIVersion != gvk.GroupVersion().String() {
		return apierrors.NewBadRequest(fmt.Sprintf("the API version in the data (%s) does not match the expected API version (%s)", tm.APIVersion, gvk.GroupVersion().String()))
	}
	if len(strictErrs) > 0 {
		switch mode {
		case validationStrict:
			msgs := make([]string, len(strictErrs))
			for i, se := range strictErrs {
				msgs[i] = se.Error()
			}
			return apierrors.NewBadRequest("strict decoding error: " + strings.Join(msgs, ", "))
		case validationWarn:
			for _, se := range strictErrs {
				addWarning(w, se.Error())
			}
		}
	}
	return nil
}

// typeMetaOf is the kind and apiVersion data named, read from obj where decoding it filled them in
// (every API object inlines its TypeMeta) rather than by parsing data again.
func typeMetaOf(obj any, data []byte) metav1.TypeMeta {
	if o, ok := obj.(interface{ GetObjectKind() schema.ObjectKind }); ok {
		if tm, ok := o.GetObjectKind().(*metav1.TypeMeta); ok {
			return *tm
		}
	}
	var tm metav1.TypeMeta
	_ = json.Unmarshal(data, &tm)
	return tm
}

// excerpt is the start of a body quoted in a parse error, as Kubernetes quotes it.
func excerpt(data []byte) string {
	const n = 30
	if len(data) <= n {
		return string(data)
	}
	return string(data[:n]) + " ..."
}

// addWarning sends an RFC 7234 warning header, the channel Kubernetes uses for non-fatal problems.
func addWarning(w http.ResponseWriter, text string) {
	w.Header().Add("Warning", "299 - "+strconv.Quote(text))
}

func parseDryRun(r *http.Request) (bool, error) {
	values := Query(r)["dryRun"]
	for _, v := range values {
		if v != metav1.DryRunAll {
			return false, apierrors.NewBadRequest(fmt.Sprintf("dryRun: Unsupported value: %q: supported values: \"All\"", v))
		}
	}
	return len(values) > 0, nil
}

func parseBool(r *http.Request, name string) (*bool, error) {
	v := Query(r).Get(name)
	if v == "" {
		return nil, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("%s: Invalid value: %q: must be a boolean", name, v))
	}
	return &b, nil
}

func parseInt(r *http.Request, name string) (int64, error) {
	v := Query(r).Get(name)
	if v == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return 0, apierrors.NewBadRequest(fmt.Sprintf("%s: Invalid value: %q: must be a non-negative integer", name, v))
	}
	return n, nil
}

// parseListOptions reads the list parameters; selectable tells the field-selector keys allowed.
func parseListOptions(r *http.Request, selectable func(string) bool) (generic.ListOptions, error) {
	q := Query(r)
	var o generic.ListOptions
	var err error
	if o.Labels, err = labels.Parse(q.Get("labelSelector")); err != nil {
		return o, apierrors.NewBadRequest(fmt.Sprintf("unable to parse requirement: %v", err))
	}
	if o.Fields, err = fields.ParseSelector(q.Get("fieldSelector")); err != nil {
		return o, apierrors.NewBadRequest(fmt.Sprintf("invalid field selector: %v", err))
	}
	for _, req := range o.Fields.Requirements() {
		if !selectable(req.Field) {
			return o, apierrors.NewBadRequest(fmt.Sprintf("field label not supported: %s", req.Field))
		}
	}
	if o.Limit, err = parseInt(r, "limit"); err != nil {
		return o, err
	}
	o.Continue = q.Get("continue")
	o.ResourceVersion = q.Get("resourceVersion")
	o.ResourceVersionMatch = metav1.ResourceVersionMatch(q.Get("resourceVersionMatch"))
	return o, nil
}

// parseDeleteOptions reads the optional DeleteOptions body of a delete: preconditions and dryRun.
func parseDeleteOptions(r *http.Request) (*metav1.DeleteOptions, error) {
	data, err := readBody(r)
	if err != nil {
		return nil, err
	}
	opts := &metav1.DeleteOptions{}
	if len(strings.TrimSpace(string(data))) == 0 {
		return opts, nil
	}
	if isProtobuf(bodyMediaType(r)) {
		if err := decodeProtobuf(data, opts, metav1.SchemeGroupVersion.WithKind("DeleteOptions")); err != nil {
			return nil, err
		}
	} else if err := sigsjson.UnmarshalCaseSensitivePreserveInts(data, opts); err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("the body of the request could not be decoded as DeleteOptions: %v", err))
	}
	for _, v := range opts.DryRun {
		if v != metav1.DryRunAll {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("dryRun: Unsupported value: %q: supported values: \"All\"", v))
		}
	}
	return opts, nil
}
