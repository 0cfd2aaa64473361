package scenario

import (
	"slices"
	"strconv"
	"strings"
	"time"

	"orch.io/orch/sim"
)

// Summary is what a replay did, per node and per pod, read from its trace: the figures a compare
// puts side by side.
type Summary struct {
	Nodes []NodeSummary
	Pods  []PodSummary
	// Lines is how many trace lines the replay recorded.
	Lines int
}

// NodeSummary is one node's figures.
type NodeSummary struct {
	Node string
	// Pressure is how long each pressure condition (MemoryPressure, DiskPressure, PIDPressure) held.
	Pressure map[string]time.Duration
	// ImagesPulled and ImagesRemoved count successful PullImage and RemoveImage calls.
	ImagesPulled, ImagesRemoved int
	// Requests counts the node's requests to the API server by "verb resource".
	Requests map[string]int
	// Events counts event writes (created or updated) by reason.
	Events map[string]int
}

// PodSummary is one pod's figures on one node.
type PodSummary struct {
	Node string
	// Pod is namespace/name.
	Pod string
	// Evicted are the times the pod became Failed with reason Evicted (evicted, or refused
	// admission for pressure).
	Evicted []time.Duration
	// Restarts is the most restarts its containers showed together.
	Restarts int
	// Ready is how long the pod was Running with every container running and ready.
	Ready time.Duration
	// Final is the pod's last traced state ("gone" once it left the node).
	Final string
}

// Summarize reads a replay's trace entries, in trace order, up to end (the scenario's duration).
func Summarize(entries []sim.Entry, end time.Duration) Summary {
	nodes := map[string]*NodeSummary{}
	node := func(name string) *NodeSummary {
		n := nodes[name]
		if n == nil {
			n = &NodeSummary{Node: name, Pressure: map[string]time.Duration{}, Requests: map[string]int{}, Events: map[string]int{}}
			nodes[name] = n
		}
		return n
	}
	type podTrack struct {
		PodSummary
		ready      bool
		readySince time.Duration
	}
	pods := map[[2]string]*podTrack{}
	var podOrder [][2]string
	conds := map[string][]string{}
	condSince := map[string]time.Duration{}
	closeConds := func(n string, at time.Duration) {
		for _, c := range conds[n] {
			node(n).Pressure[c] += at - condSince[n]
		}
	}
	for _, e := range entries {
		if e.Node == "api" {
			continue // the timeline's own requests, the same in every run
		}
		n := node(e.Node)
		switch e.Kind {
		case sim.KindNode:
			closeConds(e.Node, e.At)
			conds[e.Node], condSince[e.Node] = nil, e.At
			if p := strings.TrimPrefix(e.Text, "conditions "); p != "none" && p != "" {
				conds[e.Node] = strings.Split(p, ",")
			}
		case sim.KindCRI:
			if strings.Contains(e.Text, " -> OK") {
				switch {
				case strings.HasPrefix(e.Text, "PullImage "):
					n.ImagesPulled++
				case strings.HasPrefix(e.Text, "RemoveImage "):
					n.ImagesRemoved++
				}
			}
		case sim.KindAPI:
			if f := strings.Fields(e.Text); len(f) >= 2 {
				n.Requests[f[0]+" "+f[1]]++
			}
		case sim.KindEvent:
			if f := strings.Fields(e.Text); len(f) >= 3 && (f[0] == "create" || f[0] == "update") {
				n.Events[f[2]]++
			}
		case sim.KindPod:
			key, state, _ := strings.Cut(e.Text, " ")
			id := [2]string{e.Node, key}
			p := pods[id]
			if p == nil {
				p = &podTrack{PodSummary: PodSummary{Node: e.Node, Pod: key}}
				pods[id] = p
				podOrder = append(podOrder, id)
			}
			evicted := strings.Contains(state, " reason=Evicted")
			if evicted && !strings.Contains(p.Final, " reason=Evicted") {
				p.Evicted = append(p.Evicted, e.At)
			}
			if p.ready {
				p.Ready += e.At - p.readySince
			}
			p.ready, p.readySince, p.Final = podReady(state), e.At, state
			p.Restarts = max(p.Restarts, podRestarts(state))
		}
	}
	var s Summary
	s.Lines = len(entries)
	names := make([]string, 0, len(nodes))
	for name := range nodes {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		closeConds(name, end)
		s.Nodes = append(s.Nodes, *nodes[name])
	}
	slices.SortStableFunc(podOrder, func(a, b [2]string) int {
		return strings.Compare(a[0]+"\x00"+a[1], b[0]+"\x00"+b[1])
	})
	for _, id := range podOrder {
		p := pods[id]
		if p.ready {
			p.Ready += end - p.readySince
		}
		s.Pods = append(s.Pods, p.PodSummary)
	}
	return s
}

