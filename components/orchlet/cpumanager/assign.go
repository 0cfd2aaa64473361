package cpumanager

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"

	"k8s.io/utils/cpuset"
)

// This file is the kubelet v1.34's CPU assignment (cpu_assignment.go), its results kept CPU for CPU:
// the packed best fit (whole NUMA nodes and sockets, then uncore caches under
// prefer-align-cpus-by-uncorecache, whole cores unless distribute-cpus-across-cores spreads them,
// then single CPUs) and the distribution across NUMA nodes of distribute-cpus-across-numa.

// The fields of a CPU the assignment groups by.
var (
	cpuID    = func(c CPUInfo) int { return c.ID }
	coreID   = func(c CPUInfo) int { return c.Core }
	socketID = func(c CPUInfo) int { return c.Socket }
	numaID   = func(c CPUInfo) int { return c.NUMANode }
	uncoreID = func(c CPUInfo) int { return c.UncoreCache }
)

// details are CPUs by id, the kubelet's CPUDetails.
type details map[int]CPUInfo

func (d details) keepOnly(set cpuset.CPUSet) details {
	out := details{}
	for id, c := range d {
		if set.Contains(id) {
			out[id] = c
		}
	}
	return out
}

// all is every value of key among the CPUs.
func (d details) all(key func(CPUInfo) int) cpuset.CPUSet {
	var out []int
	for _, c := range d {
		out = append(out, key(c))
	}
	return cpuset.New(out...)
}

// in is the values of key of the CPUs whose by is one of ids (CPUsInNUMANodes is in(cpuID,
// numaID, ...)).
func (d details) in(key, by func(CPUInfo) int, ids ...int) cpuset.CPUSet {
	var out []int
	for _, c := range d {
		if slices.Contains(ids, by(c)) {
			out = append(out, key(c))
		}
	}
	return cpuset.New(out...)
}

func (d details) cpus() cpuset.CPUSet { return d.all(cpuID) }

// coresNeededInUncore are the first n cores of the uncore cache, or all of them.
func (d details) coresNeededInUncore(n int, uncore int) cpuset.CPUSet {
	cores := d.in(coreID, uncoreID, uncore)
	if cores.Size() <= n {
		return cores
	}
	return cpuset.New(cores.List()[:n]...)
}

// machine counts the topology as the kubelet's CPUTopology does.
type machine struct {
	details                                            details
	numCPUs, numCores, numSockets, numNUMA, numUncores int
}

func newMachine(t *Topology) *machine {
	d := details{}
	for _, c := range t.CPUs {
		d[c.ID] = c
	}
	return &machine{details: d, numCPUs: len(d), numCores: d.all(coreID).Size(), numSockets: d.all(socketID).Size(),
		numNUMA: d.all(numaID).Size(), numUncores: d.all(uncoreID).Size()}
}

func per(cpus, groups int) int {
	if groups == 0 {
		return 0
	}
	return cpus / groups
}

func (m *machine) cpusPerCore() int   { return per(m.numCPUs, m.numCores) }
func (m *machine) cpusPerSocket() int { return per(m.numCPUs, m.numSockets) }
func (m *machine) cpusPerUncore() int { return per(m.numCPUs, m.numUncores) }

// accumulator gathers the CPUs of one request from the free ones (the kubelet's cpuAccumulator).
type accumulator struct {
	topo *machine
	// details are the CPUs still free to take.
	details details
	needed  int
	result  cpuset.CPUSet
	// numaFirst: NUMA nodes are above sockets (as many sockets as nodes or more), so whole nodes
	// are taken before whole sockets and sorting goes by node, then socket.
	numaFirst bool
	// spread sorts single CPUs socket by socket rather than core by core
	// (distribute-cpus-across-cores).
	spread bool
}

func newAccumulator(topo *machine, available cpuset.CPUSet, n int, spread bool) *accumulator {
	return &accumulator{topo: topo, details: topo.details.keepOnly(available), needed: n, result: cpuset.New(),
		numaFirst: topo.numSockets >= topo.numNUMA, spread: spread}
}

// sort orders ids by the free CPUs in each, fewest first, then by id.
func (a *accumulator) sort(ids []int, by func(CPUInfo) int) {
	sort.Slice(ids, func(i, j int) bool {
		ci, cj := a.details.in(cpuID, by, ids[i]).Size(), a.details.in(cpuID, by, ids[j]).Size()
		if ci != cj {
			return ci < cj
		}
		return ids[i] < ids[j]
	})
}

// within lists, for each of the outer ids in order, its inner ids sorted.
func (a *accumulator) within(outer []int, outerBy, inner func(CPUInfo) int) []int {
	var out []int
	for _, o := range outer {
		ids := a.details.in(inner, outerBy, o).UnsortedList()
		a.sort(ids, inner)
		out = append(out, ids...)
	}
	return out
}

func (a *accumulator) sortedNUMANodes() []int {
	if a.numaFirst {
		ids := a.details.all(numaID).UnsortedList()
		a.sort(ids, numaID)
		return ids
	}
	return a.within(a.sortedSockets(), socketID, numaID)
}

