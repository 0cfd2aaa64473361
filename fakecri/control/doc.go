// Package control is fakecri's HTTP control API: the call log read and cleared, the script read
// and replaced, the manual clock read and advanced, the runtime's state, filesystems and
// checkpoints, a container killed as the kernel kills one.
package control
