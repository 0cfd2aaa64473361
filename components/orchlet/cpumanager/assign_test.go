package cpumanager

import (
	"testing"

	"k8s.io/utils/cpuset"
)

// layout is a machine of n CPUs placed by place, as the kubelet's test topologies list them.
func layout(n int, place func(id int) CPUInfo) *machine {
	t := &Topology{}
	for id := range n {
		c := place(id)
		c.ID = id
		t.CPUs = append(t.CPUs, c)
	}
	return newMachine(t)
}

// The kubelet's test topologies (cpumanager/policy_test.go), by the same names.
var (
	topoSingleSocketHT = layout(8, func(id int) CPUInfo { return CPUInfo{Core: id % 4} })
	topoDualSocketHT   = layout(12, func(id int) CPUInfo { return CPUInfo{Core: id % 6, Socket: id % 2, NUMANode: id % 2} })
	topoDualSocketNoHT = layout(8, func(id int) CPUInfo { return CPUInfo{Core: id, Socket: id / 4, NUMANode: id / 4} })
	// 2 sockets, 4 NUMA nodes of 10 cores of 2 threads: CPU i and i+40 share core i%40.
	topoDualSocketMultiNumaPerSocketHT = layout(80, func(id int) CPUInfo {
		return CPUInfo{Core: id % 40, Socket: id % 40 / 20, NUMANode: id % 40 / 10}
	})
	// 2 sockets, 8 NUMA nodes of 16 cores of 2 threads: CPU i and i+128 share core i%128.
	topoDualSocketMultiNumaPerSocketHTLarge = layout(256, func(id int) CPUInfo {
		return CPUInfo{Core: id % 128, Socket: id % 128 / 64, NUMANode: id % 128 / 16}
	})
	topoUncoreDualSocketNoSMT = layout(16, func(id int) CPUInfo {
		return CPUInfo{Core: id, Socket: id / 8, UncoreCache: id / 4}
	})
	topoUncoreSingleSocketMultiNuma = layout(16, func(id int) CPUInfo {
		return CPUInfo{Core: id, NUMANode: id / 8, UncoreCache: id / 4}
	})
	topoUncoreSingleSocketSMT = layout(16, func(id int) CPUInfo {
		return CPUInfo{Core: id % 8, UncoreCache: id % 8 / 4}
	})
	topoUncoreSingleSocketNoSMT = layout(16, func(id int) CPUInfo {
		return CPUInfo{Core: id, UncoreCache: id / 4}
	})
)

func parse(t *testing.T, s string) cpuset.CPUSet {
	t.Helper()
	set, err := cpuset.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return set
}

type takeCase struct {
	name      string
	topo      *machine
	available string
	n         int
	want      string
	err       string
}

// commonTakeCases are the kubelet's commonTakeByTopologyTestCases.
var commonTakeCases = []takeCase{
	{"take more cpus than are available from single socket with HT", topoSingleSocketHT, "0,2,4,6", 5, "", "not enough cpus available to satisfy request: requested=5, available=4"},
	{"take zero cpus from single socket with HT", topoSingleSocketHT, "0-7", 0, "", ""},
	{"take one cpu from single socket with HT", topoSingleSocketHT, "0-7", 1, "0", ""},
	{"take one cpu from single socket with HT, some cpus are taken", topoSingleSocketHT, "1,3,5-7", 1, "6", ""},
	{"take two cpus from single socket with HT", topoSingleSocketHT, "0-7", 2, "0,4", ""},
	{"take all cpus from single socket with HT", topoSingleSocketHT, "0-7", 8, "0-7", ""},
	{"take two cpus from single socket with HT, only one core totally free", topoSingleSocketHT, "0-3,6", 2, "2,6", ""},
	{"take a socket of cpus from dual socket with HT", topoDualSocketHT, "0-11", 6, "0,2,4,6,8,10", ""},
	{"take a socket of cpus from dual socket with multi-numa-per-socket with HT", topoDualSocketMultiNumaPerSocketHT, "0-79", 40, "0-19,40-59", ""},
	{"take a NUMA node of cpus from dual socket with multi-numa-per-socket with HT", topoDualSocketMultiNumaPerSocketHT, "0-79", 20, "0-9,40-49", ""},
	{"take a NUMA node of cpus from dual socket with multi-numa-per-socket with HT, with 1 NUMA node already taken", topoDualSocketMultiNumaPerSocketHT, "10-39,50-79", 20, "10-19,50-59", ""},
	{"take a socket and a NUMA node of cpus from dual socket with multi-numa-per-socket with HT", topoDualSocketMultiNumaPerSocketHT, "0-79", 60, "0-29,40-69", ""},
	{"take a socket and a NUMA node of cpus from dual socket with multi-numa-per-socket with HT, a core taken", topoDualSocketMultiNumaPerSocketHT, "1-39,41-79", 60, "10-39,50-79", ""},
}

