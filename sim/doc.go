// Package sim replays the life of one or more nodes on one fake clock: each node is the production
// orchlet (components/orchlet/agent) on its own in-process fakecri, reading static pods from an
// in-memory manifest directory and an in-process manifest URL, and every observable act is written
// to one trace ordered by simulated time and sequence.
//
// Time moves only when the World says so. RunUntil jumps the clock.Mock to the earliest time any
// component has work due (a source poll, a pod-worker queue item, an event sweep, a fakecri wakeup,
// the deadline of a call a node is blocked in), and before each jump waits until every node is
// settled. A node's components are stepped one by one, as agent.Run runs them on their own loops:
// the sources poll, their updates go to the pod workers, whose Step runs in a goroutine until it
// returns or is blocked in a CRI call that fakecri holds until a later time, with every background
// image pull held there too or ended (the protocol of components/orchlet/pods' package doc), and
// the recorder writes its events. Everything the trace records is read at those settled points,
// node by node in a fixed order, by the single driver goroutine, so goroutine scheduling cannot
// change the bytes of a trace; lines of background pulls, which reach the runtime in the
// scheduler's order, are ordered by text within their instant.
//
// The clock is benbjohnson/clock's Mock made unyielding (third_party/forked/clock): the driver
// waits for quiescence itself, so the upstream Mock's 1 ms sleep per move bought nothing.
package sim
