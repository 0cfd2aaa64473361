package cpumanager

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
)

// The static policy's options of --cpu-manager-policy-options.
const (
	optFullPCPUsOnly            = "full-pcpus-only"
	optDistributeAcrossNUMA     = "distribute-cpus-across-numa"
	optAlignBySocket            = "align-by-socket"
	optDistributeAcrossCores    = "distribute-cpus-across-cores"
	optStrictCPUReservation     = "strict-cpu-reservation"
	optPreferAlignByUncoreCache = "prefer-align-cpus-by-uncorecache"
)

// policyOptions are the options by the feature gate that allows them ("" for a stable one), as
// the kubelet v1.34 knows them.
var policyOptions = map[string]string{
	optFullPCPUsOnly:            "",
	optStrictCPUReservation:     "CPUManagerPolicyBetaOptions",
	optDistributeAcrossNUMA:     "CPUManagerPolicyBetaOptions",
	optPreferAlignByUncoreCache: "CPUManagerPolicyBetaOptions",
	optAlignBySocket:            "CPUManagerPolicyAlphaOptions",
	optDistributeAcrossCores:    "CPUManagerPolicyAlphaOptions",
}

// exclusive are the pairs of options the kubelet refuses together, in the order it checks them.
var exclusive = [][2]string{
	{optFullPCPUsOnly, optDistributeAcrossCores},
	{optDistributeAcrossNUMA, optDistributeAcrossCores},
	{optPreferAlignByUncoreCache, optDistributeAcrossCores},
	{optPreferAlignByUncoreCache, optDistributeAcrossNUMA},
}

// policyOptionsOf reads --cpu-manager-policy-options as the kubelet's NewStaticPolicyOptions: a
// known option, allowed by its gate, with a boolean value, and no two that exclude each other; it
// answers the options set true.
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
		if v {
			out[name] = true
		}
	}
	for _, pair := range exclusive {
		if out[pair[0]] && out[pair[1]] {
			return nil, fmt.Errorf("static policy options %s and %s can not be used at the same time", pair[0], pair[1])
		}
	}
	return out, nil
}

// CheckPolicyOptions refuses what the kubelet refuses of --cpu-manager-policy-options whatever the
// machine: options under the none policy, and any policyOptionsOf refuses; a configuration is
// checked with it before the manager starts.
func CheckPolicyOptions(policy string, options map[string]string, enabled func(gate string) bool) error {
	if policy != PolicyStatic {
		if len(options) > 0 {
			//lint:ignore ST1005 the kubelet's message, word for word
			return fmt.Errorf("None policy: received unsupported options=%v", options)
		}
		return nil
	}
	_, err := policyOptionsOf(options, enabled)
	return err
}