func checkTake(t *testing.T, tc takeCase, got cpuset.CPUSet, err error) {
	t.Helper()
	if tc.err != "" {
		if err == nil || err.Error() != tc.err {
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.err)
		}
		return
	}
	if err != nil || !got.Equals(parse(t, tc.want)) {
		t.Errorf("%s: %s, %v; want %s", tc.name, got, err, tc.want)
	}
}

// TestTakePacked: the kubelet's TestTakeByTopologyNUMAPacked, prefer-align-cpus-by-uncorecache's
// cases among them.
func TestTakePacked(t *testing.T) {
	cases := append([]takeCase{}, commonTakeCases...)
	cases = append(cases, []takeCase{
		{"take one cpu from dual socket with HT - core from Socket 0", topoDualSocketHT, "1-5,7-11", 1, "2", ""},
		{"allocate 4 full cores with 3 coming from the first NUMA node (filling it up) and 1 coming from the second NUMA node", topoDualSocketHT, "0-11", 8, "0-2,4,6-8,10", ""},
		{"allocate 32 full cores with 30 coming from the first 3 NUMA nodes (filling them up) and 2 coming from the fourth NUMA node", topoDualSocketMultiNumaPerSocketHT, "0-79", 64, "0-31,40-71", ""},
	}...)
	for _, tc := range cases {
		got, err := takePacked(tc.topo, parse(t, tc.available), tc.n, false, false)
		checkTake(t, tc, got, err)
	}
	for _, tc := range []takeCase{
		{"take cpus from two full UncoreCaches and partial from a single UncoreCache", topoUncoreSingleSocketNoSMT, "1-15", 10, "1-2,4-11", ""},
		{"take one cpu from dual socket with HT - core from Socket 0", topoDualSocketHT, "1-5,7-11", 1, "1", ""},
		{"take first available UncoreCache from first socket", topoUncoreDualSocketNoSMT, "0-15", 4, "0-3", ""},
		{"take all available UncoreCache from first socket", topoUncoreDualSocketNoSMT, "2-15", 6, "2-7", ""},
		{"take first available UncoreCache from second socket", topoUncoreDualSocketNoSMT, "8-15", 4, "8-11", ""},
		{"take first available UncoreCache from available NUMA", topoUncoreSingleSocketMultiNuma, "3-8,12", 2, "4-5", ""},
		{"take cpus from best available UncoreCache group of multi uncore cache single socket - SMT enabled", topoUncoreSingleSocketSMT, "2-7,10-15", 6, "4-6,12-14", ""},
		{"take cpus from multiple UncoreCache of single socket - SMT enabled", topoUncoreSingleSocketSMT, "1-7,9-15", 10, "1,4-7,9,12-15", ""},
	} {
		got, err := takePacked(tc.topo, parse(t, tc.available), tc.n, false, true)
		checkTake(t, tc, got, err)
	}
}

// TestTakeSpread: the kubelet's TestTakeByTopologyWithSpreadPhysicalCPUsPreferredOption
// (distribute-cpus-across-cores).
func TestTakeSpread(t *testing.T) {
	for _, tc := range []takeCase{
		{"take a socket of cpus from single socket with HT, 3 cpus", topoSingleSocketHT, "0-7", 3, "0-2", ""},
		{"take a socket of cpus from dual socket with HT, 2 cpus", topoDualSocketHT, "0-11", 2, "0,2", ""},
		{"take a socket of cpus from dual socket with HT, 3 cpus", topoDualSocketHT, "0-11", 3, "0,2,4", ""},
		{"take a socket of cpus from dual socket with HT, 6 cpus", topoDualSocketHT, "0-11", 6, "0,2,4,6,8,10", ""},
		{"take cpus from dual socket with HT, 8 cpus", topoDualSocketHT, "0-11", 8, "0-4,6,8,10", ""},
		{"take a socket of cpus from dual socket without HT, 2 cpus", topoDualSocketNoHT, "0-7", 2, "0-1", ""},
		{"take a socket of cpus from dual socket with multi numa per socket and HT, 12 cpus", topoDualSocketMultiNumaPerSocketHT, "0-79", 8, "0-7", ""},
	} {
		got, err := takePacked(tc.topo, parse(t, tc.available), tc.n, true, false)
		checkTake(t, tc, got, err)
	}
}

