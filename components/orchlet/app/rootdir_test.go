package app

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/benbjohnson/clock"

	"orch.io/orch/components/orchlet/app/apptest"
	"orch.io/orch/components/orchlet/host"
)

func TestLockRootDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "root")
	release, err := lockRootDir(dir, "")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, rootDirLock)
	if b, err := os.ReadFile(path); err != nil || string(b) != fmt.Sprintf("%d\n", os.Getpid()) {
		t.Fatalf("lock file holds %q (%v), want the holder's pid", b, err)
	}
	want := fmt.Sprintf("--root-dir %s is in use by another orchlet (pid %d, holding %s)", dir, os.Getpid(), path)
	if _, err := lockRootDir(dir, ""); err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("second lock: %v, want %q", err, want)
	}
	release()
	release, err = lockRootDir(dir, "")
	if err != nil {
		t.Fatalf("after the release: %v", err)
	}
	release()

	// --lock-file naming the same file: the lock already held stands for the root directory's.
	lock, err := host.NewReal().Lock(path)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Release()
	release, err = lockRootDir(dir, path)
	if err != nil {
		t.Fatalf("--lock-file is the root directory's lock file: %v", err)
	}
	release()
	select {
	case <-lock.Contended():
		t.Fatal("taking the root directory contended for our own --lock-file")
	case <-time.After(200 * time.Millisecond): // the watch's reader is a goroutine
	}
}

func TestLockRootDirHolderNotYetWritten(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), rootDirLock))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if got := holder(f); got != "pid not yet written" {
		t.Fatalf("holder of an empty lock file = %q", got)
	}
}

// Run refuses a second agent on a root directory a running one holds, before it reaches the
// runtime.
func TestRunRefusesAHeldRootDir(t *testing.T) {
	root := t.TempDir()
	release, err := lockRootDir(root, "")
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	err = Run(context.Background(), parse(t, apptest.WithRuntime(t, "--root-dir="+root)...), host.NewFake(), clock.NewMock())
	if err == nil || !strings.Contains(err.Error(), "--root-dir "+root+" is in use by another orchlet") {
		t.Fatalf("Run on a held root directory: %v", err)
	}
}
