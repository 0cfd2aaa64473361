//go:build linux

package sources

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// The events fsnotify asks inotify for, which Kubernetes' file source watches: entries created,
// written, chmod-ed, removed and renamed, and the watched path itself removed or moved.
const inotifyMask = unix.IN_CREATE | unix.IN_MODIFY | unix.IN_ATTRIB | unix.IN_DELETE |
	unix.IN_MOVED_FROM | unix.IN_MOVED_TO | unix.IN_DELETE_SELF | unix.IN_MOVE_SELF

// inotifyNotifier watches a manifest directory or file with inotify.
type inotifyNotifier struct{ path string }

func osNotifier(path string) Notifier { return inotifyNotifier{path: path} }

// Notify watches the path until ctx ends, the path is removed or moved (ErrPathMissing), or
// reading the events fails. Entries whose names begin with "." are not reported, as in Kubernetes;
// a queue overflow is reported as changed(""), since a full read covers whatever was lost.
func (n inotifyNotifier) Notify(ctx context.Context, changed func(name string)) error {
	if _, err := os.Stat(n.path); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("%s: %w", n.path, ErrPathMissing)
		}
		return err
	}
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return fmt.Errorf("unable to create inotify: %w", err)
	}
	// A non-blocking descriptor is read through Go's poller, so closing it ends a pending Read.
	f := os.NewFile(uintptr(fd), "inotify")
	defer f.Close()
	if _, err := unix.InotifyAddWatch(fd, n.path, inotifyMask); err != nil {
		return fmt.Errorf("unable to create inotify for path %q: %w", n.path, err)
	}
	stop := context.AfterFunc(ctx, func() { f.Close() })
	defer stop()
	changed("")
	buf := make([]byte, 64*(unix.SizeofInotifyEvent+unix.NAME_MAX+1))
	for {
		size, err := f.Read(buf)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("error while watching %q: %w", n.path, err)
		}
		for off := 0; off+unix.SizeofInotifyEvent <= size; {
			mask := binary.NativeEndian.Uint32(buf[off+4:])
			nameLen := int(binary.NativeEndian.Uint32(buf[off+12:]))
			start := off + unix.SizeofInotifyEvent
			off = min(start+nameLen, size)
			name := strings.TrimRight(string(buf[start:off]), "\x00")
			switch {
			case mask&unix.IN_Q_OVERFLOW != 0:
				changed("")
			case mask&(unix.IN_DELETE_SELF|unix.IN_MOVE_SELF|unix.IN_IGNORED) != 0:
				changed("")
				return fmt.Errorf("%s removed or moved: %w", n.path, ErrPathMissing)
			case name == "" && !strings.HasPrefix(filepath.Base(n.path), "."):
				changed(filepath.Base(n.path)) // the path is a file
			case name != "" && !strings.HasPrefix(name, "."):
				changed(name)
			}
		}
	}
}
