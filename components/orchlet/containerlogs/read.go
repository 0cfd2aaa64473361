package containerlogs

import (
	"bufio"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/benbjohnson/clock"
	corev1 "k8s.io/api/core/v1"
)

// timeFormatOut is how the kubelet writes a line's time when timestamps are asked for.
const timeFormatOut = "2006-01-02T15:04:05.000000000Z07:00"

// AllLogs is a container's log files oldest first: the rotated ones still in use, then the live
// one at log, as the kubelet's GetAllLogs lists them.
func AllLogs(log string) ([]string, error) {
	logs, err := filepath.Glob(globEscape(log) + ".*")
	if err != nil {
		return nil, fmt.Errorf("failed to list all log files of %q: %w", log, err)
	}
	inuse, _ := filterUnusedLogs(logs)
	sort.Strings(inuse)
	return append(inuse, log), nil
}

// Follow makes ReadLogs go on writing what the container writes after what its files hold, as
// kubectl logs -f asks.
type Follow struct {
	Clock clock.Clock
	// Running says whether the container still runs; once it does not, the live file is read to
	// its end and ReadLogs returns.
	Running func(ctx context.Context) bool
	// Watch, when set, answers a watch of the live log's directory (inotify on the real node; nil
	// where there is none), so that a line is read as soon as the runtime writes it, as the
	// kubelet's follower wakes on fsnotify; the poll on Clock stays for what a watch misses.
	Watch func(dir string) Notifier
}

// Notifier tells of changes under a watched path until ctx ends (sources.Notifier's shape).
type Notifier interface {
	Notify(ctx context.Context, changed func(name string)) error
}

const (
	// followPoll is how often a follower looks for new lines and for a rotation.
	followPoll = 250 * time.Millisecond
	// stateCheckPeriod is how often a follower asks whether the container runs, the kubelet's.
	stateCheckPeriod = 5 * time.Second
)

// ReadLogs writes the messages of the CRI log at log, across its rotated files oldest first, as
// opts asks: the last TailLines lines, those not before SinceTime (or SinceSeconds before now),
// of Stream alone when it names Stdout or Stderr, each after its time with Timestamps, and at
// most LimitBytes bytes, as the kubelet's ReadLogs does with one file; with Follow and follow set it then follows the live file, through its
// rotations, until the container stops or ctx ends. A partial line ("P" tag) is joined to the
// rest of it, even across files. Lines not in the CRI format are skipped, as the kubelet skips
// them. It answers an error wrapping fs.ErrNotExist when the container has no log file at all.
func ReadLogs(ctx context.Context, log string, opts *corev1.PodLogOptions, now time.Time, out io.Writer, follow *Follow) error {
	if opts == nil {
		opts = &corev1.PodLogOptions{}
	}
	files, err := AllLogs(log)
	if err != nil {
		return err
	}
	var since time.Time
	switch {
	case opts.SinceTime != nil:
		since = opts.SinceTime.Time
	case opts.SinceSeconds != nil:
		since = now.Add(-time.Duration(*opts.SinceSeconds) * time.Second)
	}
	w := out
	if opts.LimitBytes != nil {
		w = &limitWriter{w: out, left: *opts.LimitBytes}
	}
	r := &reader{since: since, timestamps: opts.Timestamps, out: w, tail: -1}
	if opts.Stream != nil && *opts.Stream != corev1.LogStreamAll {
		r.stream = strings.ToLower(*opts.Stream)
	}
	if opts.TailLines != nil {
		r.tail = int(*opts.TailLines)
	}
	err = r.read(ctx, log, files[:len(files)-1], opts.Follow && follow != nil, follow)
	if errors.Is(err, errLimit) {
		return nil
	}
	return err
}

func (r *reader) read(ctx context.Context, log string, rotated []string, following bool, follow *Follow) error {
	found := false
	for _, f := range rotated {
		if err := ctx.Err(); err != nil {
			return err
		}
		ok, err := r.readFile(f)
		if err != nil {
			return err
		}
		found = found || ok
	}
	live := &liveFile{path: log}
	defer live.close()
	if err := live.open(); err != nil {
		return err
	}
	if live.f == nil && !found {
		return fmt.Errorf("log file %s: %w", log, fs.ErrNotExist)
	}
	if err := live.readLines(r); err != nil {
		return err
	}
	if !following {
		return r.finish(live)
	}
	// The lines so far are written as asked; from now on each is written as it comes.
	if err := r.flushTail(); err != nil {
		return err
	}
	r.tail = -1
	wake := watch(ctx, follow, log)
	checked := follow.Clock.Now()
	for {
		t := follow.Clock.Timer(followPoll)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		case <-wake:
			t.Stop()
		}
		if err := live.readLines(r); err != nil {
			return err
		}
		if err := live.reopenIfRotated(r); err != nil {
			return err
		}
		if follow.Clock.Since(checked) >= stateCheckPeriod {
			checked = follow.Clock.Now()
			if !follow.Running(ctx) {
				if err := live.readLines(r); err != nil {
					return err
				}
				return r.finish(live)
			}
		}
	}
}

// watch starts follow's watch of the live log's directory, if it has one, until ctx ends, and
// answers a channel that holds a value once something there changed since the last read (nil,
// which never receives, without a watch).
func watch(ctx context.Context, follow *Follow, log string) <-chan struct{} {
	if follow.Watch == nil {
		return nil
	}
	n := follow.Watch(filepath.Dir(log))
	if n == nil {
		return nil
	}
	wake := make(chan struct{}, 1)
	go func() {
		// A failed watch leaves the poll alone to follow; ctx's end ends it.
		_ = n.Notify(ctx, func(string) {
			select {
			case wake <- struct{}{}:
			default:
			}
		})
	}()
	return wake
}

