package statefile

import (
	"os"
	"path/filepath"
	"testing"
)

func TestWrite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state", "cpu_manager_state")
	for _, content := range []string{`{"policyName":"none"}`, `{"policyName":"static"}`} {
		if err := Write(path, []byte(content)); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(path)
		if err != nil || string(got) != content {
			t.Fatalf("read back %q, %v; want %q", got, err, content)
		}
	}
	if _, err := os.Stat(path + ".tmp"); !os.IsNotExist(err) {
		t.Errorf("the temporary file is left behind: %v", err)
	}
	if st, err := os.Stat(path); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, %v; want 0600", st.Mode().Perm(), err)
	}
	// A directory where the file should be is an error, and the directory is untouched.
	dir := filepath.Join(t.TempDir(), "taken")
	if err := os.MkdirAll(filepath.Join(dir, "keep"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := Write(dir, []byte("x")); err == nil {
		t.Error("writing over a directory succeeded")
	}
	if _, err := os.Stat(filepath.Join(dir, "keep")); err != nil {
		t.Errorf("the directory was changed: %v", err)
	}
}
