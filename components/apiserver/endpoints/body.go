package endpoints

import (
	"net/http"

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
	data, err := bodyJSON(r, gvk.Kind)
	if err != nil {
		return err
	}
	return decodeObject(w, data, mode, obj, gvk)
}
