package volumestats

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// Usage is a directory tree's disk usage.
type Usage struct {
	Bytes, Inodes uint64
}

// DiskUsage is du -s of path, as the kubelet's fs.DiskUsage measures a volume or a log directory:
// the blocks every file and directory holds (512 bytes each), a hard-linked file once, and the
// inodes; it stays on path's filesystem. A file removed while walking is skipped.
func DiskUsage(path string) (Usage, error) { return walk(path, false) }

// ApparentUsage counts file sizes instead of blocks (du --apparent-size): what was written,
// whatever the filesystem's block size, for a simulated node whose traces must not depend on it.
func ApparentUsage(path string) (Usage, error) { return walk(path, true) }

type inode struct{ dev, ino uint64 }

func walk(root string, apparent bool) (Usage, error) {
	var u Usage
	var rootDev uint64
	seen := map[inode]bool{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) && path != root {
				return nil
			}
			return err
		}
		var st syscall.Stat_t
		if err := syscall.Lstat(path, &st); err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return &os.PathError{Op: "lstat", Path: path, Err: err}
		}
		dev := uint64(st.Dev)
		if path == root {
			rootDev = dev
		} else if dev != rootDev {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if st.Nlink > 1 && !d.IsDir() {
			id := inode{dev, uint64(st.Ino)}
			if seen[id] {
				return nil
			}
			seen[id] = true
		}
		u.Inodes++
		switch {
		case !apparent:
			u.Bytes += uint64(st.Blocks) * 512
		case d.Type().IsRegular():
			u.Bytes += uint64(st.Size)
		}
		return nil
	})
	return u, err
}
