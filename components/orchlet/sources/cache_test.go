package sources

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/benbjohnson/clock"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
)

const listURL = "http://manifests.test/node-a"

// podList is a List of minimal pods at the manifest URL, given as name=image pairs.
func podList(pods ...string) string {
	var b strings.Builder
	b.WriteString("apiVersion: v1\nkind: List\nitems:\n")
	for _, p := range pods {
		name, image, _ := strings.Cut(p, "=")
		fmt.Fprintf(&b, "- apiVersion: v1\n  kind: Pod\n  metadata: {name: %s}\n  spec:\n    containers:\n    - {name: c, image: %q}\n", name, image)
	}
	return b.String()
}

// world is what a test's sources read: a manifest directory "m" and the manifest URL.
type world struct {
	fsys fstest.MapFS
	url  *bodyTransport
}

// plain hides that its source hands over bytes, so Step takes the decoded pods of Read.
type plain struct{ Source }

// newWorldSources polls w's directory and URL every 20 seconds, through the cache or, when uncached,
// through Read as a Source from outside the package would be.
func newWorldSources(t *testing.T, clk clock.Clock, w *world, r Reporter, uncached bool) *Sources {
	t.Helper()
	var file, url Source = &FileSource{FS: w.fsys, Path: "m"}, &HTTPSource{Client: &http.Client{Transport: w.url}, URL: listURL}
	if uncached {
		file, url = plain{file}, plain{url}
	}
	return mustNew(t, clk, r, Poll{Source: file, Every: 20 * time.Second}, Poll{Source: url, Every: 20 * time.Second})
}

// render shows updates with their image, so a change of content is visible.
func render(us []Update) string {
	var b strings.Builder
	for _, u := range us {
		fmt.Fprintf(&b, "%s %s %s/%s %s\n", u.Op, u.Source, u.Pod.Namespace, u.Pod.Name, u.Pod.Spec.Containers[0].Image)
	}
	return b.String()
}

const broken = "kind: Pod\n  bad: ["

