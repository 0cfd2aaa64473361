package v1beta1

import (
	"errors"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// DecodeInto decodes a YAML or JSON configuration document over cfg: fields the document sets replace
// cfg's, maps merge key by key, lists are replaced, everything else stays. The document must declare
// this kind and group-version; unknown, duplicate or wrongly-cased fields are errors, each reported.
func DecodeInto(data []byte, cfg *OrchletConfiguration) error {
	js, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		return err
	}
	var tm metav1.TypeMeta
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(js, &tm); err != nil {
		return err
	}
	var errs []error
	if tm.Kind != Kind {
		errs = append(errs, fmt.Errorf("kind: must be %q, got %q", Kind, tm.Kind))
	}
	if tm.APIVersion != SchemeGroupVersion.String() {
		errs = append(errs, fmt.Errorf("apiVersion: must be %q, got %q", SchemeGroupVersion.String(), tm.APIVersion))
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	strict, err := sigsjson.UnmarshalStrict(js, cfg, sigsjson.DisallowDuplicateFields, sigsjson.DisallowUnknownFields)
	if err != nil {
		return err
	}
	return errors.Join(strict...)
}
