//go:build !linux

package main

import "orch.io/orch/components/orchlet/pods/volumes"

// hostSubPaths: only Linux bind-mounts here; elsewhere the runtime is given the path itself.
func hostSubPaths() volumes.SubPathMounter { return nil }