// TestCacheInvalidation: a poll sees every change of a manifest's bytes, reports a broken manifest on
// every poll that reads it, and gives exactly what decoding every manifest on every poll gives.
func TestCacheInvalidation(t *testing.T) {
	type step struct {
		change   func(w *world)
		want     string
		problems []string
	}
	write := func(name, content string) func(*world) {
		return func(w *world) { w.fsys["m/"+name] = file(content) }
	}
	serve := func(body string) func(*world) { return func(w *world) { w.url.body = []byte(body) } }
	same := func(*world) {}
	withUID := func(image string) string {
		return strings.Replace(podYAML("a", image), "  name: a\n", "  name: a\n  uid: fixed\n", 1)
	}
	cases := []struct {
		name  string
		files map[string]string
		body  string
		steps []step
	}{
		{
			name: "file content changed", files: map[string]string{"a.yaml": podYAML("a", "x")},
			steps: []step{
				{change: write("a.yaml", podYAML("a", "w")), want: "REMOVE file default/a-node-a x\nADD file default/a-node-a w\n"},
				{change: same},
				{change: write("a.yaml", podYAML("a", "x")), want: "REMOVE file default/a-node-a w\nADD file default/a-node-a x\n"},
			},
		},
		{
			name: "content changed under a fixed UID", files: map[string]string{"a.yaml": withUID("x")},
			steps: []step{
				{change: write("a.yaml", withUID("w")), want: "UPDATE file default/a-node-a w\n"},
				{change: same},
			},
		},
		{
			name: "file removed and added again with other content", files: map[string]string{"a.yaml": podYAML("a", "x"), "b.yaml": podYAML("b", "x")},
			steps: []step{
				{change: func(w *world) { delete(w.fsys, "m/a.yaml") }, want: "REMOVE file default/a-node-a x\n"},
				{change: write("a.yaml", podYAML("a", "w")), want: "ADD file default/a-node-a w\n"},
				{change: func(w *world) { delete(w.fsys, "m/a.yaml") }, want: "REMOVE file default/a-node-a w\n"},
				{change: write("a.yaml", podYAML("a", "w")), want: "ADD file default/a-node-a w\n"},
			},
		},
		{
			name: "URL body changed", body: podList("a=x", "b=x"),
			steps: []step{
				{change: serve(podList("a=x", "b=w")), want: "REMOVE http default/b-node-a x\nADD http default/b-node-a w\n"},
				{change: same},
				{change: serve(""), want: "REMOVE http default/a-node-a x\nREMOVE http default/b-node-a w\n"},
				{change: serve(podList("a=x", "b=w")), want: "ADD http default/a-node-a x\nADD http default/b-node-a w\n"},
			},
		},
		{
			name: "URL body broken, then fixed", body: podList("a=x"),
			steps: []step{
				{change: serve(broken), problems: []string{"InvalidManifest " + listURL}},
				{change: same, problems: []string{"InvalidManifest " + listURL}},
				{change: serve(podList("a=x"))},
				{change: serve(podList("a=w")), want: "REMOVE http default/a-node-a x\nADD http default/a-node-a w\n"},
			},
		},
		{
			name: "broken file fixed", files: map[string]string{"a.yaml": podYAML("a", "x"), "b.yaml": podYAML("b", "x")},
			steps: []step{
				{change: write("a.yaml", broken), problems: []string{"InvalidManifest m/a.yaml"}},
				{change: same, problems: []string{"InvalidManifest m/a.yaml"}},
				{change: write("a.yaml", podYAML("a", "w")), want: "REMOVE file default/a-node-a x\nADD file default/a-node-a w\n"},
				{change: same},
			},
		},
		{
			name: "fixed file broken again", files: map[string]string{"a.yaml": podYAML("a", "x")},
			steps: []step{
				{change: write("a.yaml", broken), problems: []string{"InvalidManifest m/a.yaml"}},
				{change: write("a.yaml", podYAML("a", "w")), want: "REMOVE file default/a-node-a x\nADD file default/a-node-a w\n"},
				{change: write("a.yaml", broken), problems: []string{"InvalidManifest m/a.yaml"}},
				{change: same, problems: []string{"InvalidManifest m/a.yaml"}},
				{change: write("a.yaml", podYAML("a", "w"))},
			},
		},
		{
			name: "new file broken from the start", files: map[string]string{"b.yaml": broken},
			steps: []step{
				{change: same, problems: []string{"InvalidManifest m/b.yaml"}},
				{change: write("b.yaml", podYAML("b", "x")), want: "ADD file default/b-node-a x\n"},
			},
		},
		{
			name: "a name freed in the other source", files: map[string]string{"a.yaml": podYAML("web", "x")}, body: podList("web=w"),
			steps: []step{
				{change: same, problems: []string{"FailedValidation " + listURL}},
				{change: func(w *world) { delete(w.fsys, "m/a.yaml") }, want: "REMOVE file default/web-node-a x\nADD http default/web-node-a w\n"},
				{change: write("a.yaml", podYAML("web", "x")), problems: []string{"FailedValidation m/a.yaml"}},
				// The file source polls first, while the URL still holds the name.
				{change: serve(""), want: "REMOVE http default/web-node-a w\n", problems: []string{"FailedValidation m/a.yaml"}},
				{change: same, want: "ADD file default/web-node-a x\n"},
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			type poll struct {
				updates  []Update
				problems []Problem
			}
			run := func(uncached bool) []poll {
				w := &world{fsys: fstest.MapFS{}, url: &bodyTransport{body: []byte(tc.body)}}
				for name, content := range tc.files {
					w.fsys["m/"+name] = file(content)
				}
				clk := newMock()
				r := &problems{}
				s := newWorldSources(t, clk, w, r, uncached)
				s.Step(context.Background())
				out := []poll{{s.Drain(), r.got}}
				for _, st := range tc.steps {
					r.got = nil
					st.change(w)
					clk.Add(20 * time.Second)
					s.Step(context.Background())
					out = append(out, poll{s.Drain(), r.got})
				}
				return out
			}
			got, want := run(false), run(true)
			for i, st := range tc.steps {
				p := got[i+1]
				if r := render(p.updates); r != st.want {
					t.Errorf("step %d: updates\n%s\nwant:\n%s", i, r, st.want)
				}
				if r := strings.Join((&problems{got: p.problems}).reasons(), "|"); r != strings.Join(st.problems, "|") {
					t.Errorf("step %d: problems %q, want %q", i, r, st.problems)
				}
			}
			for i := range got {
				if !equality.Semantic.DeepEqual(got[i].updates, want[i].updates) {
					t.Errorf("poll %d: updates\n%s\ndecoding every time gives:\n%s", i, render(got[i].updates), render(want[i].updates))
				}
				if g, w := fmt.Sprint(got[i].problems), fmt.Sprint(want[i].problems); g != w {
					t.Errorf("poll %d: problems %s\ndecoding every time gives %s", i, g, w)
				}
			}
		})
	}
}

