package main

import (
	"fmt"
	"os"
	"syscall"

	"orch.io/orch/components/orchlet/pods/volumes"
)

// tmpfs mounts emptyDir volumes of medium Memory as the kubelet's empty_dir plugin does.
type tmpfs struct{}

func (tmpfs) MountTmpfs(dir string, size int64) error {
	opts := ""
	if size > 0 {
		opts = fmt.Sprintf("size=%d", size)
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, opts); err != nil {
		return fmt.Errorf("mount -t tmpfs -o %s tmpfs %s: %w", opts, dir, err)
	}
	return nil
}

func (tmpfs) Unmount(dir string) error {
	if err := syscall.Unmount(dir, 0); err != nil {
		return fmt.Errorf("umount %s: %w", dir, err)
	}
	return nil
}

// hostTmpfs is the host's tmpfs mounter, or nil when this process may not mount (not root), so
// that Memory emptyDir volumes are refused at admission rather than failing at setup.
func hostTmpfs() volumes.Mounter {
	if os.Geteuid() != 0 {
		return nil
	}
	return tmpfs{}
}
