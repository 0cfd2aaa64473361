package sim

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"net"
	"net/http"
	"path"
	"strings"
	"sync"
	"sync/atomic"
	"testing/fstest"
	"time"

	eventsv1 "orch.io/orch/components/apis/events/v1"
)

// observer collects what a node's fakes see, from whichever goroutine runs its Step, until the
// driver reads it at a settled point.
type observer struct {
	now func() time.Time
	// waiting is len(lines), kept where the driver reads it (Node.obsWaiting, on the Node's first
	// cache line): the looks ask it of every node several times a simulated second, and the
	// observer's struct was a cold line each time at 10,000 nodes.
	waiting *atomic.Int32
	mu      sync.Mutex
	lines   []observed
}

type observed struct {
	at   time.Time
	kind string
	text string
}

func (o *observer) add(kind, format string, args ...any) {
	o.addText(kind, fmt.Sprintf(format, args...))
}

// addText is add of a line already made.
func (o *observer) addText(kind, text string) {
	o.mu.Lock()
	o.lines = append(o.lines, observed{at: o.now(), kind: kind, text: text})
	o.waiting.Store(int32(len(o.lines)))
	o.mu.Unlock()
}

func (o *observer) take() []observed {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := o.lines
	o.lines = nil
	o.waiting.Store(0)
	return out
}

// memFS is a node's filesystem: its manifest directory and nothing else (--resolv-conf reads as
// missing, so pods get the runtime's default resolver). Writes replace the whole map, so a reader
// works on the snapshot it opened; listing the manifest directory is a traced source read.
type memFS struct {
	dir string // the manifest directory as an io/fs path
	obs *observer
	mu  sync.Mutex
	m   fstest.MapFS
}

func (f *memFS) current() fstest.MapFS {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.m
}

func (f *memFS) Open(name string) (fs.File, error) { return f.current().Open(name) }

// Stat traces a poll that finds no manifest directory, which the file source reads as empty
// without listing it.
func (f *memFS) Stat(name string) (fs.FileInfo, error) {
	info, err := f.current().Stat(name)
	if err != nil && name == f.dir {
		f.obs.add(KindSource, "file read /%s: %v", name, errors.Unwrap(err))
	}
	return info, err
}

func (f *memFS) ReadDir(name string) ([]fs.DirEntry, error) {
	entries, err := f.current().ReadDir(name)
	if name == f.dir {
		names := make([]string, len(entries))
		for i, e := range entries {
			names[i] = e.Name()
		}
		if err != nil {
			f.obs.add(KindSource, "file read /%s: %v", name, err)
		} else {
			f.obs.add(KindSource, "file read /%s: [%s]", name, strings.Join(names, " "))
		}
	}
	return entries, err
}

func (f *memFS) write(name string, data []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	m := maps.Clone(f.m)
	m[path.Join(f.dir, name)] = &fstest.MapFile{Data: data, Mode: 0o644}
	f.m = m
}

func (f *memFS) remove(name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	m := maps.Clone(f.m)
	delete(m, path.Join(f.dir, name))
	f.m = m
}

// manifestServer answers the node's HTTP requests in-process: the manifest URL serves the document
// the timeline last set; every other URL (an httpGet probe) finds no server.
type manifestServer struct {
	url    string
	obs    *observer
	mu     sync.Mutex
	status int
	body   []byte
}

func (s *manifestServer) serve(status int, body []byte) {
	s.mu.Lock()
	s.status, s.body = status, body
	s.mu.Unlock()
}

func (s *manifestServer) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.String() != s.url {
		return nil, fmt.Errorf("sim: no server at %s", req.URL)
	}
	s.mu.Lock()
	status, body := s.status, s.body
	s.mu.Unlock()
	s.obs.add(KindSource, "http %s %s -> %d (%d bytes)", req.Method, s.url, status, len(body))
	return &http.Response{
		Status: fmt.Sprintf("%d %s", status, http.StatusText(status)), StatusCode: status,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: http.Header{}, Body: io.NopCloser(bytes.NewReader(body)), ContentLength: int64(len(body)), Request: req,
	}, nil
}

// refuseDial is the node's network for tcpSocket probes: nothing listens in the simulation.
func refuseDial(_ context.Context, network, address string) (net.Conn, error) {
	return nil, fmt.Errorf("sim: dial %s %s: %w", network, address, errors.ErrUnsupported)
}

// traceSink is the node's event sink: every write is a trace line.
type traceSink struct{ obs *observer }

func (s traceSink) Create(_ context.Context, e *eventsv1.Event) (*eventsv1.Event, error) {
	s.obs.add(KindEvent, "create %s", eventText(e))
	return e, nil
}

func (s traceSink) Update(_ context.Context, e *eventsv1.Event) (*eventsv1.Event, error) {
	s.obs.add(KindEvent, "update %s", eventText(e))
	return e, nil
}

// traceDrop traces an occurrence the event rate limit dropped, as the sink would have seen it.
func traceDrop(obs *observer) func(*eventsv1.Event, uint64) {
	return func(e *eventsv1.Event, total uint64) {
		obs.add(KindEvent, "%s%s (dropped by the rate limit, total %d)", dropPrefix, eventText(e), total)
	}
}

const dropPrefix = "dropped "

func eventText(e *eventsv1.Event) string {
	obj := e.Regarding.Namespace + "/" + e.Regarding.Name
	if e.Regarding.Namespace == "" {
		obj = strings.ToLower(e.Regarding.Kind) + "/" + e.Regarding.Name
	}
	if e.Regarding.FieldPath != "" {
		obj += " " + e.Regarding.FieldPath
	}
	s := fmt.Sprintf("%s %s %s: %s", e.Type, e.Reason, obj, e.Note)
	if e.Series != nil {
		s += fmt.Sprintf(" (series count %d)", e.Series.Count)
	}
	return s
}
