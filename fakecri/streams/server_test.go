package streams

import (
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// An attach reaches the built-in shell only where the container's process is sh reading its
// standard input.
func TestInteractiveShell(t *testing.T) {
	if !interactiveShell(&runtimeapi.ContainerConfig{Command: []string{"/bin/sh"}, Stdin: true}) {
		t.Error("sh reading its stdin is an interactive shell")
	}
	if interactiveShell(&runtimeapi.ContainerConfig{Command: []string{"sh", "-c", "sleep 1"}, Stdin: true}) ||
		interactiveShell(&runtimeapi.ContainerConfig{Command: []string{"sh"}}) {
		t.Error("a shell running a script, or without stdin, is no interactive shell")
	}
}
