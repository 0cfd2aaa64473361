// Package reload follows a configuration file on a clock: it tells unchanged, same-meaning and
// changed content apart, builds what changed content configures, puts it in force atomically and
// keeps what is in force when that fails, logging each outcome in the words of the file's kind and
// recording Kubernetes' reload metrics for it. orch-apiserver's JWT authenticators, authorizers
// and encryption-at-rest providers reload through it.
package reload
