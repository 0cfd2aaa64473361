package config

import (
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/json"

	apiv1 "orch.io/orch/components/apis/apiserver/v1"
)

// readProblem wraps a failure to read a file.
func readProblem(path string, err error) *FileError {
	return &FileError{File: path, Problems: []Problem{{Detail: oneLine(err.Error())}}}
}

// loadFile reads the file at path and parses it with parse, the kind's Parse function; a file that
// cannot be read is a FileError too.
func loadFile[T any](path string, parse func(name string, data []byte) (T, error)) (T, error) {
	data, err := readFile(path)
	if err != nil {
		var none T
		return none, readProblem(path, err)
	}
	return parse(path, data)
}

// parseKind decodes data, which must hold kind, into a new C and checks it with check (which
// defaults it first where the kind has defaults); check's errors name the file's lines.
func parseKind[C any](name string, data []byte, kind string, check func(*C) field.ErrorList) (*C, error) {
	cfg := new(C)
	doc, ferr := decode(name, data, kind, cfg)
	if ferr != nil {
		return nil, ferr
	}
	if errs := check(cfg); len(errs) > 0 {
		return nil, fileError(name, doc, errs)
	}
	return cfg, nil
}

// decode parses data as YAML or JSON, checks that it holds the wanted kind of this group, and
// decodes it strictly into obj.
func decode(name string, data []byte, kind string, obj any) (*document, *FileError) {
	doc, probs := parse(data)
	if doc == nil {
		return nil, &FileError{File: name, Problems: probs}
	}
	tm, tprobs := typeMeta(doc)
	if len(tprobs) == 0 {
		tprobs = fileError(name, doc, checkTypeMeta(tm, kind)).Problems
	}
	if len(tprobs) > 0 {
		return nil, &FileError{File: name, Problems: append(probs, tprobs...)}
	}
	probs = append(probs, decodeStrict(doc, obj)...)
	if len(probs) > 0 {
		return nil, &FileError{File: name, Problems: probs}
	}
	return doc, nil
}

// typeMeta reads apiVersion and kind, whatever else the document holds.
func typeMeta(doc *document) (metav1.TypeMeta, []Problem) {
	var tm metav1.TypeMeta
	if err := json.UnmarshalCaseSensitivePreserveInts(doc.json, &tm); err != nil {
		p := decodeProblem(doc, err)
		if p.Field == "" {
			p.Detail = "Invalid value: the file must hold one object with apiVersion and kind"
		}
		return tm, []Problem{p}
	}
	return tm, nil
}

// checkTypeMeta requires this group-version and the wanted kind; an empty wanted kind accepts any
// of the five.
func checkTypeMeta(tm metav1.TypeMeta, kind string) field.ErrorList {
	var errs field.ErrorList
	gv := apiv1.SchemeGroupVersion.String()
	switch tm.APIVersion {
	case "":
		errs = append(errs, field.Required(field.NewPath("apiVersion"), "must be "+gv))
	case gv:
	default:
		errs = append(errs, field.NotSupported(field.NewPath("apiVersion"), tm.APIVersion, []string{gv}))
	}
	kinds := []string{kind}
	if kind == "" {
		kinds = allKinds
	}
	switch {
	case tm.Kind == "":
		errs = append(errs, field.Required(field.NewPath("kind"), `must be one of "`+strings.Join(kinds, `", "`)+`"`))
	case !slices.Contains(kinds, tm.Kind):
		errs = append(errs, field.NotSupported(field.NewPath("kind"), tm.Kind, kinds))
	}
	return errs
}

var allKinds = []string{
	apiv1.KindAdmissionConfiguration,
	apiv1.KindAuthenticationConfiguration,
	apiv1.KindAuthorizationConfiguration,
	apiv1.KindEncryptionConfiguration,
	apiv1.KindTracingConfiguration,
}
