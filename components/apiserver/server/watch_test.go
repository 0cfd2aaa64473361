package server

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	eventsv1 "orch.io/orch/components/apis/events/v1"
)

type frame struct {
	Type   string          `json:"type"`
	Object json.RawMessage `json:"object"`
}

func (f frame) event(t *testing.T) *eventsv1.Event {
	t.Helper()
	e := &eventsv1.Event{}
	if err := json.Unmarshal(f.Object, e); err != nil {
		t.Fatal(err)
	}
	return e
}

// stream is an open watch: frames arrive on a channel that closes when the server ends the stream.
type stream struct {
	resp   *http.Response
	frames chan frame
	cancel context.CancelFunc
}

func (e *env) watch(path string) *stream {
	e.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, "GET", e.url+path, nil)
	if err != nil {
		e.t.Fatal(err)
	}
	resp, err := e.client.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	s := &stream{resp: resp, frames: make(chan frame, 1000), cancel: cancel}
	go func() {
		defer close(s.frames)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<22)
		for sc.Scan() {
			var f frame
			if err := json.Unmarshal(sc.Bytes(), &f); err != nil {
				f = frame{Type: "UNPARSABLE " + sc.Text()}
			}
			s.frames <- f
		}
	}()
	e.t.Cleanup(cancel)
	return s
}

// next waits for a frame; real time bounds only how long a broken server can hang the test.
func (s *stream) next(t *testing.T) frame {
	t.Helper()
	select {
	case f, ok := <-s.frames:
		if !ok {
			t.Fatal("watch stream ended")
		}
		return f
	case <-time.After(10 * time.Second):
		t.Fatal("no watch frame within 10s")
	}
	return frame{}
}

func (s *stream) expectEnd(t *testing.T) {
	t.Helper()
	select {
	case f, ok := <-s.frames:
		if ok {
			t.Fatalf("got frame %s %s, want the stream to end", f.Type, f.Object)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("stream did not end within 10s")
	}
}

func TestWatchFromResourceVersion(t *testing.T) {
	e := newEnv(t)
	a := e.create("a")
	s := e.watch(eventsPath + "?watch=true&resourceVersion=" + a.ResourceVersion)
	if s.resp.StatusCode != 200 || s.resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("watch answered %d %s", s.resp.StatusCode, s.resp.Header.Get("Content-Type"))
	}
	b := e.create("b")
	e.do("PATCH", eventsPath+"/b", `{"metadata":{"labels":{"seen":"yes"}}}`, "Content-Type", "application/merge-patch+json")
	e.do("DELETE", eventsPath+"/b", nil)
	want := []string{"ADDED", "MODIFIED", "DELETED"}
	for _, typ := range want {
		f := s.next(t)
		got := f.event(t)
		if f.Type != typ || got.Name != "b" || got.Kind != "Event" || got.APIVersion != "events.orch.io/v1" {
			t.Fatalf("frame %s %s, want %s of b", f.Type, f.Object, typ)
		}
		if typ == "ADDED" && got.ResourceVersion != fmt.Sprint(mustAtoi(t, b.ResourceVersion)) {
			t.Errorf("ADDED rv %s, create answered %s", got.ResourceVersion, b.ResourceVersion)
		}
	}
}

