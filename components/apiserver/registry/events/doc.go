// Package events is the strategy of events.orch.io/v1 Events: their validation, field selectors
// and kubectl columns, served by the generic registry with the server's event TTL.
package events
