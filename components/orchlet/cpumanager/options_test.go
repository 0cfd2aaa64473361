package cpumanager

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"orch.io/orch/components/orchlet/topologymanager"
)

// topologyOf is the machine as the manager is given it.
func topologyOf(mc *machine) *Topology {
	t := &Topology{}
	for _, id := range slices.Sorted(maps.Keys(mc.details)) {
		t.CPUs = append(t.CPUs, mc.details[id])
	}
	return t
}

var (
	alphaBeta = func(gate string) bool {
		return gate == "CPUManagerPolicyAlphaOptions" || gate == "CPUManagerPolicyBetaOptions"
	}
	// Four sockets on two NUMA nodes (the kubelet's fakeTopoMultiSocketDualSocketPerNumaHT's shape).
	topoFourSocketsTwoNUMA = layout(16, func(id int) CPUInfo { return CPUInfo{Core: id % 8, Socket: id % 8 / 2, NUMANode: id % 8 / 4} })
)

// The options are read and validated as the kubelet's NewStaticPolicyOptions and
// ValidateStaticPolicyOptions read them: known names, allowed by their gates, boolean values, no
// two that exclude each other, and align-by-socket only where sockets hold whole NUMA nodes and
// the topology manager's policy is not single-numa-node.
func TestPolicyOptionsValidated(t *testing.T) {
	beta := func(gate string) bool { return gate == "CPUManagerPolicyBetaOptions" }
	for _, tc := range []struct {
		policy, topologyPolicy string
		topo                   *machine
		options                map[string]string
		enabled                func(string) bool
		want                   string
	}{
		{PolicyStatic, "", nil, map[string]string{"no-such-option": "true"}, beta, `unknown CPU Manager Policy option: "no-such-option"`},
		{PolicyStatic, "", nil, map[string]string{"align-by-socket": "true"}, beta, `CPU Manager Policy Alpha-level Options not enabled, but option "align-by-socket" provided`},
		{PolicyStatic, "", nil, map[string]string{"distribute-cpus-across-cores": "true"}, beta, `CPU Manager Policy Alpha-level Options not enabled, but option "distribute-cpus-across-cores" provided`},
		{PolicyStatic, "", nil, map[string]string{"strict-cpu-reservation": "true"}, func(string) bool { return false }, `CPU Manager Policy Beta-level Options not enabled, but option "strict-cpu-reservation" provided`},
		{PolicyStatic, "", nil, map[string]string{"distribute-cpus-across-numa": "true"}, func(string) bool { return false }, `CPU Manager Policy Beta-level Options not enabled, but option "distribute-cpus-across-numa" provided`},
		{PolicyStatic, "", nil, map[string]string{"prefer-align-cpus-by-uncorecache": "true"}, func(string) bool { return false }, `CPU Manager Policy Beta-level Options not enabled, but option "prefer-align-cpus-by-uncorecache" provided`},
		{PolicyStatic, "", nil, map[string]string{"strict-cpu-reservation": "yes please"}, beta, `bad value for option "strict-cpu-reservation"`},
		{PolicyStatic, "", nil, map[string]string{"full-pcpus-only": "true", "distribute-cpus-across-cores": "true"}, alphaBeta, "static policy options full-pcpus-only and distribute-cpus-across-cores can not be used at the same time"},
		{PolicyStatic, "", nil, map[string]string{"distribute-cpus-across-numa": "true", "distribute-cpus-across-cores": "true"}, alphaBeta, "static policy options distribute-cpus-across-numa and distribute-cpus-across-cores can not be used at the same time"},
		{PolicyStatic, "", nil, map[string]string{"prefer-align-cpus-by-uncorecache": "true", "distribute-cpus-across-cores": "true"}, alphaBeta, "static policy options prefer-align-cpus-by-uncorecache and distribute-cpus-across-cores can not be used at the same time"},
		{PolicyStatic, "", nil, map[string]string{"prefer-align-cpus-by-uncorecache": "true", "distribute-cpus-across-numa": "true"}, alphaBeta, "static policy options prefer-align-cpus-by-uncorecache and distribute-cpus-across-numa can not be used at the same time"},
		{PolicyStatic, "single-numa-node", topoDualSocketMultiNumaPerSocketHT, map[string]string{"align-by-socket": "true"}, alphaBeta, "Topology manager single-numa-node policy is incompatible with CPUManager align-by-socket policy option"},
		{PolicyStatic, "", topoFourSocketsTwoNUMA, map[string]string{"align-by-socket": "true"}, alphaBeta, "Align by socket is not compatible with hardware where number of sockets are more than number of NUMA (4 sockets, 2 NUMA nodes)"},
		{PolicyNone, "", nil, map[string]string{"full-pcpus-only": "true"}, beta, `None policy: received unsupported options=map[full-pcpus-only:true]`},
	} {
		_, err := newManager(t, t.TempDir(), activePods{}, func(o *Options) {
			o.Policy, o.PolicyOptions, o.Enabled, o.TopologyPolicy = tc.policy, tc.options, tc.enabled, tc.topologyPolicy
			if tc.topo != nil {
				o.Topology = topologyOf(tc.topo)
			}
		})
		if err == nil || !strings.Contains(err.Error(), "--cpu-manager-policy-options (cpuManagerPolicyOptions): "+tc.want) {
			t.Errorf("%v: %v, want %q", tc.options, err, tc.want)
		}
	}
	// Options set false ask for nothing, so none excludes another; align-by-socket suits the
	// other topology policies.
	for _, tc := range []struct {
		topologyPolicy string
		options        map[string]string
	}{
		{"", map[string]string{"full-pcpus-only": "false", "distribute-cpus-across-cores": "true"}},
		{"", map[string]string{"prefer-align-cpus-by-uncorecache": "true", "distribute-cpus-across-numa": "false"}},
		{"restricted", map[string]string{"align-by-socket": "true", "full-pcpus-only": "true", "distribute-cpus-across-numa": "true"}},
		{"best-effort", map[string]string{"align-by-socket": "true"}},
	} {
		if _, err := newManager(t, t.TempDir(), activePods{}, func(o *Options) {
			o.PolicyOptions, o.Enabled, o.TopologyPolicy, o.Topology = tc.options, alphaBeta, tc.topologyPolicy, topologyOf(topoDualSocketMultiNumaPerSocketHT)
		}); err != nil {
			t.Errorf("%s %v: %v", tc.topologyPolicy, tc.options, err)
		}
	}
}

