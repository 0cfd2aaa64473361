package sources

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"testing/fstest"
	"time"

	"github.com/benbjohnson/clock"

	"orch.io/orch/components/apis/orchlet/v1beta1"
)

// TestPollPeriod: each source is read at once on the first Step, then exactly once per period on the
// fake clock, never before the period has passed.
func TestPollPeriod(t *testing.T) {
	defaults := v1beta1.NewDefault()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(podYAML("web", "nginx")))
	}))
	defer srv.Close()
	cases := []struct {
		name   string
		source func() Source
		every  time.Duration
		want   []time.Duration
	}{
		{"file at the default", func() Source { return &FileSource{FS: fstest.MapFS{"m/a.yaml": file(podYAML("a", "x"))}, Path: "/m"} },
			defaults.FileCheckFrequency.Duration, []time.Duration{0, 20 * time.Second, 40 * time.Second, 60 * time.Second}},
		{"file every 7s", func() Source { return &FileSource{FS: fstest.MapFS{}, Path: "/m"} },
			7 * time.Second, []time.Duration{0, 7 * time.Second, 14 * time.Second, 21 * time.Second, 28 * time.Second, 35 * time.Second, 42 * time.Second, 49 * time.Second, 56 * time.Second}},
		{"http at the default", func() Source { return &HTTPSource{Client: srv.Client(), URL: srv.URL} },
			defaults.HTTPCheckFrequency.Duration, []time.Duration{0, 20 * time.Second, 40 * time.Second, 60 * time.Second}},
		{"http every 45s", func() Source { return &HTTPSource{Client: srv.Client(), URL: srv.URL} },
			45 * time.Second, []time.Duration{0, 45 * time.Second}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			clk := newMock()
			c := &counting{Source: tc.source(), clk: clk, start: clk.Now()}
			s := mustNew(t, clk, &problems{}, Poll{Source: c, Every: tc.every})
			if len(c.reads) != 0 {
				t.Fatalf("read %d times before the first Step", len(c.reads))
			}
			for i := 0; i <= 60; i++ {
				s.Step(context.Background())
				clk.Add(time.Second)
			}
			if !slices.Equal(c.reads, tc.want) {
				t.Errorf("reads at %v, want %v", c.reads, tc.want)
			}
		})
	}
}

// TestLateStepDoesNotCatchUp: a Step long after a deadline polls once and the next poll is a full
// period later.
func TestLateStepDoesNotCatchUp(t *testing.T) {
	clk := newMock()
	c := &counting{Source: &FileSource{FS: fstest.MapFS{}, Path: "m"}, clk: clk, start: clk.Now()}
	s := mustNew(t, clk, &problems{}, Poll{Source: c, Every: 20 * time.Second})
	s.Step(context.Background())
	clk.Add(95 * time.Second)
	if n := s.Step(context.Background()); n != 1 {
		t.Fatalf("late Step ran %d polls, want 1", n)
	}
	next, _ := s.NextDeadline()
	if got := next.Sub(c.start); got != 115*time.Second {
		t.Errorf("next poll at %v, want 115s", got)
	}
}

// TestIdle: the package is idle only when no poll is due and every update has been drained, and
// the moment the fake clock reaches a deadline it is not.
func TestIdle(t *testing.T) {
	clk := newMock()
	fsys := fstest.MapFS{"m/a.yaml": file(podYAML("a", "x"))}
	s := mustNew(t, clk, &problems{}, Poll{Source: &FileSource{FS: fsys, Path: "m"}, Every: 20 * time.Second})
	steps := []struct {
		do   func()
		idle bool
	}{
		{func() {}, false}, // the first read is due at once
		{func() { s.Step(context.Background()) }, false},
		{func() { s.Drain() }, true},
		{func() { clk.Add(19 * time.Second) }, true},
		{func() { clk.Add(time.Second) }, false},
		{func() { s.Step(context.Background()) }, true}, // nothing changed: no updates
	}
	for i, st := range steps {
		st.do()
		if got := s.Idle(); got != st.idle {
			t.Fatalf("step %d: Idle() = %v, want %v", i, got, st.idle)
		}
	}
}

