// Package sim replays the life of one or more nodes on one fake clock: each node is the production
// orchlet (components/orchlet/agent) on its own in-process fakecri, reading static pods from an
// in-memory manifest directory and an in-process manifest URL, and every observable act is written
// to one trace ordered by simulated time and sequence.
//
// Time moves only when the World says so. RunUntil jumps the clock.Mock to the earliest time any
// component has work due (an agent's queue deadline, a fakecri wakeup, the deadline of a call a
// node is blocked in), and before each jump waits until every node is settled: its Step has
// returned, or it is blocked in a CRI call that fakecri holds until a later time (the protocol of
// components/orchlet/pods' package doc), and its runtime is idle. Everything the trace records is
// read at those settled points, node by node in a fixed order, by the single driver goroutine, so
// goroutine scheduling cannot change the bytes of a trace.
package sim
