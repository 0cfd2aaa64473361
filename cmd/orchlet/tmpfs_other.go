//go:build !linux

package main

import "orch.io/orch/components/orchlet/pods"

// hostTmpfs: only Linux mounts a tmpfs here; Memory emptyDir volumes are refused elsewhere.
func hostTmpfs() pods.Mounter { return nil }
