// Package apiclient connects the node agent to orch-apiserver with the settings of its
// --orchconfig file: core v1, coordination.orch.io leases and events.orch.io events.
package apiclient
