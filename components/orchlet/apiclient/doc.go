// Package apiclient connects the node agent to orch-apiserver with the settings of its
// --orchconfig file: core v1, coordination.orch.io leases and events.orch.io events. Its core v1
// client is its own, not client-go's clientset, so the agent links and registers no other API group.
package apiclient
