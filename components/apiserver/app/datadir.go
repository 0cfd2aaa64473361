package app

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// embeddedEtcdFree fails when another process holds the embedded etcd under dir. etcd would wait
// for the lock on its database without a word, and without heeding a signal, for as long as the
// other process runs: a second server on the same --data-dir would hang at start.
func embeddedEtcdFree(dataDir, dir string) error {
	f, err := os.OpenFile(filepath.Join(dir, "member", "snap", "db"), os.O_RDWR, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	// bbolt takes the same lock, exclusive, for as long as etcd has the database open.
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return fmt.Errorf("--data-dir %s is in use by another process (another orch-apiserver?)", dataDir)
		}
		return err
	}
	return syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
}
