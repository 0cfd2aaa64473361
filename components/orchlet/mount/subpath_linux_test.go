package mount

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// The subPath walk opens no symlink, so one swapped in after the check is refused rather than
// followed; a subPath whose symlinks resolve outside the volume is refused before any mount.
func TestSubPathSafeOpen(t *testing.T) {
	vol, outside := t.TempDir(), t.TempDir()
	if err := os.MkdirAll(filepath.Join(vol, "a", "b"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, to := range map[string]string{"link": "a", "out": outside} {
		if err := os.Symlink(to, filepath.Join(vol, name)); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		subPath, wantErr string
	}{
		{"a/b", ""},
		{"a/./b", ""},
		{"link/b", "goes through a symlink"},
		{"out", "goes through a symlink"},
		{"a/../../x", "goes above volume"},
		{"a/missing", "no such file or directory"},
	} {
		fd, err := safeOpen(vol, c.subPath)
		if err == nil {
			unix.Close(fd)
		}
		if c.wantErr == "" && err != nil || c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)) {
			t.Errorf("safeOpen %q: %v, want %q", c.subPath, err, c.wantErr)
		}
	}
	target := filepath.Join(t.TempDir(), "target")
	if err := (SubPaths{}).BindSubPath(vol, "out", target); err == nil || !strings.Contains(err.Error(), "not within volume path") {
		t.Errorf("BindSubPath through a symlink out of the volume: %v", err)
	}
	if _, err := os.Stat(target); !os.IsNotExist(err) {
		t.Errorf("a target was made for a refused subPath: %v", err)
	}
}