// optionsManager is a static manager of the topology with the options set true and CPU 79 (or
// the last) reserved, its shared pool set to free.
func optionsManager(t *testing.T, topo *machine, free string, options ...string) *Manager {
	t.Helper()
	opts := map[string]string{}
	for _, o := range options {
		opts[o] = "true"
	}
	m, err := newManager(t, t.TempDir(), activePods{}, func(o *Options) {
		o.Topology, o.PolicyOptions, o.Enabled = topologyOf(topo), opts, alphaBeta
		o.ReservedCPUs = itoa(topo.numCPUs - 1)
	})
	if err != nil {
		t.Fatal(err)
	}
	m.state.defaultSet = parse(t, free)
	return m
}

// align-by-socket, the kubelet's cases (topology_hints_test.go, policy_static_test.go): the hints
// whose NUMA nodes span as few sockets as the request needs are preferred too, and the CPUs of
// the hint's sockets, not only of its nodes, are taken first.
func TestAlignBySocket(t *testing.T) {
	for _, tc := range []struct {
		name      string
		free      string
		request   int
		bySocket  bool
		preferred []topologymanager.Mask
		hints     int
	}{
		{"AlignBySocket:false, Preferred hints does not contains socket aligned hints", "2-3,11", 2, false, []topologymanager.Mask{topologymanager.MaskOf(0)}, 8},
		{"AlignBySocket:true Preferred hints contains socket aligned hints", "2-3,11", 2, true, []topologymanager.Mask{topologymanager.MaskOf(0), topologymanager.MaskOf(0, 1)}, 8},
		{"AlignBySocket:true Preferred hints are spread across socket since 2 sockets are required", "0-28,40-57", 41, true, []topologymanager.Mask{topologymanager.MaskOf(0, 1, 2), topologymanager.MaskOf(0, 1, 2, 3)}, 2},
	} {
		var options []string
		if tc.bySocket {
			options = append(options, "align-by-socket")
		}
		m := optionsManager(t, topoDualSocketMultiNumaPerSocketHT, tc.free, options...)
		hints := m.hintsLocked(pod("p", itoa(tc.request), "1Gi", "c"), nil, tc.request)
		var preferred []topologymanager.Mask
		for _, h := range hints {
			if h.Preferred {
				preferred = append(preferred, h.Affinity)
			}
		}
		if len(hints) != tc.hints || !slices.Equal(preferred, tc.preferred) {
			t.Errorf("%s: hints %v, want %d with %v preferred", tc.name, hints, tc.hints, tc.preferred)
		}
	}
	for _, tc := range []struct {
		bySocket bool
		want     string
	}{
		{true, "2,11"},  // "Align by socket: true, cpu's within same socket of numa in hint are part of allocation"
		{false, "2,21"}, // "Align by socket: false, cpu's are taken strictly from NUMA nodes in hint"
	} {
		var options []string
		if tc.bySocket {
			options = append(options, "align-by-socket")
		}
		m := optionsManager(t, topoDualSocketMultiNumaPerSocketHT, "2,11,21-22", options...)
		p := pod("p", "2", "1Gi", "c")
		got, err := m.allocateLocked(p, &p.Spec.Containers[0], 2, topologymanager.MaskOf(0, 2))
		if err != nil || got.String() != tc.want {
			t.Errorf("align-by-socket=%v: %s, %v; want %s", tc.bySocket, got, err, tc.want)
		}
	}
}

