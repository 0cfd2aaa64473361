package core

import (
	"path"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// defaultTokenProjections gives serviceAccountToken projections Kubernetes' default lifetime, an hour.
func defaultTokenProjections(spec *corev1.PodSpec) {
	for _, v := range spec.Volumes {
		if v.Projected == nil {
			continue
		}
		for _, s := range v.Projected.Sources {
			if t := s.ServiceAccountToken; t != nil && t.ExpirationSeconds == nil {
				hour := int64(3600)
				t.ExpirationSeconds = &hour
			}
		}
	}
}

// validateTokenProjections is Kubernetes' validation of serviceAccountToken projections: at least
// ten minutes and at most 2^32 seconds, a relative path without "..".
func validateTokenProjections(spec *corev1.PodSpec, at *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, v := range spec.Volumes {
		if v.Projected == nil {
			continue
		}
		for j, s := range v.Projected.Sources {
			t := s.ServiceAccountToken
			if t == nil {
				continue
			}
			p := at.Child("volumes").Index(i).Child("projected", "sources").Index(j).Child("serviceAccountToken")
			if e := t.ExpirationSeconds; e != nil && *e < 10*60 {
				errs = append(errs, field.Invalid(p.Child("expirationSeconds"), *e, "may not specify a duration less than 10 minutes"))
			} else if e != nil && *e > 1<<32 {
				errs = append(errs, field.Invalid(p.Child("expirationSeconds"), *e, "may not specify a duration larger than 2^32 seconds"))
			}
			switch {
			case t.Path == "":
				errs = append(errs, field.Required(p.Child("path"), ""))
			case path.IsAbs(t.Path):
				errs = append(errs, field.Invalid(p.Child("path"), t.Path, "must be a relative path"))
			case strings.HasPrefix(t.Path, ".."):
				errs = append(errs, field.Invalid(p.Child("path"), t.Path, "must not start with '..'"))
			case strings.Contains("/"+t.Path+"/", "/../"):
				errs = append(errs, field.Invalid(p.Child("path"), t.Path, "must not contain '..'"))
			}
		}
	}
	return errs
}
