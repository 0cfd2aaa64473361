package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"orch.io/orch/components/orchlet/pods/volumes"
)

// subPaths bind-mounts subPaths as the kubelet's subpath_linux.go does: the path is opened one
// component at a time below the volume with O_NOFOLLOW (its doSafeOpen), and the runtime is given a
// bind mount of the descriptor, so that a symlink swapped in after the check leads nowhere else.
type subPaths struct{}

func (subPaths) BindSubPath(volume, subPath, target string) error {
	// As doBindSubPath: symlinks within the volume are resolved first, and what they resolve to
	// must stay in it; the walk then finds no symlink unless one was swapped in since.
	base, err := filepath.EvalSymlinks(volume)
	if err != nil {
		return err
	}
	real, err := filepath.EvalSymlinks(filepath.Join(volume, subPath))
	if err != nil {
		return err
	}
	rel, err := filepath.Rel(base, real)
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return fmt.Errorf("subpath %q not within volume path %q", real, base)
	}
	fd, err := safeOpen(base, rel)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fmt.Errorf("stat of %s: %w", subPath, err)
	}
	if err := os.MkdirAll(filepath.Dir(target), 0o750); err != nil {
		return err
	}
	if st.Mode&unix.S_IFMT == unix.S_IFDIR {
		err = os.Mkdir(target, 0o750)
	} else {
		var f *os.File
		if f, err = os.OpenFile(target, os.O_CREATE|os.O_EXCL|os.O_RDONLY, 0o640); err == nil {
			f.Close()
		}
	}
	if err != nil && !errors.Is(err, os.ErrExist) {
		return err
	}
	// A bind left by an earlier start of this agent is replaced, not stacked on.
	if err := unbind(target); err != nil {
		return err
	}
	source := "/proc/self/fd/" + strconv.Itoa(fd)
	if err := unix.Mount(source, target, "", unix.MS_BIND, ""); err != nil {
		return fmt.Errorf("bind-mounting %s on %s: %w", filepath.Join(volume, subPath), target, err)
	}
	return nil
}

func (subPaths) Unmount(target string) error { return unbind(target) }

// unbind unmounts target until it is no mount point (EINVAL) or gone.
func unbind(target string) error {
	for {
		err := unix.Unmount(target, unix.UMOUNT_NOFOLLOW)
		switch {
		case err == nil:
		case errors.Is(err, unix.EINVAL), errors.Is(err, unix.ENOENT):
			return nil
		default:
			return fmt.Errorf("umount %s: %w", target, err)
		}
	}
}

// safeOpen opens subPath below volume one component at a time, never following a symlink, and
// returns an O_PATH descriptor of it.
func safeOpen(volume, subPath string) (int, error) {
	fd, err := unix.Open(volume, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("opening volume %s: %w", volume, err)
	}
	for _, seg := range strings.Split(filepath.Clean(subPath), string(filepath.Separator)) {
		if seg == "." || seg == "" {
			continue
		}
		if seg == ".." {
			unix.Close(fd)
			return -1, fmt.Errorf("subpath %q goes above volume %s", subPath, volume)
		}
		next, err := unix.Openat(fd, seg, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		unix.Close(fd)
		if err != nil {
			return -1, fmt.Errorf("opening %s below volume %s without following symlinks: %w", subPath, volume, err)
		}
		var st unix.Stat_t
		if err := unix.Fstat(next, &st); err != nil {
			unix.Close(next)
			return -1, err
		}
		if st.Mode&unix.S_IFMT == unix.S_IFLNK {
			unix.Close(next)
			return -1, fmt.Errorf("subpath %q of volume %s goes through a symlink", subPath, volume)
		}
		fd = next
	}
	return fd, nil
}

// hostSubPaths is the host's subPath mounter, or nil when this process may not mount (not root):
// the runtime is then given the path below the volume.
func hostSubPaths() volumes.SubPathMounter {
	if os.Geteuid() != 0 {
		return nil
	}
	return subPaths{}
}
