// Package admission is orch-apiserver's validating admission chain: plugins that may refuse a
// create or update after the object passed its own validation and before it is stored.
package admission
