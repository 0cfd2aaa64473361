package scenario

import (
	"fmt"
	"slices"
	"time"

	"orch.io/orch/fakecri"
	"orch.io/orch/sim"
	"orch.io/orch/sim/converge"
)

// validateKills checks the timeline's orchlet steps: kill or restart, a kill while the agent runs
// and a restart while it is killed.
func (s *Scenario) validateKills(bad func(path, format string, args ...any)) {
	killed := map[string]bool{}
	for i, st := range s.Timeline {
		if st.Orchlet == "" {
			continue
		}
		at := fmt.Sprintf("timeline[%d].orchlet", i)
		node := st.Node
		if node == "" && len(s.Nodes) > 0 {
			node = s.Nodes[0].Name
		}
		switch {
		case st.Orchlet != "kill" && st.Orchlet != "restart":
			bad(at, "%q is neither kill nor restart", st.Orchlet)
		case st.Orchlet == "kill" && killed[node]:
			bad(at, "node %s's agent is already killed (restart it first)", node)
		case st.Orchlet == "restart" && !killed[node]:
			bad(at, "node %s's agent is running (kill it first)", node)
		default:
			killed[node] = st.Orchlet == "kill"
		}
	}
}

// orchletStep kills or restarts the node's agent; n is nil for a node whose agent refused to
// start, which has nothing to kill.
func orchletStep(n *sim.Node, st Step) error {
	if n == nil && st.Orchlet != "" {
		return fmt.Errorf("timeline: orchlet %s: the node's agent refused to start", st.Orchlet)
	}
	switch st.Orchlet {
	case "kill":
		return n.Kill()
	case "restart":
		return n.Restart()
	}
	return nil
}

// stateAt is a node's runtime at a time.
type stateAt struct {
	node string
	at   time.Duration
}

// snapshots are the runtime states expect.runtime judges, taken as the run reaches their times.
type snapshots struct {
	want  []stateAt // in time order, each once
	taken map[stateAt]fakecri.State
}

func newSnapshots(e Expect, firstNode string) *snapshots {
	sn := &snapshots{taken: map[stateAt]fakecri.State{}}
	seen := map[stateAt]bool{}
	add := func(node string, at time.Duration) {
		if node == "" {
			node = firstNode
		}
		if k := (stateAt{node, at}); !seen[k] {
			seen[k] = true
			sn.want = append(sn.want, k)
		}
	}
	for _, r := range e.Runtime {
		add(r.Node, r.At.D())
		if r.Since != nil {
			add(r.Node, r.Since.D())
		}
	}
	slices.SortStableFunc(sn.want, func(a, b stateAt) int { return int(a.at - b.at) })
	return sn
}

// takeUntil runs the world to each snapshot time up to end (inclusive) and takes the states due.
func (sn *snapshots) takeUntil(w *sim.World, end time.Duration) error {
	for len(sn.want) > 0 && sn.want[0].at <= end {
		k := sn.want[0]
		sn.want = sn.want[1:]
		if err := w.RunUntil(k.at); err != nil {
			return err
		}
		if n, ok := w.Node(k.node); ok {
			sn.taken[k] = n.Runtime.State()
		}
	}
	return nil
}

// checkRuntime lists the expect.runtime findings.
func (e Expect) checkRuntime(taken map[stateAt]fakecri.State, firstNode string) []string {
	var fails []string
	for _, r := range e.Runtime {
		node := r.Node
		if node == "" {
			node = firstNode
		}
		where := fmt.Sprintf("runtime of %s at %s", node, sim.FormatOffset(r.At.D()))
		st, ok := taken[stateAt{node, r.At.D()}]
		if !ok {
			fails = append(fails, where+": the node did not start")
			continue
		}
		d := converge.Differences(st, r.Pods)
		for _, kind := range []struct {
			name  string
			found []string
		}{{"leaked", d.Leaked}, {"doubled", d.Doubled}, {"missing", d.Missing}} {
			for _, f := range kind.found {
				fails = append(fails, fmt.Sprintf("%s: %s: %s", where, kind.name, f))
			}
		}
		if r.Since != nil {
			pods, containers := converge.Replaced(taken[stateAt{node, r.Since.D()}], st, r.Pods)
			for _, f := range append(pods, containers...) {
				fails = append(fails, fmt.Sprintf("%s: replaced since %s: %s", where, sim.FormatOffset(r.Since.D()), f))
			}
		}
	}
	return fails
}
