package sources

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/fstest"
	"time"
)

// bodyTransport serves body with status 200 in-process, so a benchmark measures the poll, not a
// network round trip.
type bodyTransport struct{ body []byte }

func (t *bodyTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	return &http.Response{
		Status: "200 OK", StatusCode: http.StatusOK, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: http.Header{}, Body: io.NopCloser(bytes.NewReader(t.body)), ContentLength: int64(len(t.body)), Request: req,
	}, nil
}

// busySources is a node's sources as the simulator's busy node has them: 60 manifest files and a
// List of 50 pods at the manifest URL, polled every 20 seconds.
func busySources(b *testing.B) (*Sources, func()) {
	fsys := fstest.MapFS{}
	for i := range 60 {
		fsys[fmt.Sprintf("etc/m/file-%d.yaml", i)] = file(fmt.Sprintf("apiVersion: v1\nkind: Pod\nmetadata: {name: file-%d}\nspec:\n  containers:\n  - {name: app, image: \"app-%d:1\"}\n", i, i%10))
	}
	var list strings.Builder
	list.WriteString("apiVersion: v1\nkind: List\nitems:\n")
	for i := range 50 {
		fmt.Fprintf(&list, "- apiVersion: v1\n  kind: Pod\n  metadata: {name: http-%d}\n  spec:\n    containers:\n    - {name: app, image: \"web-%d:1\"}\n", i, i%10)
	}
	clk := newMock()
	s, err := New(Options{Clock: clk, NodeName: node, Reporter: ReporterFunc(func(p Problem) { b.Fatal(p) })},
		Poll{Source: &FileSource{FS: fsys, Path: "/etc/m"}, Every: 20 * time.Second},
		Poll{Source: &HTTPSource{Client: &http.Client{Transport: &bodyTransport{[]byte(list.String())}}, URL: "http://manifests.test/node-a"}, Every: 20 * time.Second})
	if err != nil {
		b.Fatal(err)
	}
	s.Step(context.Background())
	if us := s.Drain(); len(us) != 110 {
		b.Fatalf("first poll gave %d updates, want 110", len(us))
	}
	// The mock clock sleeps a millisecond per move, which is not the poll's cost.
	return s, func() {
		b.StopTimer()
		clk.Add(20 * time.Second)
		b.StartTimer()
	}
}

// BenchmarkPollUnchanged: one poll of both sources when no manifest changed.
func BenchmarkPollUnchanged(b *testing.B) {
	s, tick := busySources(b)
	b.ReportAllocs()
	for b.Loop() {
		tick()
		if n := s.Step(context.Background()); n != 2 {
			b.Fatalf("Step ran %d polls, want 2", n)
		}
		if us := s.Drain(); len(us) != 0 {
			b.Fatalf("an unchanged poll gave %d updates", len(us))
		}
	}
}

// BenchmarkReadUnchanged: the reads alone of such a poll, the least it can cost.
func BenchmarkReadUnchanged(b *testing.B) {
	s, _ := busySources(b)
	b.ReportAllocs()
	for b.Loop() {
		for _, p := range s.polls {
			if _, err := readDocs(context.Background(), p.Source); err != nil {
				b.Fatal(err)
			}
		}
	}
}