// TestTakeDistributed: the kubelet's TestTakeByTopologyNUMADistributed
// (distribute-cpus-across-numa), in groups of one CPU or of a core's two.
func TestTakeDistributed(t *testing.T) {
	type distCase struct {
		takeCase
		size int
	}
	var cases []distCase
	for _, tc := range commonTakeCases {
		cases = append(cases, distCase{tc, 1})
	}
	cases = append(cases, []distCase{
		{takeCase{"allocate 4 full cores with 2 distributed across each NUMA node", topoDualSocketHT, "0-11", 8, "0-3,6-9", ""}, 1},
		{takeCase{"allocate 32 full cores with 8 distributed across each NUMA node", topoDualSocketMultiNumaPerSocketHT, "0-79", 64, "0-7,10-17,20-27,30-37,40-47,50-57,60-67,70-77", ""}, 1},
		{takeCase{"allocate 24 full cores with 8 distributed across the first 3 NUMA nodes", topoDualSocketMultiNumaPerSocketHT, "0-79", 48, "0-7,10-17,20-27,40-47,50-57,60-67", ""}, 1},
		{takeCase{"allocate 24 full cores with 8 distributed across the first 3 NUMA nodes (taking all but 2 from the first NUMA node)", topoDualSocketMultiNumaPerSocketHT, "1-29,32-39,41-69,72-79", 48, "1-8,10-17,20-27,41-48,50-57,60-67", ""}, 1},
		{takeCase{"allocate 24 full cores with 8 distributed across the last 3 NUMA nodes (even though all 8 could be allocated from the first NUMA node)", topoDualSocketMultiNumaPerSocketHT, "2-29,31-39,42-69,71-79", 48, "10-17,20-27,31-38,50-57,60-67,71-78", ""}, 1},
		{takeCase{"allocate 8 full cores with 2 distributed across each NUMA node", topoDualSocketMultiNumaPerSocketHT, "0-2,10-12,20-22,30-32,40-41,50-51,60-61,70-71", 16, "0-1,10-11,20-21,30-31,40-41,50-51,60-61,70-71", ""}, 1},
		{takeCase{"take one cpu from dual socket with HT - core from Socket 0", topoDualSocketHT, "1-5,7-11", 1, "1", ""}, 1},
		{takeCase{"take one cpu from dual socket with HT - core from Socket 0 - cpuGroupSize 2", topoDualSocketHT, "1-5,7-11", 1, "2", ""}, 2},
		{takeCase{"allocate 13 full cores distributed across the first 2 NUMA nodes", topoDualSocketMultiNumaPerSocketHT, "0-79", 26, "0-6,10-16,40-45,50-55", ""}, 1},
		{takeCase{"allocate 13 full cores distributed across the first 2 NUMA nodes (cpuGroupSize 2)", topoDualSocketMultiNumaPerSocketHT, "0-79", 26, "0-6,10-15,40-46,50-55", ""}, 2},
		{takeCase{"allocate 31 full cores with 15 CPUs distributed across each NUMA node and 1 CPU spilling over to each of NUMA 0, 1", topoDualSocketMultiNumaPerSocketHT, "0-79", 62, "0-7,10-17,20-27,30-37,40-47,50-57,60-66,70-76", ""}, 1},
		{takeCase{"allocate 31 full cores with 14 CPUs distributed across each NUMA node and 2 CPUs spilling over to each of NUMA 0, 1, 2 (cpuGroupSize 2)", topoDualSocketMultiNumaPerSocketHT, "0-79", 62, "0-7,10-17,20-27,30-36,40-47,50-57,60-67,70-76", ""}, 2},
		{takeCase{"allocate 31 full cores with 15 CPUs distributed across each NUMA node and 1 CPU spilling over to each of NUMA 2, 3 (to keep balance)", topoDualSocketMultiNumaPerSocketHT, "0-8,10-18,20-39,40-48,50-58,60-79", 62, "0-7,10-17,20-27,30-37,40-46,50-56,60-67,70-77", ""}, 1},
		{takeCase{"allocate 31 full cores with 14 CPUs distributed across each NUMA node and 2 CPUs spilling over to each of NUMA 0, 2, 3 (to keep balance with cpuGroupSize 2)", topoDualSocketMultiNumaPerSocketHT, "0-8,10-18,20-39,40-48,50-58,60-79", 62, "0-7,10-16,20-27,30-37,40-47,50-56,60-67,70-77", ""}, 2},
		{takeCase{"ensure bestRemainder chosen with NUMA nodes that have enough CPUs to satisfy the request", topoDualSocketMultiNumaPerSocketHT, "0-3,10-13,20-23,30-36,40-43,50-53,60-63,70-76", 34, "0-3,10-13,20-23,30-34,40-43,50-53,60-63,70-74", ""}, 1},
		{takeCase{"ensure previous failure encountered on live machine has been fixed (1/1)", topoDualSocketMultiNumaPerSocketHTLarge, "0,128,30,31,158,159,43-47,171-175,62,63,190,191,75-79,203-207,94,96,222,223,101-111,229-239,126,127,254,255", 28, "43-47,75-79,96,101-105,171-174,203-206,229-232", ""}, 1},
	}...)
	for _, tc := range cases {
		got, err := takeDistributed(tc.topo, parse(t, tc.available), tc.n, tc.size, false)
		checkTake(t, tc.takeCase, got, err)
	}
}
