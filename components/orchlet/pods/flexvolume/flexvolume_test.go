package flexvolume

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// driver is a flexVolume driver script: it logs each call and answers as $ANSWER_<op> says, or
// Success; init reports attach as $ATTACH (false by default).
const driver = `#!/bin/sh
echo "$*" >> "$(dirname "$0")/calls"
case "$1" in
init) [ -n "$NOCAPS" ] && { echo '{"status": "Success"}'; exit 0; }
      echo '{"status": "Success", "capabilities": {"attach": false}}' ;;
mount) [ -n "$FAILMOUNT" ] && { echo '{"status": "Failure", "message": "no such share"}'; exit 1; }
       echo '{"status": "Success"}' ;;
unmount) echo '{"status": "Success"}' ;;
*) echo '{"status": "Not supported"}' ;;
esac
`

func install(t *testing.T, dir, name string) string {
	t.Helper()
	d := filepath.Join(dir, PluginDir(name))
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(d, filepath.Base(name)), []byte(driver), 0o755); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(d, "calls")
}

func calls(t *testing.T, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSpace(string(data)), "\n")
}

// The kubelet's driver calls: init once per driver, then mount <dir> <JSON options> and
// unmount <dir>.
func TestMountAndUnmount(t *testing.T) {
	dir := t.TempDir()
	log := install(t, dir, "example.com/nfs")
	p := New(dir)
	ctx := context.Background()
	for range 2 {
		if err := p.Mount(ctx, "example.com/nfs", "/pods/u/volumes/example.com~nfs/data", map[string]string{"kubernetes.io/readwrite": "rw", "share": "/srv"}); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Unmount(ctx, "example.com/nfs", "/pods/u/volumes/example.com~nfs/data"); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"init",
		`mount /pods/u/volumes/example.com~nfs/data {"kubernetes.io/readwrite":"rw","share":"/srv"}`,
		`mount /pods/u/volumes/example.com~nfs/data {"kubernetes.io/readwrite":"rw","share":"/srv"}`,
		"unmount /pods/u/volumes/example.com~nfs/data",
	}
	if got := calls(t, log); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("calls\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// A driver that is not there, one that needs attaching, and a mount the driver refuses are errors
// naming what failed.
func TestDriverFailures(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	p := New(dir)
	if err := p.Mount(ctx, "example.com/absent", "/d", nil); err == nil || !strings.Contains(err.Error(), `no volume plugin matched: flexVolume driver "example.com/absent" not found`) {
		t.Errorf("absent driver: %v", err)
	}
	install(t, dir, "example.com/nfs")
	t.Setenv("FAILMOUNT", "1")
	if err := p.Mount(ctx, "example.com/nfs", "/d", nil); err == nil || !strings.Contains(err.Error(), "driver call nfs mount failed: no such share") {
		t.Errorf("refused mount: %v", err)
	}
	t.Setenv("NOCAPS", "1")
	install(t, dir, "example.com/san")
	if err := New(dir).Mount(ctx, "example.com/san", "/d", nil); err == nil || !strings.Contains(err.Error(), `flexVolume driver "example.com/san" needs attaching`) {
		t.Errorf("a driver that needs attaching: %v", err)
	}
}