// podReady reads a pod's trace state ("Running Ready=True app=running,ready=true"): Running, every
// container running, none not ready, and the pod's Ready condition not False.
func podReady(state string) bool {
	f := strings.Fields(state)
	if len(f) == 0 || f[0] != "Running" {
		return false
	}
	containers := 0
	for _, tok := range f[1:] {
		name, val, ok := strings.Cut(tok, "=")
		switch {
		case !ok || name == "reason" || strings.HasPrefix(name, "init/"):
		case name == "Ready":
			if val != "True" {
				return false
			}
		default:
			containers++
			if !strings.HasPrefix(val, "running") || strings.Contains(val, "ready=false") {
				return false
			}
		}
	}
	return containers > 0
}

// podRestarts sums the restarts=N of a pod's containers in a trace state.
func podRestarts(state string) int {
	total := 0
	for _, tok := range strings.Fields(state) {
		for _, part := range strings.Split(tok, ",") {
			if v, ok := strings.CutPrefix(part, "restarts="); ok {
				n, _ := strconv.Atoi(v)
				total += n
			}
		}
	}
	return total
}

// row is one figure of one subject ("node node-a", "pod node-a default/web"), as compare shows it.
type row struct{ subject, figure, value string }

// rows flattens the summary into the figures compare lines up, in a fixed order.
func (s Summary) rows() []row {
	var out []row
	for _, n := range s.Nodes {
		sub := "node " + n.Node
		for _, c := range sortedKeys(n.Pressure) {
			out = append(out, row{sub, "time under " + c, formatSpan(n.Pressure[c])})
		}
		out = append(out, row{sub, "images pulled", strconv.Itoa(n.ImagesPulled)}, row{sub, "images collected", strconv.Itoa(n.ImagesRemoved)})
		for _, k := range sortedKeys(n.Requests) {
			out = append(out, row{sub, "api " + k, strconv.Itoa(n.Requests[k])})
		}
		for _, k := range sortedKeys(n.Events) {
			out = append(out, row{sub, "events " + k, strconv.Itoa(n.Events[k])})
		}
	}
	for _, p := range s.Pods {
		sub := "pod " + p.Pod + " on " + p.Node
		ev := "never"
		if len(p.Evicted) > 0 {
			times := make([]string, len(p.Evicted))
			for i, t := range p.Evicted {
				times[i] = sim.FormatOffset(t)
			}
			ev = strings.Join(times, " ")
		}
		out = append(out, row{sub, "evicted at", ev}, row{sub, "restarts", strconv.Itoa(p.Restarts)},
			row{sub, "time ready", formatSpan(p.Ready)}, row{sub, "last state", p.Final})
	}
	return out
}

// formatSpan writes a span of simulated time as Go does, without the zero units ("1m0s" is "1m").
func formatSpan(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// evictions are the sweep table's eviction columns: how many pods were evicted, the first time
// one was (-1 for none) and which.
func (s Summary) evictions() (pods int, first time.Duration, names []string) {
	first = -1
	for _, p := range s.Pods {
		if len(p.Evicted) == 0 {
			continue
		}
		pods++
		names = append(names, p.Pod)
		if first < 0 || p.Evicted[0] < first {
			first = p.Evicted[0]
		}
	}
	return pods, first, names
}
