package cpumanager

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
)

// The static policy's options of --cpu-manager-policy-options, by the feature gate that allows
// them ("" for a stable one), as the kubelet v1.34 knows them.
var policyOptions = map[string]string{
	"full-pcpus-only":                  "",
	"strict-cpu-reservation":           "CPUManagerPolicyBetaOptions",
	"distribute-cpus-across-numa":      "CPUManagerPolicyBetaOptions",
	"prefer-align-cpus-by-uncorecache": "CPUManagerPolicyBetaOptions",
	"align-by-socket":                  "CPUManagerPolicyAlphaOptions",
	"distribute-cpus-across-cores":     "CPUManagerPolicyAlphaOptions",
}

// builtOptions are those this manager acts on; the others are refused by name when true.
var builtOptions = []string{"full-pcpus-only", "strict-cpu-reservation"}

// policyOptionsOf reads --cpu-manager-policy-options as the kubelet's NewStaticPolicyOptions: a
// known option, allowed by its gate, with a boolean value; it answers the options set true.
func policyOptionsOf(options map[string]string, enabled func(gate string) bool) (map[string]bool, error) {
	out := map[string]bool{}
	for _, name := range slices.Sorted(maps.Keys(options)) {
		gate, known := policyOptions[name]
		switch {
		case !known:
			return nil, fmt.Errorf("unknown CPU Manager Policy option: %q", name)
		case gate == "CPUManagerPolicyAlphaOptions" && !enabled(gate):
			return nil, fmt.Errorf("CPU Manager Policy Alpha-level Options not enabled, but option %q provided", name)
		case gate == "CPUManagerPolicyBetaOptions" && !enabled(gate):
			return nil, fmt.Errorf("CPU Manager Policy Beta-level Options not enabled, but option %q provided", name)
		}
		v, err := strconv.ParseBool(options[name])
		if err != nil {
			return nil, fmt.Errorf("bad value for option %q: %w", name, err)
		}
		if !v {
			continue
		}
		if !slices.Contains(builtOptions, name) {
			return nil, fmt.Errorf("option %q is not supported by this orchlet (only %v are)", name, builtOptions)
		}
		out[name] = true
	}
	return out, nil
}