// TestRunOnMockClock: Run polls at once and again when the clock reaches the next deadline.
func TestRunOnMockClock(t *testing.T) {
	clk := newMock()
	fsys := fstest.MapFS{"m/a.yaml": file(podYAML("a", "x"))}
	s := mustNew(t, clk, &problems{}, Poll{Source: &FileSource{FS: fsys, Path: "m"}, Every: 20 * time.Second})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- s.Run(ctx) }()
	<-s.Ready()
	if got := lines(s.Drain()); got != "ADD file default/a-node-a\n" {
		t.Fatalf("first poll gave %q", got)
	}
	fsys["m/b.yaml"] = file(podYAML("b", "x"))
	// Let Run arm its timer before moving the clock: Idle turns false once the clock passes the deadline.
	for !s.Idle() {
		time.Sleep(time.Millisecond)
	}
	for s.Pending() == 0 {
		clk.Add(20 * time.Second)
		select {
		case <-s.Ready():
		case <-time.After(50 * time.Millisecond):
		}
	}
	if got := lines(s.Drain()); got != "ADD file default/b-node-a\n" {
		t.Errorf("second poll gave %q", got)
	}
	cancel()
	if err := <-done; err != context.Canceled {
		t.Errorf("Run returned %v", err)
	}
}

func TestNewRefusesBadOptions(t *testing.T) {
	clk := newMock()
	src := &FileSource{FS: fstest.MapFS{}, Path: "m"}
	cases := []struct {
		name  string
		opts  Options
		polls []Poll
		want  string
	}{
		{"no clock", Options{NodeName: node, Reporter: &problems{}}, nil, "sources: a clock is required"},
		{"no node name", Options{Clock: clk, Reporter: &problems{}}, nil, "sources: a node name is required"},
		{"no reporter", Options{Clock: clk, NodeName: node}, nil, "sources: a reporter is required"},
		{"zero period", Options{Clock: clk, NodeName: node, Reporter: &problems{}}, []Poll{{Source: src}}, "sources: file source: period 0s must be positive"},
		{"twice", Options{Clock: clk, NodeName: node, Reporter: &problems{}}, []Poll{{Source: src, Every: time.Second}, {Source: src, Every: time.Second}}, "sources: file source given twice"},
		{"nil source", Options{Clock: clk, NodeName: node, Reporter: &problems{}}, []Poll{{Every: time.Second}}, "sources: poll 0 has no source"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(tc.opts, tc.polls...)
			if err == nil || err.Error() != tc.want {
				t.Errorf("New: %v, want %q", err, tc.want)
			}
		})
	}
}

func TestFromConfig(t *testing.T) {
	c := v1beta1.NewDefault()
	c.StaticPodPath = "/etc/orch/manifests"
	c.StaticPodURL = "http://manifests.test/pods"
	c.HTTPCheckFrequency.Duration = 5 * time.Second
	c.StaticPodURLHeader = map[string][]string{"X-A": {"1", "2"}}
	fsys := fstest.MapFS{}
	polls, err := FromConfig(c, fsys, http.DefaultClient)
	if err != nil {
		t.Fatal(err)
	}
	if len(polls) != 2 {
		t.Fatalf("got %d polls, want 2", len(polls))
	}
	f, ok := polls[0].Source.(*FileSource)
	if !ok || f.Path != "/etc/orch/manifests" || polls[0].Every != 20*time.Second {
		t.Errorf("file poll %+v every %v", polls[0].Source, polls[0].Every)
	}
	h, ok := polls[1].Source.(*HTTPSource)
	if !ok || h.URL != c.StaticPodURL || !slices.Equal(h.Header["X-A"], []string{"1", "2"}) || polls[1].Every != 5*time.Second {
		t.Errorf("http poll %+v every %v", polls[1].Source, polls[1].Every)
	}
	if _, err := FromConfig(c, fsys, nil); err == nil || err.Error() != "--manifest-url: an HTTP client is required" {
		t.Errorf("no client: %v", err)
	}
	none, err := FromConfig(v1beta1.NewDefault(), nil, nil)
	if err != nil || len(none) != 0 {
		t.Errorf("nothing configured: %v, %v", none, err)
	}
}

func TestPolled(t *testing.T) {
	mock := clock.NewMock()
	fsys := fstest.MapFS{"m/web.yaml": {Data: []byte("apiVersion: v1\nkind: Pod\nmetadata: {name: web}\nspec:\n  containers:\n  - {name: app, image: busybox}\n")}}
	s, err := New(Options{Clock: mock, NodeName: "n", Reporter: ReporterFunc(func(p Problem) { t.Error(p) })}, Poll{Source: &FileSource{FS: fsys, Path: "m"}, Every: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if s.Polled() {
		t.Fatal("polled before any read")
	}
	s.Step(context.Background())
	if s.Polled() {
		t.Fatal("polled while its updates wait to be drained")
	}
	s.Drain()
	if !s.Polled() {
		t.Fatal("not polled after a read and a drain")
	}
}