// Each allocation option reaches the container's cpuset through the manager. On the kubelet's
// two-socket, four-node machine with CPU 79 reserved, 24 CPUs are packed into node 2 whole and two
// cores of node 3 (the socket with fewer free CPUs), or spread 12 and 12 over nodes 0 and 2 with
// distribute-cpus-across-numa (the pair leaving the nodes' free CPUs most even); 3 CPUs are a
// whole core and the lone thread beside the reserved one, or three cores' first threads with
// distribute-cpus-across-cores. On a socket of four uncore caches of four CPUs, CPUs 0-1 taken
// and 15 reserved, 4 CPUs are the lowest whole cores (two caches), or with
// prefer-align-cpus-by-uncorecache the whole free cache 4-7.
func TestAllocationOptions(t *testing.T) {
	for _, tc := range []struct {
		topo    *machine
		free    string
		options []string
		cpus    string
		want    string
	}{
		{topoDualSocketMultiNumaPerSocketHT, "0-79", nil, "24", "20-31,60-71"},
		{topoDualSocketMultiNumaPerSocketHT, "0-79", []string{"distribute-cpus-across-numa"}, "24", "0-5,20-25,40-45,60-65"},
		{topoDualSocketMultiNumaPerSocketHT, "0-79", nil, "3", "30,39,70"},
		{topoDualSocketMultiNumaPerSocketHT, "0-79", []string{"distribute-cpus-across-cores"}, "3", "20-22"},
		{topoUncoreSingleSocketNoSMT, "2-15", nil, "4", "2-5"},
		{topoUncoreSingleSocketNoSMT, "2-15", []string{"prefer-align-cpus-by-uncorecache"}, "4", "4-7"},
	} {
		m := optionsManager(t, tc.topo, tc.free, tc.options...)
		p := pod("p", tc.cpus, "1Gi", "c")
		got, err := m.CPUSet(p, &p.Spec.Containers[0])
		if err != nil || got != tc.want {
			t.Errorf("%v, %s CPUs: %s, %v; want %s", tc.options, tc.cpus, got, err, tc.want)
		}
	}
}
