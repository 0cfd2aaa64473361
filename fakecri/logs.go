package fakecri

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"orch.io/orch/fakecri/script"
	"orch.io/orch/fakecri/streams"
)

// logWriter is a running container's open log file. Like containerd's, it keeps writing to the
// file it opened, renamed or not, until ReopenContainerLog opens the path again.
type logWriter struct {
	spec    *script.LogSpec
	path    string
	f       *os.File
	written int
	// attached are the clients attached to the container (fakecri/streams), fed each line as written.
	attached []*streams.Attachment
}

func openLog(path string) (*os.File, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	return os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o640)
}

// startLogLocked opens c's log file when its rule scripts log lines; otherwise, with
// CreateLogFiles, it only makes the file.
func (r *Runtime) startLogLocked(c *container) error {
	if c.rule == nil || c.rule.Logs == nil {
		if !r.createLogs || !filepath.IsAbs(c.logPath) {
			return nil
		}
		r.noteLogLocked(c.logPath)
		f, err := openLog(c.logPath)
		if err != nil {
			return fmt.Errorf("failed to create container log file: %w", err)
		}
		return f.Close()
	}
	if c.logPath == "" {
		return fmt.Errorf("container %q scripts log lines but has no log path", c.id)
	}
	r.noteLogLocked(c.logPath)
	f, err := openLog(c.logPath)
	if err != nil {
		return fmt.Errorf("failed to create container log file: %w", err)
	}
	c.log = &logWriter{spec: c.rule.Logs, path: c.logPath, f: f}
	r.logging = append(r.logging, c)
	return nil
}

// noteLogLocked records a log file the runtime makes, and every directory above it, before it
// is made: LogsUnder answers from them.
func (r *Runtime) noteLogLocked(path string) {
	if r.logged == nil {
		r.logged = map[string]bool{}
	}
	for p := filepath.Clean(path); !r.logged[p]; p = filepath.Dir(p) {
		r.logged[p] = true
		if p == filepath.Dir(p) {
			break
		}
	}
}

// LogsUnder reports whether the runtime has made a log file at path or anywhere under it. A
// simulator whose runtime alone writes the pods' log directories (the agent only rotates and
// removes what is there) measures them without the kernel where the answer is no: nothing there.
func (r *Runtime) LogsUnder(path string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.logged) == 0 { // nothing logged on the node: no path to clean and look up
		return false
	}
	return r.logged[filepath.Clean(path)]
}

// writeLogLocked writes c's lines due up to until. A write that fails loses its lines, as a
// runtime's would on a full disk.
func (c *container) writeLogLocked(until time.Time) {
	w := c.log
	if w == nil {
		return
	}
	every := w.spec.Every.D()
	due := int(until.Sub(c.startedAt) / every)
	if w.spec.Count > 0 {
		due = min(due, w.spec.Count)
	}
	if due <= w.written {
		return
	}
	stream := w.spec.Stream
	if stream == "" {
		stream = "stdout"
	}
	var b strings.Builder
	for n := w.written + 1; n <= due; n++ {
		at := c.startedAt.Add(time.Duration(n) * every)
		line := strings.ReplaceAll(w.spec.Lines[(n-1)%len(w.spec.Lines)], "{n}", strconv.Itoa(n))
		fmt.Fprintf(&b, "%s %s F %s\n", at.UTC().Format(time.RFC3339Nano), stream, line)
		w.feed(stream, line)
	}
	w.written = due
	w.f.WriteString(b.String())
}

// stopLogLocked writes c's last lines, up to at, and closes its log file.
func (r *Runtime) stopLogLocked(c *container, at time.Time) {
	if c.log == nil {
		return
	}
	c.writeLogLocked(at)
	c.log.f.Close()
	c.log = nil
	for i, x := range r.logging {
		if x == c {
			r.logging = append(r.logging[:i], r.logging[i+1:]...)
			break
		}
	}
}

// writeLogsLocked brings every running container's log up to now.
func (r *Runtime) writeLogsLocked(now time.Time) {
	for _, c := range r.logging {
		c.writeLogLocked(now)
	}
}

// reopenLogLocked writes what is due to the file c has open, then opens its log path again,
// creating it when the agent moved the old file away.
func (c *container) reopenLogLocked(now time.Time) error {
	if c.log == nil {
		return nil
	}
	c.writeLogLocked(now)
	f, err := openLog(c.log.path)
	if err != nil {
		return err
	}
	c.log.f.Close()
	c.log.f = f
	return nil
}
