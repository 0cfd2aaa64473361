package volumes

import (
	"net"
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/ptr"
)

// The host_path plugin's checkTypeInternal, with its messages.
func TestHostPathTypes(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "s.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for _, c := range []struct {
		path   string
		typ    corev1.HostPathType
		want   string
		create string // "dir" or "file": what the check made
	}{
		{filepath.Join(dir, "new/dir"), corev1.HostPathDirectoryOrCreate, "", "dir"},
		{dir, corev1.HostPathDirectory, "", ""},
		{file, corev1.HostPathDirectory, "hostPath type check failed: " + file + " is not a directory", ""},
		{filepath.Join(dir, "missing"), corev1.HostPathDirectory, "hostPath type check failed: " + filepath.Join(dir, "missing") + " is not a directory", ""},
		{file, corev1.HostPathDirectoryOrCreate, "hostPath type check failed: " + file + " is not a directory", ""},
		{filepath.Join(dir, "sub/new-file"), corev1.HostPathFileOrCreate, "", "file"},
		{file, corev1.HostPathFile, "", ""},
		{dir, corev1.HostPathFile, "hostPath type check failed: " + dir + " is not a file", ""},
		{sock, corev1.HostPathSocket, "", ""},
		{file, corev1.HostPathSocket, "hostPath type check failed: " + file + " is not a socket file", ""},
		{"/dev/null", corev1.HostPathCharDev, "", ""},
		{file, corev1.HostPathCharDev, "hostPath type check failed: " + file + " is not a character device", ""},
		{"/dev/null", corev1.HostPathBlockDev, "hostPath type check failed: /dev/null is not a block device", ""},
		{dir, corev1.HostPathUnset, "", ""},
		{dir, "Other", "Other is an invalid volume type", ""},
	} {
		err := checkHostPathType(c.path, &c.typ)
		if got := errText(err); got != c.want {
			t.Errorf("%s %s: %q, want %q", c.typ, c.path, got, c.want)
		}
		if c.create != "" {
			fi, err := os.Stat(c.path)
			if err != nil || fi.IsDir() != (c.create == "dir") {
				t.Errorf("%s %s: not created as a %s: %v", c.typ, c.path, c.create, err)
			}
		}
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// A bidirectional mount needs a privileged container (translateMountPropagation).
func TestBidirectionalNeedsPrivileged(t *testing.T) {
	if _, err := mountPropagation(ptr.To(corev1.MountPropagationBidirectional), false); err == nil {
		t.Error("bidirectional accepted for an unprivileged container")
	}
	if p, err := mountPropagation(ptr.To(corev1.MountPropagationBidirectional), true); err != nil || p != runtimeapi.MountPropagation_PROPAGATION_BIDIRECTIONAL {
		t.Errorf("%v %v", p, err)
	}
}
