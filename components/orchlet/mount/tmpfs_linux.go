package mount

import (
	"fmt"
	"syscall"
)

// Tmpfs mounts emptyDir volumes of medium Memory as the kubelet's empty_dir plugin does.
type Tmpfs struct{}

// MountTmpfs mounts a tmpfs of size bytes (no limit when 0) on dir.
func (Tmpfs) MountTmpfs(dir string, size int64) error {
	opts := ""
	if size > 0 {
		opts = fmt.Sprintf("size=%d", size)
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, opts); err != nil {
		return fmt.Errorf("mount -t tmpfs -o %s tmpfs %s: %w", opts, dir, err)
	}
	return nil
}

// Unmount unmounts dir.
func (Tmpfs) Unmount(dir string) error {
	if err := syscall.Unmount(dir, 0); err != nil {
		return fmt.Errorf("umount %s: %w", dir, err)
	}
	return nil
}