func mustAtoi(t *testing.T, s string) int {
	t.Helper()
	var n int
	if _, err := fmt.Sscan(s, &n); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestWatchWithoutVersionSendsCurrentState(t *testing.T) {
	e := newEnv(t)
	e.create("a")
	e.create("b")
	s := e.watch(eventsPath + "?watch=1")
	for _, name := range []string{"a", "b"} {
		if f := s.next(t); f.Type != "ADDED" || f.event(t).Name != name {
			t.Fatalf("initial frame %s %s, want ADDED %s", f.Type, f.Object, name)
		}
	}
	e.create("c")
	if f := s.next(t); f.Type != "ADDED" || f.event(t).Name != "c" {
		t.Fatalf("frame %s %s, want ADDED c", f.Type, f.Object)
	}
}

func TestWatchSendInitialEventsEndsWithBookmark(t *testing.T) {
	e := newEnv(t)
	e.create("a")
	s := e.watch(eventsPath + "?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true")
	if f := s.next(t); f.Type != "ADDED" || f.event(t).Name != "a" {
		t.Fatalf("frame %s %s", f.Type, f.Object)
	}
	f := s.next(t)
	b := f.event(t)
	if f.Type != "BOOKMARK" || b.Annotations["orch.io/initial-events-end"] != "true" || b.Annotations["k8s.io/initial-events-end"] != "true" || b.ResourceVersion == "" {
		t.Fatalf("frame %s %s, want the initial-events-end BOOKMARK", f.Type, f.Object)
	}
	e.do("GET", eventsPath+"?watch=true&sendInitialEvents=true", nil).expectStatus(t, 400, metav1.StatusReasonBadRequest)
}

func TestWatchTooOldIsError410(t *testing.T) {
	e := newEnv(t)
	first := e.create("a")
	e.create("b")
	rev, _ := e.store.Revision(context.Background())
	if err := e.store.Compact(context.Background(), rev); err != nil {
		t.Fatal(err)
	}
	s := e.watch(eventsPath + "?watch=true&resourceVersion=" + first.ResourceVersion)
	if s.resp.StatusCode != 200 {
		t.Fatalf("code %d, want 200 with an ERROR frame", s.resp.StatusCode)
	}
	f := s.next(t)
	var st metav1.Status
	if err := json.Unmarshal(f.Object, &st); err != nil {
		t.Fatal(err)
	}
	if f.Type != "ERROR" || st.Kind != "Status" || st.Code != 410 || st.Reason != metav1.StatusReasonExpired || st.Message != "The resourceVersion for the provided watch is too old." {
		t.Fatalf("frame %s %s", f.Type, f.Object)
	}
	s.expectEnd(t)
}

func TestWatchTimeoutAndBookmarksFollowTheClock(t *testing.T) {
	e := newEnv(t)
	a := e.create("a")
	s := e.watch(eventsPath + "?watch=true&allowWatchBookmarks=true&timeoutSeconds=150&resourceVersion=" + a.ResourceVersion)
	// The ticker starts with the stream; keep nudging the clock until the first bookmark arrives.
	var bookmark frame
	for i := 0; i < 100 && bookmark.Type == ""; i++ {
		e.clock.Add(time.Second)
		select {
		case f := <-s.frames:
			bookmark = f
		case <-time.After(20 * time.Millisecond):
		}
	}
	if bookmark.Type != "BOOKMARK" || bookmark.event(t).ResourceVersion != a.ResourceVersion {
		t.Fatalf("frame %s %s, want a BOOKMARK at %s", bookmark.Type, bookmark.Object, a.ResourceVersion)
	}
	e.clock.Add(150 * time.Second)
	for {
		select {
		case f, ok := <-s.frames:
			if !ok {
				return
			}
			if f.Type != "BOOKMARK" {
				t.Fatalf("unexpected frame %s", f.Type)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("watch did not end at timeoutSeconds")
		}
	}
}

func TestWatchSelectors(t *testing.T) {
	e := newEnv(t)
	s := e.watch(eventsPath + "?watch=true&labelSelector=app%3Ddb&resourceVersion=1")
	e.create("web")
	db := sample("db")
	db["metadata"] = map[string]any{"name": "db", "labels": map[string]any{"app": "db"}}
	e.do("POST", eventsPath, db)
	if f := s.next(t); f.Type != "ADDED" || f.event(t).Name != "db" {
		t.Fatalf("frame %s %s, want only db", f.Type, f.Object)
	}
	// Relabelling moves events across the selection: in is ADDED, out is DELETED, as Kubernetes does.
	relabel := func(name, app string) string {
		r := e.do("PATCH", eventsPath+"/"+name, `{"metadata":{"labels":{"app":"`+app+`"}}}`, "Content-Type", "application/merge-patch+json")
		if r.code != 200 {
			t.Fatalf("relabel %s: %d %s", name, r.code, r.body)
		}
		return r.event(t).ResourceVersion
	}
	rv := relabel("web", "db")
	if f := s.next(t); f.Type != "ADDED" || f.event(t).Name != "web" || f.event(t).ResourceVersion != rv {
		t.Fatalf("frame %s %s, want web ADDED at %s", f.Type, f.Object, rv)
	}
	relabel("db", "db2")
	relabel("web", "web")
	for _, want := range []string{"db", "web"} {
		f := s.next(t)
		if got := f.event(t); f.Type != "DELETED" || got.Name != want || got.Labels["app"] != "db" {
			t.Fatalf("frame %s %s, want %s DELETED with its old labels", f.Type, f.Object, want)
		}
	}
}

// Hundreds of concurrent watchers each see every change.
func TestManyWatchers(t *testing.T) {
	e := newEnv(t)
	e.client.Transport.(*http.Transport).MaxConnsPerHost = 0
	const watchers = 200
	a := e.create("a")
	streams := make([]*stream, watchers)
	for i := range streams {
		streams[i] = e.watch(eventsPath + "?watch=true&resourceVersion=" + a.ResourceVersion)
	}
	e.create("b")
	var wg sync.WaitGroup
	errs := make(chan string, watchers)
	for i, s := range streams {
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case f := <-s.frames:
				if f.Type != "ADDED" || !strings.Contains(string(f.Object), `"name":"b"`) {
					errs <- fmt.Sprintf("watcher %d got %s %s", i, f.Type, f.Object)
				}
			case <-time.After(20 * time.Second):
				errs <- fmt.Sprintf("watcher %d got nothing", i)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for msg := range errs {
		t.Error(msg)
	}
}
