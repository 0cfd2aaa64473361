// Package groups names the API groups orch renames from Kubernetes' and the name Kubernetes gives
// each: the server serves every such group under both names over the same storage (orch's first in
// discovery), and authorizers treat the two names of a group as one.
package groups