func (a *accumulator) sortedSockets() []int {
	if a.numaFirst {
		return a.within(a.sortedNUMANodes(), numaID, socketID)
	}
	ids := a.details.all(socketID).UnsortedList()
	a.sort(ids, socketID)
	return ids
}

func (a *accumulator) sortedCores() []int {
	if a.numaFirst {
		return a.within(a.sortedSockets(), socketID, coreID)
	}
	return a.within(a.sortedNUMANodes(), numaID, coreID)
}

func (a *accumulator) sortedUncores() []int {
	return a.within(a.sortedNUMANodes(), numaID, uncoreID)
}

// sortedCPUs are the free CPUs core by core (packed), or socket by socket (spread).
func (a *accumulator) sortedCPUs() []int {
	groups, by := a.sortedCores(), coreID
	if a.spread {
		groups, by = a.sortedSockets(), socketID
	}
	var out []int
	for _, g := range groups {
		out = append(out, a.details.in(cpuID, by, g).List()...)
	}
	return out
}

// wholly are the ids among sorted whose every CPU is free.
func (a *accumulator) wholly(sorted []int, by func(CPUInfo) int, size func(id int) int) []int {
	free := []int{}
	for _, id := range sorted {
		if a.details.in(cpuID, by, id).Size() == size(id) {
			free = append(free, id)
		}
	}
	return free
}

func (a *accumulator) take(set cpuset.CPUSet) {
	a.result = a.result.Union(set)
	a.details = a.details.keepOnly(a.details.cpus().Difference(a.result))
	a.needed -= set.Size()
}

// takeWhole takes each wholly free group of sorted while at least its size is needed.
func (a *accumulator) takeWhole(sorted []int, by func(CPUInfo) int, size func(id int) int) {
	for _, id := range a.wholly(sorted, by, size) {
		set := a.topo.details.in(cpuID, by, id)
		if a.needed >= set.Size() {
			a.take(set)
		}
	}
}

func (a *accumulator) takeNUMANodes() {
	a.takeWhole(a.sortedNUMANodes(), numaID, func(id int) int { return a.topo.details.in(cpuID, numaID, id).Size() })
}

func (a *accumulator) takeSockets() {
	a.takeWhole(a.sortedSockets(), socketID, func(int) int { return a.topo.cpusPerSocket() })
}

func (a *accumulator) takeCores() {
	a.takeWhole(a.sortedCores(), coreID, func(int) int { return a.topo.cpusPerCore() })
}

func (a *accumulator) takeFullUncores() {
	a.takeWhole(a.sortedUncores(), uncoreID, func(id int) int { return a.topo.details.in(cpuID, uncoreID, id).Size() })
}

// takePartialUncore takes what is still needed from one uncore cache, whole cores first, if it
// holds all of it.
func (a *accumulator) takePartialUncore(uncore int) {
	perCore := a.topo.cpusPerCore()
	cores := a.details.coresNeededInUncore((a.needed+perCore-1)/perCore, uncore)
	free := a.details.in(cpuID, coreID, cores.UnsortedList()...)
	// An odd request on SMT leaves out the last CPU of the last core.
	if a.needed%2 != 0 && perCore > 1 {
		ids := free.List()
		if len(ids) > a.needed {
			ids = ids[:free.Size()-1]
		}
		free = cpuset.New(ids...)
	}
	if a.needed == free.Size() {
		a.take(free)
	}
}

func (a *accumulator) takeUncores() {
	perUncore := a.topo.cpusPerUncore()
	for _, uncore := range a.sortedUncores() {
		if a.needed >= perUncore {
			a.takeFullUncores()
		}
		if a.satisfied() {
			return
		}
		a.takePartialUncore(uncore)
		if a.satisfied() {
			return
		}
	}
}

func (a *accumulator) takeRemaining() {
	for _, id := range a.sortedCPUs() {
		a.take(cpuset.New(id))
		if a.satisfied() {
			return
		}
	}
}

func (a *accumulator) satisfied() bool { return a.needed < 1 }
func (a *accumulator) failed() bool    { return a.needed > a.details.cpus().Size() }

// numaRange is the fewest and most NUMA nodes that could hold the request in groups of size.
func (a *accumulator) numaRange(size int) (lo, hi int) {
	groups := (a.topo.numCPUs-1)/size + 1
	perNode := (groups-1)/a.topo.numNUMA + 1
	needed := (a.needed-1)/size + 1
	return (needed-1)/perNode + 1, min(needed, a.details.all(numaID).Size())
}

// combinations calls f with each k-subset of ids in order until f answers false.
func combinations(ids []int, k int, f func([]int) bool) {
	if k < 1 {
		return
	}
	var walk func(start int, acc []int) bool
	walk = func(start int, acc []int) bool {
		if len(acc) == k {
			return f(acc)
		}
		for i := start; i <= len(ids)-(k-len(acc)); i++ {
			if !walk(i+1, append(acc, ids[i])) {
				return false
			}
		}
		return true
	}
	walk(0, []int{})
}

func notEnough(n int, available cpuset.CPUSet) error {
	return fmt.Errorf("not enough cpus available to satisfy request: requested=%d, available=%d", n, available.Size())
}

