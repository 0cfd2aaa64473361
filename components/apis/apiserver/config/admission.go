package config

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"

	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"

	apiv1 "orch.io/orch/components/apis/apiserver/v1"
)

// Admission is a checked AdmissionConfiguration.
type Admission struct {
	File   string
	Config *apiv1.AdmissionConfiguration
}

// LoadAdmission reads and validates an AdmissionConfiguration file.
func LoadAdmission(path string) (*Admission, error) { return loadFile(path, ParseAdmission) }

// ParseAdmission is LoadAdmission for bytes already read; name is used in errors and its directory
// anchors relative plugin paths.
func ParseAdmission(name string, data []byte) (*Admission, error) {
	cfg, err := parseKind(name, data, apiv1.KindAdmissionConfiguration, func(cfg *apiv1.AdmissionConfiguration) field.ErrorList {
		return validateAdmission(cfg, filepath.Dir(name))
	})
	if err != nil {
		return nil, err
	}
	return &Admission{File: name, Config: cfg}, nil
}

// PluginConfig returns the configuration of the named plugin: its inline configuration when
// present, which wins over path, otherwise the content of path; nil when the plugin has neither.
func (a *Admission) PluginConfig(name string) ([]byte, error) {
	for _, p := range a.Config.Plugins {
		if p.Name != name {
			continue
		}
		if p.Configuration != nil {
			return p.Configuration.Raw, nil
		}
		if p.Path == "" {
			return nil, nil
		}
		return os.ReadFile(resolve(filepath.Dir(a.File), p.Path))
	}
	return nil, nil
}

// CheckRegistered refuses plugin names that are not among the registered admission plugins.
func (a *Admission) CheckRegistered(registered []string) error {
	known := sets.New(registered...)
	var errs field.ErrorList
	for i, p := range a.Config.Plugins {
		if !known.Has(p.Name) {
			errs = append(errs, field.NotSupported(field.NewPath("plugins").Index(i).Child("name"), p.Name, sets.List(known)))
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return fileError(a.File, nil, errs)
}

func resolve(baseDir, path string) string {
	if filepath.IsAbs(path) {
		return path
	}
	return filepath.Join(baseDir, path)
}

func validateAdmission(c *apiv1.AdmissionConfiguration, baseDir string) field.ErrorList {
	var errs field.ErrorList
	seen := sets.New[string]()
	for i, p := range c.Plugins {
		pp := field.NewPath("plugins").Index(i)
		switch {
		case p.Name == "":
			errs = append(errs, field.Required(pp.Child("name"), "the admission plugin name is required"))
		case seen.Has(p.Name):
			errs = append(errs, field.Duplicate(pp.Child("name"), p.Name))
		}
		seen.Insert(p.Name)
		switch {
		case p.Configuration != nil:
			// The inline configuration wins, so path is not read and need not exist.
			if raw := bytes.TrimSpace(p.Configuration.Raw); len(raw) == 0 || raw[0] != '{' {
				errs = append(errs, field.Invalid(pp.Child("configuration"), field.OmitValueType{}, "must be an object"))
			}
		case p.Path != "":
			if info, err := os.Stat(resolve(baseDir, p.Path)); err != nil {
				errs = append(errs, field.Invalid(pp.Child("path"), p.Path, fmt.Sprintf("error loading file: %v", statReason(err))))
			} else if !info.Mode().IsRegular() {
				errs = append(errs, field.Invalid(pp.Child("path"), p.Path, "must be a regular file"))
			}
		}
	}
	return errs
}
