package endpoints

import (
	"net/http"

	restful "github.com/emicklei/go-restful/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// DecodeCreate reads the body of a create that no store keeps (a review) into obj as the
// resource handlers read theirs: JSON or YAML, case-sensitively, refusing another kind or
// version, with the dryRun and fieldValidation parameters checked. Errors are Status errors.
func DecodeCreate(w http.ResponseWriter, r *http.Request, obj any, gvk schema.GroupVersionKind) error {
	if _, err := parseDryRun(r); err != nil {
		return err
	}
	mode, err := parseFieldValidation(r)
	if err != nil {
		return err
	}
	if isProtobuf(bodyMediaType(r)) {
		if m, ok := obj.(protobufMessage); ok {
			data, err := readBody(r)
			if err != nil {
				return err
			}
			return decodeEnvelope(data, m, gvk)
		}
	}
	data, err := bodyJSON(r, gvk.Kind)
	if err != nil {
		return err
	}
	return decodeObject(w, data, mode, obj, gvk)
}

// BodyHandler is the route of a subresource that takes a body of kind gvk (pods/binding,
// namespaces/finalize): the body read by DecodeBody into a new T, then do's answer written with
// its status code, or its error as a Status.
func BodyHandler[T any, P interface {
	*T
	runtime.Object
}](gvk schema.GroupVersionKind, do func(req *restful.Request, body P) (code int, out any, err error)) restful.RouteFunction {
	return func(req *restful.Request, resp *restful.Response) {
		body := P(new(T))
		if err := DecodeBody(req.Request, body, gvk); err != nil {
			WriteError(resp.ResponseWriter, req.Request, err)
			return
		}
		code, out, err := do(req, body)
		if err != nil {
			WriteError(resp.ResponseWriter, req.Request, err)
			return
		}
		WriteObject(resp.ResponseWriter, req.Request, code, out)
	}
}

// CreateHandler is the route of a create whose answer is an object of kind gvk the server does not
// store (tokenreviews, subjectaccessreviews, serviceaccounts/token): the body read by DecodeCreate
// into a new T, then do's answer, stamped with gvk, written with 201 Created, or do's error as a
// Status. w is for do's warnings.
func CreateHandler[T any, P interface {
	*T
	runtime.Object
}](gvk schema.GroupVersionKind, do func(req *restful.Request, w http.ResponseWriter, body P) (P, error)) restful.RouteFunction {
	return func(req *restful.Request, resp *restful.Response) {
		body := P(new(T))
		if err := DecodeCreate(resp.ResponseWriter, req.Request, body, gvk); err != nil {
			WriteError(resp.ResponseWriter, req.Request, err)
			return
		}
		out, err := do(req, resp.ResponseWriter, body)
		if err != nil {
			WriteError(resp.ResponseWriter, req.Request, err)
			return
		}
		out.GetObjectKind().SetGroupVersionKind(gvk)
		WriteObject(resp.ResponseWriter, req.Request, http.StatusCreated, out)
	}
}

// Created is the answer of a subresource's create that returns no object: 201 and a Success
// Status.
func Created() (int, any, error) {
	return http.StatusCreated, &metav1.Status{
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusSuccess, Code: http.StatusCreated,
	}, nil
}
