// Package orchlet holds what the node agent and the API server agree on about nodes beyond the
// configuration file: the node labels an agent may set on its own Node.
package orchlet
