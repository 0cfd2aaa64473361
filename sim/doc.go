// Package sim replays the life of one or more nodes on one fake clock: each node is the production
// orchlet (components/orchlet/agent) on its own in-process fakecri, reading static pods from an
// in-memory manifest directory and an in-process manifest URL, and every observable act is written
// to one trace ordered by simulated time and sequence.
//
// Time moves only when the World says so. RunUntil jumps the clock.Mock to the earliest time any
// component has work due (a source poll, a pod-worker queue item, an event sweep, a fakecri wakeup,
// the deadline of a call a node is blocked in), and before each jump waits until every node is
// settled. A node's components (agent.Components) are stepped one by one in their order, as
// agent.Run runs them on their own loops: the sources poll, their updates go to the pod workers,
// whose Step runs in a goroutine until it returns or is blocked in a CRI call that fakecri holds
// until a later time, with every background image pull held there too or ended (the protocol of
// components/orchlet/pods' package doc), then the garbage collectors and the eviction manager act
// on the settled workers and the recorder writes its events. Everything the trace records is read at those settled points,
// each node's by one goroutine (the driver looks at the nodes at once, in as many goroutines as
// the process has processors, each look touching its node alone) and recorded node by node in a
// fixed order by the driver, so goroutine scheduling cannot change the bytes of a trace; lines of
// background pulls, which reach the runtime in the scheduler's order, are ordered by text within
// their instant.
//
// With Options.APIServer the world serves orch-apiserver's real handler (server.New on memory
// storage on the world's clock, its uids and name suffixes drawn from the world's seed), and nodes
// with NodeOptions.API run in API-server mode against it: the production nodestatus.Controller and
// apipods.Syncer, whose clients' transport runs the handler on the calling goroutine with an
// httptest.ResponseRecorder. No informer runs: client-go's reflector keeps wall-clock back-offs
// and resyncs and delivers from goroutines of its own, so its order would be the scheduler's.
// Instead the world watches the pods' keys in storage itself (memory storage fills a watch's
// buffer before the write returns) and, at the start of each settle round, hands each change to
// the node the pod is bound to with Syncer.Observe, in revision order; while the API server is
// down (SetAPIServerDown) the changes wait, as a broken watch would, and every request fails as a
// refused connection. The driver calls Register (retried with the controller's back-off),
// SyncStatus (every --node-status-update-frequency from the registration) and RenewLease (every
// 10s from it) itself, as Controller.Run's tickers would, and Syncer.Sync when the pod workers
// published, a change was handed over, or its 1s retry is due; it does so for every node at once,
// in as many goroutines as the process has processors, and collects what each did in node order.
// A request another node could see or that draws on the seed (every create, anything but a read or
// update of the node's own Node or Lease) waits until every node before it is done, so those
// requests, and every uid they make, come in the nodes' order; only the resourceVersions the
// heartbeats are stored at, which the trace does not show, follow the scheduler. Not simulated: --kube-api-qps (the rate
// limiter waits on the wall clock), events, which stay trace lines, and a fakecri script that
// holds Version, Status or ListImages (nodestatus calls them while the driver waits for it).
//
// Node.Kill stops a node's agent as SIGKILL does, at a settled instant: its CRI link is cut (the
// runtime ends the calls it served, Canceled, and the goroutines that made them never run again)
// and it is stepped no more; Node.Restart starts a new agent on the same runtime, root and log
// directories. Judged by Differences and Replaced (a restarted agent adopts what runs). In
// API-server mode the killed node makes no request and is handed no pod change; the restarted one
// registers again over its existing Node, takes its Lease up, and lists its pods (through the
// informer's own list-watch) before the world hands it changes past that list's revision.
//
// The clock is benbjohnson/clock's Mock made unyielding (third_party/forked/clock): the driver
// waits for quiescence itself, so the upstream Mock's 1 ms sleep per move bought nothing.
package sim
