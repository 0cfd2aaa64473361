// Package calllog is fakecri's call log: every CRI call the runtime served, its request kept
// whole and summarized as the log shows it, its answer, code and the fault that decided it, in a
// ring of bounded size read by sequence and method.
package calllog
