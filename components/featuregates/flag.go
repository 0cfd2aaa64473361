package featuregates

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// MapValue is a pflag.Value for `--feature-gates` that merges into *m: a gate named on the command line
// replaces the same gate from a configuration file, other gates of the file stay.
type MapValue struct {
	m *map[string]bool
}

// NewMapValue binds the flag to m.
func NewMapValue(m *map[string]bool) *MapValue { return &MapValue{m: m} }

// Set merges one occurrence of the option; a bad pair rejects the whole occurrence.
func (v *MapValue) Set(value string) error {
	parsed, err := Parse(value)
	if err != nil {
		return err
	}
	if *v.m == nil {
		*v.m = map[string]bool{}
	}
	maps.Copy(*v.m, parsed)
	return nil
}

// String renders the map sorted by name, in the form Set reads.
func (v *MapValue) String() string {
	if v.m == nil {
		return ""
	}
	pairs := make([]string, 0, len(*v.m))
	for _, name := range slices.Sorted(maps.Keys(*v.m)) {
		pairs = append(pairs, fmt.Sprintf("%s=%t", name, (*v.m)[name]))
	}
	return strings.Join(pairs, ",")
}

// Type names the value in help text.
func (v *MapValue) Type() string { return "mapStringBool" }