// takePacked is the kubelet's takeByTopologyNUMAPacked.
func takePacked(topo *machine, available cpuset.CPUSet, n int, spread, uncore bool) (cpuset.CPUSet, error) {
	a := newAccumulator(topo, available, n, spread)
	if a.satisfied() {
		return a.result, nil
	}
	if a.failed() {
		return cpuset.New(), notEnough(n, available)
	}
	steps := []func(){a.takeSockets, a.takeNUMANodes}
	if a.numaFirst {
		steps = []func(){a.takeNUMANodes, a.takeSockets}
	}
	if uncore {
		steps = append(steps, a.takeUncores)
	}
	if !spread {
		steps = append(steps, a.takeCores)
	}
	for _, step := range append(steps, a.takeRemaining) {
		step()
		if a.satisfied() {
			return a.result, nil
		}
	}
	return cpuset.New(), errors.New("failed to allocate cpus")
}

// takeDistributed is the kubelet's takeByTopologyNUMADistributed (distribute-cpus-across-numa):
// of the fewest NUMA nodes that can share the request evenly in groups of size CPUs, the
// combination leaving the free CPUs most balanced (least standard deviation) across the nodes,
// each node's share taken packed; the packed allocation when no combination fits.
func takeDistributed(topo *machine, available cpuset.CPUSet, n, size int, spread bool) (cpuset.CPUSet, error) {
	if n%size != 0 {
		return takePacked(topo, available, n, spread, false)
	}
	a := newAccumulator(topo, available, n, spread)
	if a.satisfied() {
		return a.result, nil
	}
	if a.failed() {
		return cpuset.New(), notEnough(n, available)
	}
	freeIn := func(numa int) int { return a.details.in(cpuID, numaID, numa).Size() }
	numas := a.sortedNUMANodes()
	lo, hi := a.numaRange(size)
	for k := lo; k <= hi; k++ {
		best, bestRemainder, bestCombo := math.MaxFloat64, []int(nil), []int(nil)
		combinations(numas, k, func(combo []int) bool {
			if best == 0 {
				return false
			}
			if a.details.in(cpuID, numaID, combo...).Size() < n {
				return true
			}
			groups := 0
			for _, numa := range combo {
				groups += freeIn(numa) / size
			}
			if groups*size < n {
				return true
			}
			share := (n / len(combo) / size) * size
			for _, numa := range combo {
				if freeIn(numa) < share {
					return true
				}
			}
			after := map[int]int{}
			for _, numa := range numas {
				after[numa] = freeIn(numa)
			}
			for _, numa := range combo {
				after[numa] -= share
			}
			remainder := n - share*len(combo)
			var remainderCombo []int
			for _, numa := range combo {
				if after[numa] >= size {
					remainderCombo = append(remainderCombo, numa)
				}
			}
			localBest, localRemainder := math.MaxFloat64, []int(nil)
			if remainder == 0 {
				localBest = stddev(after)
			}
			for j := len(remainderCombo); remainder > 0 && j >= 1; j-- {
				combinations(remainderCombo, j, func(subset []int) bool {
					left, after := remainder, maps.Clone(after)
					total := 0
					for _, numa := range subset {
						total += after[numa]
					}
					if total < left {
						return true
					}
					for left > 0 {
						for _, numa := range subset {
							if left == 0 {
								break
							}
							if after[numa] < size {
								continue
							}
							after[numa] -= size
							left -= size
						}
					}
					if b := stddev(after); b < localBest {
						localBest, localRemainder = b, slices.Clone(subset)
					}
					return true
				})
			}
			if localBest < best {
				best, bestRemainder, bestCombo = localBest, localRemainder, slices.Clone(combo)
			}
			return true
		})
		if bestCombo == nil {
			continue
		}
		share := (n / len(bestCombo) / size) * size
		for _, numa := range bestCombo {
			set, _ := takePacked(a.topo, a.details.in(cpuID, numaID, numa), share, spread, false)
			a.take(set)
		}
		for remainder := n - share*len(bestCombo); remainder > 0; {
			for _, numa := range bestRemainder {
				if remainder == 0 {
					break
				}
				if freeIn(numa) < size {
					continue
				}
				set, _ := takePacked(a.topo, a.details.in(cpuID, numaID, numa), size, spread, false)
				a.take(set)
				remainder -= size
			}
		}
		if a.needed != 0 {
			return cpuset.New(), fmt.Errorf("accounting error, not enough CPUs allocated, remaining: %v", a.needed)
		}
		return a.result, nil
	}
	return takePacked(topo, available, n, spread, false)
}

// stddev is the standard deviation of the free CPUs per node, rounded to thousandths as the
// kubelet rounds it (so near ties compare equal).
func stddev(free map[int]int) float64 {
	var sum float64
	for _, v := range free {
		sum += float64(v)
	}
	mean := math.Round(sum/float64(len(free))*1000) / 1000
	var sq float64
	for _, v := range free {
		sq += (float64(v) - mean) * (float64(v) - mean)
	}
	return math.Round(math.Sqrt(sq/float64(len(free)))*1000) / 1000
}
