package imagegc

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// Statfs reads a real filesystem's size, as cadvisor does for the kubelet: available is what an
// unprivileged writer may still use (f_bavail).
type Statfs struct{}

// FsInfo statfs's the mountpoint.
func (Statfs) FsInfo(mountpoint string) (capacity, available uint64, err error) {
	var st unix.Statfs_t
	if err := unix.Statfs(mountpoint, &st); err != nil {
		return 0, 0, fmt.Errorf("statfs %s: %w", mountpoint, err)
	}
	bs := uint64(st.Bsize)
	return st.Blocks * bs, st.Bavail * bs, nil
}
