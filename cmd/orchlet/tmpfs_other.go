//go:build !linux

package main

import "orch.io/orch/components/orchlet/pods/volumes"

// hostTmpfs: only Linux mounts a tmpfs here; Memory emptyDir volumes are refused elsewhere.
func hostTmpfs() volumes.Mounter { return nil }
