package featuregates

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// Stage is a gate's maturity as SPEC.md states it.
type Stage string

// The stages SPEC.md lists.
const (
	Alpha Stage = "ALPHA"
	Beta  Stage = "BETA"
)

// Spec is one gate's stage and its value when nobody sets it.
type Spec struct {
	Stage   Stage
	Default bool
}

// Gates the node agent reads itself, and the two that switch whole stages.
const (
	AllAlpha                           = "AllAlpha"
	AllBeta                            = "AllBeta"
	ContextualLogging                  = "ContextualLogging"
	ImageMaximumGCAge                  = "ImageMaximumGCAge"
	ImageVolume                        = "ImageVolume"
	LoggingAlphaOptions                = "LoggingAlphaOptions"
	LoggingBetaOptions                 = "LoggingBetaOptions"
	OrchletSeparateDiskGC              = "OrchletSeparateDiskGC"
	PodReadyToStartContainersCondition = "PodReadyToStartContainersCondition"
	QOSReserved                        = "QOSReserved"
	RotateOrchletServerCertificate     = "RotateOrchletServerCertificate"
)

// Known returns every gate with its spec; the map is a copy the caller may keep.
func Known() map[string]Spec { return maps.Clone(known) }

// Gates answers which gates are on, given the values set explicitly.
// The zero value is not usable; call New.
type Gates struct {
	explicit map[string]bool
}

// New returns gates at their defaults after applying set (which may be nil); every name and value in
// set is checked and each bad one is reported.
func New(set map[string]bool) (*Gates, error) {
	if err := Validate(set); err != nil {
		return nil, err
	}
	return &Gates{explicit: maps.Clone(set)}, nil
}

// Validate reports every name in set that is not a known gate.
func Validate(set map[string]bool) error {
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(set)) {
		if _, ok := known[name]; !ok {
			errs = append(errs, fmt.Errorf("unrecognized feature gate %q", name))
		}
	}
	return errors.Join(errs...)
}

// Enabled reports whether the named gate is on. An explicit value wins; otherwise AllAlpha or AllBeta,
// when set, decides for gates of its stage; otherwise the default. Unknown names are off.
func (g *Gates) Enabled(name string) bool {
	spec, ok := known[name]
	if !ok {
		return false
	}
	if v, ok := g.explicit[name]; ok {
		return v
	}
	switch spec.Stage {
	case Alpha:
		if v, ok := g.explicit[AllAlpha]; ok {
			return v
		}
	case Beta:
		if v, ok := g.explicit[AllBeta]; ok {
			return v
		}
	}
	return spec.Default
}

// Effective returns the value of every known gate.
func (g *Gates) Effective() map[string]bool {
	out := make(map[string]bool, len(known))
	for name := range known {
		out[name] = g.Enabled(name)
	}
	return out
}

// Parse reads the `--feature-gates` form: comma-separated Name=true|false pairs. Every bad pair is
// reported.
func Parse(value string) (map[string]bool, error) {
	out := map[string]bool{}
	var errs []error
	for _, pair := range strings.Split(value, ",") {
		pair = strings.TrimSpace(pair)
		if pair == "" {
			continue
		}
		name, raw, found := strings.Cut(pair, "=")
		name = strings.TrimSpace(name)
		if !found {
			errs = append(errs, fmt.Errorf("missing bool value for %q: want Name=true|false", name))
			continue
		}
		if _, ok := known[name]; !ok {
			errs = append(errs, fmt.Errorf("unrecognized feature gate %q", name))
			continue
		}
		v, err := strconv.ParseBool(strings.TrimSpace(raw))
		if err != nil {
			errs = append(errs, fmt.Errorf("invalid value %q for feature gate %q: want true or false", raw, name))
			continue
		}
		out[name] = v
	}
	return out, errors.Join(errs...)
}

// Usage lists every gate as `Name=true|false (STAGE - default=D)`, sorted by name, for help text.
func Usage() []string {
	out := make([]string, 0, len(known))
	for _, name := range slices.Sorted(maps.Keys(known)) {
		spec := known[name]
		out = append(out, fmt.Sprintf("%s=true|false (%s - default=%t)", name, spec.Stage, spec.Default))
	}
	return out
}
