//go:build !linux

package main

import "orch.io/orch/components/orchlet/pods"

// hostSubPaths: only Linux bind-mounts here; elsewhere the runtime is given the path itself.
func hostSubPaths() pods.SubPathMounter { return nil }
