package app

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// rootDirLock is the file inside --root-dir that a running agent holds: two agents on one root
// directory would fight over its checkpoints, pod directories and logs.
const rootDirLock = "orchlet.lock"

// lockRootDir makes the root directory and takes an exclusive flock of its lock file, writing the
// holder's pid into it, or fails at once naming --root-dir and the pid of the agent holding it. The
// kernel drops a flock when its holder dies, so an agent started again after a kill is never
// refused. heldLockFile is --lock-file, already held by this agent: when it is the same file its
// lock stands for both (a second open would contend with our own and, under
// --exit-on-lock-contention, stop us).
func lockRootDir(dir, heldLockFile string) (release func(), err error) {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("--root-dir %s: %w", dir, err)
	}
	path := filepath.Join(dir, rootDirLock)
	if heldLockFile != "" && sameFile(path, heldLockFile) {
		return func() {}, nil
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("--root-dir %s: %w", dir, err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		defer f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, fmt.Errorf("--root-dir %s is in use by another orchlet (%s, holding %s): stop it, or give this agent another --root-dir", dir, holder(f), path)
		}
		return nil, fmt.Errorf("--root-dir %s: locking %s: %w", dir, path, err)
	}
	err = f.Truncate(0)
	if err == nil {
		_, err = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("--root-dir %s: writing %s: %w", dir, path, err)
	}
	return func() { _ = f.Close() }, nil
}

// holder names the pid the lock's holder wrote, or says it has not written it yet.
func holder(f *os.File) string {
	b := make([]byte, 32)
	n, _ := f.ReadAt(b, 0)
	if pid, err := strconv.Atoi(strings.TrimSpace(string(b[:n]))); err == nil && pid > 0 {
		return "pid " + strconv.Itoa(pid)
	}
	return "pid not yet written"
}

// sameFile reports whether a and b name one existing file.
func sameFile(a, b string) bool {
	sa, errA := os.Stat(a)
	sb, errB := os.Stat(b)
	return errA == nil && errB == nil && os.SameFile(sa, sb)
}
