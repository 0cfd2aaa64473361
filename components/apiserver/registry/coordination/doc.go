// Package coordination holds the strategy of coordination.orch.io/v1 leases, where nodes heartbeat.
package coordination
