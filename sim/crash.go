package sim

import (
	"errors"
	"fmt"

	"orch.io/orch/components/orchlet/sources"
)

// Kill stops the node's orchlet as SIGKILL does, at the instant the world stands at: no shutdown
// runs, its goroutines are parked for good (link), events it had not written are lost, and the
// runtime ends the calls it was serving, as containerd does when a client's connection closes
// (a pull or a held call ends Canceled). What the agent wrote to its root directory, the pods' log
// directories and the runtime's sandboxes, containers and images stay. Until Restart the node is
// not stepped and traces nothing. In API-server mode it makes no request: its Node's status and
// its Lease are no longer posted (the Lease goes stale), pod changes are not handed to it, and the
// statuses it had not posted are lost with it; its requests are made in the driver's steps, so none
// is half made.
func (n *Node) Kill() error {
	if n.down {
		return fmt.Errorf("sim: node %s: the agent is already killed", n.Name)
	}
	n.world.Note(n.Name, "orchlet killed (SIGKILL)")
	n.link.cut.Store(true)
	n.stop()
	// The world is settled, so every call in flight is parked in the runtime, which the
	// cancellation ends: wait until it has, so the trace of this instant is complete.
	for {
		changed := n.rt.Changes()
		if n.rt.InFlight() == 0 {
			break
		}
		select {
		case <-changed:
		case <-n.world.ctx.Done():
			return errors.New("sim: the world closed while a killed agent's calls ended")
		}
	}
	n.world.collect(n)
	n.down = true
	return nil
}

// Restart starts a new orchlet on the killed one's runtime, root and log directories and manifest
// sources, as a supervisor restarts the process: it knows only what it reads there. Its pod
// workers step first, before its sources are read. The trace follows it afresh: its sources' pods
// are added again and its pods' states traced as it publishes them. In API-server mode the new
// agent's Node controller and pod syncer start afresh, as the process's do: it registers again
// (the Node exists: the create is refused AlreadyExists and the Node read and reconciled, as the
// kubelet's tryRegisterWithAPIServer does), reads its Lease and renews it, and lists the pods
// bound to it before it watches them; until that list the runtime's pods wait, none an orphan.
func (n *Node) Restart() error {
	if !n.down {
		return fmt.Errorf("sim: node %s: the agent is running: kill it first", n.Name)
	}
	if err := n.boot(); err != nil {
		return fmt.Errorf("sim: node %s: %w", n.Name, err)
	}
	n.down, n.stepping, n.done, n.stepped, n.updated, n.read, n.quiet = false, false, nil, false, false, true, false
	n.stepDone = make(chan struct{}, 1) // the killed agent's Step, should it ever return, signals on the old one
	n.podsVersion, n.podState, n.desired = 0, map[string]tracedPod{}, sources.Snapshot{}
	if n.attach != nil {
		if err := n.attach(); err != nil {
			return err
		}
		n.api.relist, n.api.listAt = true, n.world.Clock.Now()
	}
	n.world.Note(n.Name, "orchlet restarted on its root directory")
	if err := n.Agent.Start(n.life); err != nil {
		return fmt.Errorf("sim: node %s: %w", n.Name, err)
	}
	// The pod workers take their first Step, and relist the runtime, before the sources are first
	// read: of the orders agent.Run's goroutines may take, the one in which orchlet restarted on
	// containerd tore down the running pods no source had named yet.
	n.startStep(n.life)
	if _, err := n.waitSettled(n.life); err != nil {
		return err
	}
	return nil
}