// liveFile is the log file the runtime writes, read as it grows. The runtime may be writing its
// last line: an unterminated end waits in carry for the rest.
type liveFile struct {
	path  string
	f     *os.File
	br    *bufio.Reader
	carry string
}

// open opens the path; a missing file (renamed, not yet reopened by the runtime) leaves f nil.
func (l *liveFile) open() error {
	f, err := os.Open(l.path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	l.f, l.br = f, bufio.NewReaderSize(f, 64*1024)
	return nil
}

func (l *liveFile) close() {
	if l.f != nil {
		l.f.Close()
	}
}

// readLines parses every whole line written since the last read.
func (l *liveFile) readLines(r *reader) error {
	if l.f == nil {
		return nil
	}
	for {
		s, err := l.br.ReadString('\n')
		if errors.Is(err, io.EOF) {
			l.carry += s
			return nil
		}
		if err != nil {
			return fmt.Errorf("log file %s: %w", l.path, err)
		}
		line := l.carry + s
		l.carry = ""
		if err := r.parse(strings.TrimSuffix(line, "\n")); err != nil {
			return err
		}
	}
}

// reopenIfRotated moves to the file at the path once it is another than the one read: rotation
// renamed the old one, whose rest was read first, and the runtime opened a new one.
func (l *liveFile) reopenIfRotated(r *reader) error {
	st, err := os.Stat(l.path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if l.f != nil {
		cur, err := l.f.Stat()
		if err != nil {
			return err
		}
		if os.SameFile(st, cur) {
			return nil
		}
		if err := l.readLines(r); err != nil {
			return err
		}
		l.f.Close()
		l.f = nil
	}
	if err := l.open(); err != nil {
		return err
	}
	return l.readLines(r)
}

// line is one message, whole, and the time of its first part.
type line struct {
	at   time.Time
	text string
}

type reader struct {
	since      time.Time
	timestamps bool
	out        io.Writer
	// tail is how many last lines to keep; -1 writes each line as it is read.
	tail    int
	last    []line
	partial strings.Builder
	first   time.Time // of the partial line
	// stream is the CRI stream kept ("stdout" or "stderr"), "" for both.
	stream string
}

// readFile reads one rotated file, false when it is gone: a rotated file may be gzipped, and then
// removed, between listing and reading.
func (r *reader) readFile(p string) (bool, error) {
	f, err := os.Open(p)
	if errors.Is(err, fs.ErrNotExist) && !strings.HasSuffix(p, compressSuffix) {
		p += compressSuffix
		f, err = os.Open(p)
	}
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	defer f.Close()
	var in io.Reader = f
	if strings.HasSuffix(p, compressSuffix) {
		gz, err := gzip.NewReader(f)
		if err != nil {
			return true, fmt.Errorf("log file %s: %w", p, err)
		}
		defer gz.Close()
		in = gz
	}
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64*1024), 16*1024*1024)
	for sc.Scan() {
		if err := r.parse(sc.Text()); err != nil {
			return true, err
		}
	}
	if err := sc.Err(); err != nil {
		return true, fmt.Errorf("log file %s: %w", p, err)
	}
	return true, nil
}

// parse takes one CRI log line: "<RFC 3339 nano time> <stream> <P|F> <message>".
func (r *reader) parse(s string) error {
	fields := strings.SplitN(s, " ", 4)
	if len(fields) < 3 {
		return nil
	}
	at, err := time.Parse(time.RFC3339Nano, fields[0])
	if err != nil || (r.stream != "" && fields[1] != r.stream) {
		return nil
	}
	if r.partial.Len() == 0 {
		r.first = at
		if r.timestamps {
			r.partial.WriteString(at.Format(timeFormatOut) + " ")
		}
	}
	if len(fields) == 4 {
		r.partial.WriteString(fields[3])
	}
	if fields[2] == "P" {
		return nil
	}
	r.partial.WriteByte('\n')
	return r.done()
}

// done ends the line being built: kept among the last lines, or written.
func (r *reader) done() error {
	l := line{at: r.first, text: r.partial.String()}
	r.partial.Reset()
	switch {
	case r.tail < 0:
		return r.write(l)
	case r.tail == 0:
	case len(r.last) < r.tail:
		r.last = append(r.last, l)
	default:
		copy(r.last, r.last[1:])
		r.last[len(r.last)-1] = l
	}
	return nil
}

func (r *reader) write(l line) error {
	if l.at.Before(r.since) {
		return nil
	}
	_, err := io.WriteString(r.out, l.text)
	return err
}

// finish ends the reading: a line the runtime left unterminated, then a last partial line, are
// taken as they are, and the kept last lines written.
func (r *reader) finish(live *liveFile) error {
	if live.carry != "" {
		if err := r.parse(live.carry); err != nil {
			return err
		}
		live.carry = ""
	}
	if r.partial.Len() > 0 {
		if err := r.done(); err != nil {
			return err
		}
	}
	return r.flushTail()
}

// flushTail writes the kept last lines.
func (r *reader) flushTail() error {
	for _, l := range r.last {
		if err := r.write(l); err != nil {
			return err
		}
	}
	r.last = nil
	return nil
}

var errLimit = errors.New("limitBytes reached")

// limitWriter writes at most left bytes, then answers errLimit to stop the reading.
type limitWriter struct {
	w    io.Writer
	left int64
}

func (l *limitWriter) Write(p []byte) (int, error) {
	if l.left <= 0 {
		return 0, errLimit
	}
	cut := int64(len(p)) > l.left
	if cut {
		p = p[:l.left]
	}
	n, err := l.w.Write(p)
	l.left -= int64(n)
	if err == nil && cut {
		err = errLimit
	}
	return n, err
}
