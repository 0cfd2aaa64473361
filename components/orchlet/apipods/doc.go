// Package apipods makes the API server the agent's pod source in API-server mode: it watches the
// pods bound to the node and hands them to the pod workers, posts their status when it changes,
// stops pods being deleted and confirms their deletion, and mirrors static pods into the API.
package apipods
