package endpoints

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"unicode"

	restful "github.com/emicklei/go-restful/v3"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"

	"orch.io/orch/components/apiserver/registry/generic"
)

// applyPatchType is server-side apply's patch: an applied configuration, in YAML (JSON is YAML).
const applyPatchType = "application/apply-patch+yaml"

// fieldManagerMaxLength is Kubernetes' limit on a manager's name.
const fieldManagerMaxLength = 128

// withManager returns the request's context naming who writes: the fieldManager parameter, else
// the User-Agent's product ("kubectl" of "kubectl/v1.34.0 ..."), as Kubernetes records them in
// managedFields. options names the options kind of the request in its 422 answer. The context
// alone: only the store reads it, and a request with it would be a copy of the request.
func withManager(r *http.Request, options string) (context.Context, string, error) {
	manager := Query(r).Get("fieldManager")
	var errs field.ErrorList
	if len(manager) > fieldManagerMaxLength {
		errs = append(errs, field.TooLong(field.NewPath("fieldManager"), "", fieldManagerMaxLength))
	}
	for i, c := range manager {
		if !unicode.IsPrint(c) {
			errs = append(errs, field.Invalid(field.NewPath("fieldManager"), manager, fmt.Sprintf("invalid character %#U (at position %d)", c, i)))
		}
	}
	if len(errs) > 0 {
		return nil, "", apierrors.NewInvalid(schema.GroupKind{Group: metav1.GroupName, Kind: options}, "", errs)
	}
	if manager == "" {
		manager = userAgentProduct(r.UserAgent())
	}
	return generic.WithManager(r.Context(), manager), manager, nil
}

// userAgentProduct is Kubernetes' prefixFromUserAgent: what precedes the first "/", printable
// characters only, at most 128 of them.
func userAgentProduct(ua string) string {
	product, _, _ := strings.Cut(ua, "/")
	if printableASCII(product) && len(product) <= fieldManagerMaxLength {
		return product // what the loop below would copy, byte for byte
	}
	var b strings.Builder
	for _, c := range product {
		if !unicode.IsPrint(c) {
			continue
		}
		if b.Len() >= fieldManagerMaxLength {
			break
		}
		b.WriteRune(c)
	}
	return b.String()
}

// printableASCII tells whether s is only ASCII that unicode.IsPrint accepts (the space to '~').
func printableASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < ' ' || s[i] > '~' {
			return false
		}
	}
	return true
}

// applyPatch serves a server-side apply to store: the body is merged in as the fieldManager's
// applied configuration, creating the object when absent.
func (h *resourceHandlers) applyPatch(store *generic.Store, req *restful.Request, resp *restful.Response, dryRun bool, mode fieldValidation, force *bool) {
	r := req.Request
	manager := Query(r).Get("fieldManager")
	if manager == "" {
		fail(req, resp, apierrors.NewInvalid(schema.GroupKind{Group: metav1.GroupName, Kind: "PatchOptions"}, "",
			field.ErrorList{field.Required(field.NewPath("fieldManager"), "is required for apply patch")}))
		return
	}
	ctx, _, err := withManager(r, "PatchOptions")
	if err != nil {
		fail(req, resp, err)
		return
	}
	body, err := readBody(r)
	if err != nil {
		fail(req, resp, err)
		return
	}
	data, err := yaml.YAMLToJSON(body)
	if err != nil {
		fail(req, resp, apierrors.NewBadRequest(fmt.Sprintf("error decoding YAML: %v", err)))
		return
	}
	// The typed decode applies fieldValidation (unknown and duplicate fields) as any write does.
	if _, err := h.decode(req, resp, data, mode); err != nil {
		fail(req, resp, err)
		return
	}
	patch := &unstructured.Unstructured{}
	if err := patch.UnmarshalJSON(data); err != nil {
		fail(req, resp, apierrors.NewBadRequest(fmt.Sprintf("the apply patch is not an object: %v", err)))
		return
	}
	out, created, err := store.Apply(ctx, req.PathParameter("namespace"), req.PathParameter("name"), patch, manager, force != nil && *force, dryRun)
	h.respondWrite(req, resp, out, created, err)
}