// spoil changes everything a caller could change in a pod it was given.
func spoil(p *corev1.Pod) {
	p.Name, p.Namespace, p.UID = "spoiled", "spoiled", "spoiled"
	p.Labels = map[string]string{"spoiled": "yes"}
	p.Annotations[ConfigHashAnnotation] = "spoiled"
	p.Spec.Containers[0].Image = "spoiled"
	p.Spec.Tolerations = append(p.Spec.Tolerations[:0], corev1.Toleration{Key: "spoiled"})
	p.Status.Phase = corev1.PodFailed
}

// TestCallersCannotReachTheState: what Drain, Snapshot, a report or Read hand out belongs to the
// caller; changing it changes nothing a later poll gives.
func TestCallersCannotReachTheState(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(s *Sources, w *world, drained []Update, reported []Problem)
	}{
		{"pods Drain returned", func(_ *Sources, _ *world, us []Update, _ []Problem) {
			for _, u := range us {
				spoil(u.Pod)
			}
		}},
		{"pods Snapshot returned", func(s *Sources, _ *world, _ []Update, _ []Problem) {
			for _, e := range s.Snapshot() {
				spoil(e.Pod)
			}
		}},
		{"the map Snapshot returned", func(s *Sources, _ *world, _ []Update, _ []Problem) {
			snap := s.Snapshot()
			for uid := range snap {
				delete(snap, uid)
			}
			snap["spoiled"] = Entry{Source: SourceFile, Pod: &corev1.Pod{}}
		}},
		{"the pod of a duplicate report", func(_ *Sources, _ *world, _ []Update, ps []Problem) {
			for _, p := range ps {
				spoil(p.Pod)
			}
		}},
		{"pods Read returned", func(_ *Sources, w *world, _ []Update, _ []Problem) {
			for _, src := range []Source{&FileSource{FS: w.fsys, Path: "m"}, &HTTPSource{Client: &http.Client{Transport: w.url}, URL: listURL}} {
				ms, err := src.Read(context.Background())
				if err != nil {
					panic(err)
				}
				for _, m := range ms {
					for _, p := range m.Pods {
						p.Name, p.Spec.Containers[0].Image = "spoiled", "spoiled"
					}
				}
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// The URL's "a" is a duplicate of the file's, reported on every poll.
			w := &world{fsys: fstest.MapFS{"m/a.yaml": file(podYAML("a", "x")), "m/b.yaml": file(podYAML("b", "x"))}, url: &bodyTransport{body: []byte(podList("a=w", "c=w"))}}
			clk := newMock()
			r := &problems{}
			s := newWorldSources(t, clk, w, r, false)
			s.Step(context.Background())
			drained := s.Drain()
			want := s.Snapshot()
			wantProblems := fmt.Sprint(r.got)
			wantDup := r.got[0].Pod.DeepCopy()
			var wantA *corev1.Pod
			for _, u := range drained {
				if u.Pod.Name == "a-node-a" {
					wantA = u.Pod.DeepCopy()
				}
			}

			tc.mutate(s, w, drained, r.got)
			r.got = nil
			clk.Add(20 * time.Second)
			s.Step(context.Background())
			if us := s.Drain(); len(us) != 0 {
				t.Errorf("an unchanged poll gave updates:\n%s", render(us))
			}
			if got := s.Snapshot(); !equality.Semantic.DeepEqual(got, want) {
				t.Errorf("snapshot changed to %v, want %v", got, want)
			}
			if got := fmt.Sprint(r.got); got != wantProblems || !equality.Semantic.DeepEqual(r.got[0].Pod, wantDup) {
				t.Errorf("reported %s with %v, want %s with %v", got, r.got[0].Pod, wantProblems, wantDup)
			}

			w.fsys["m/a.yaml"] = file(podYAML("a", "z"))
			clk.Add(20 * time.Second)
			s.Step(context.Background())
			us := s.Drain()
			if got := render(us); got != "REMOVE file default/a-node-a x\nADD file default/a-node-a z\n" {
				t.Fatalf("after a change:\n%s", got)
			}
			if !equality.Semantic.DeepEqual(us[0].Pod, wantA) {
				t.Errorf("removed %v, want the pod as first given %v", us[0].Pod, wantA)
			}
		})
	}
}
