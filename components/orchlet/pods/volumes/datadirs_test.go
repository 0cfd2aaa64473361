package volumes

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
)

// A pod's data directories stand after every MakePodDataDirs, whatever was removed or renamed
// under the pod's directory since the last: each change made at once after a call (within the
// file system's timestamp granularity, as a test goes), three times in a row, and after TearDown.
func TestMakePodDataDirsRemakesWhatWasRemoved(t *testing.T) {
	root := t.TempDir()
	m := New(Options{Recorder: &recorder{}, Logger: klog.Background(), Node: Node{RootDir: root}})
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web", UID: "uid-web"}}
	dir := filepath.Join(root, "pods", "uid-web")
	volumes, plugins := filepath.Join(dir, "volumes"), filepath.Join(dir, "plugins")
	sync := func(what string) {
		t.Helper()
		if err := m.MakePodDataDirs(pod); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		for _, d := range []string{dir, volumes, plugins} {
			if fi, err := os.Stat(d); err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o750 {
				t.Fatalf("%s: %s: %v %v", what, d, fi, err)
			}
		}
	}
	n := 0
	another := func() string { n++; return filepath.Join(dir, fmt.Sprintf("other-%d", n)) }
	for _, c := range []struct {
		name   string
		change func() error
	}{
		{"nothing", func() error { return nil }},
		{"plugins removed", func() error { return os.Remove(plugins) }},
		{"volumes removed", func() error { return os.Remove(volumes) }},
		{"plugins renamed", func() error { return os.Rename(plugins, another()) }},
		{"volumes removed and another directory made", func() error {
			if err := os.Remove(volumes); err != nil {
				return err
			}
			return os.Mkdir(another(), 0o750)
		}},
		{"the pod's directory removed", func() error { return os.RemoveAll(dir) }},
		{"the pod's directory made anew with plugins alone", func() error {
			if err := os.RemoveAll(dir); err != nil {
				return err
			}
			return os.MkdirAll(plugins, 0o750)
		}},
		{"torn down", func() error { return m.TearDown(pod) }},
	} {
		for i := range 3 {
			sync(c.name + ": before")
			sync(c.name + ": again") // the call that finds both standing and keeps the status
			if err := c.change(); err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			sync(c.name + ": after, " + string(rune('1'+i)))
		}
	}
}
