package sources

import (
	"context"
	"errors"
	"io/fs"
	"strings"
	"testing"
	"testing/fstest"
	"time"
)

// TestFileSource: which files of --pod-manifest-path become pods, and which are reported.
func TestFileSource(t *testing.T) {
	cases := []struct {
		name     string
		fsys     fstest.MapFS
		path     string
		want     string
		problems []string
	}{
		{
			name: "directory of YAML and JSON, read in name order",
			fsys: fstest.MapFS{"etc/m/b.json": file(podJSON("b", "x")), "etc/m/a.yaml": file(podYAML("a", "x"))},
			path: "/etc/m",
			want: "ADD file default/a-node-a\nADD file default/b-node-a\n",
		},
		{
			name: "dot-files ignored",
			fsys: fstest.MapFS{"etc/m/.a.yaml.swp": file("not yaml: ["), "etc/m/.hidden.yaml": file(podYAML("hidden", "x")), "etc/m/web.yaml": file(podYAML("web", "x"))},
			path: "/etc/m",
			want: "ADD file default/web-node-a\n",
		},
		{
			name: "one file",
			fsys: fstest.MapFS{"etc/m/web.yaml": file(podYAML("web", "x")), "etc/m/other.yaml": file(podYAML("other", "x"))},
			path: "/etc/m/web.yaml",
			want: "ADD file default/web-node-a\n",
		},
		{
			name: "subdirectories are not entered",
			fsys: fstest.MapFS{"m/sub/a.yaml": file(podYAML("a", "x")), "m/b.yaml": file(podYAML("b", "x"))},
			path: "m",
			want: "ADD file default/b-node-a\n",
		},
		{
			name: "missing path is an empty source",
			fsys: fstest.MapFS{},
			path: "/etc/m",
		},
		{
			name:     "a pod list is not a file manifest",
			fsys:     fstest.MapFS{"m/l.yaml": file("apiVersion: v1\nkind: PodList\nitems: []\n")},
			path:     "m",
			problems: []string{"InvalidManifest m/l.yaml"},
		},
		{
			name:     "namespace kept, bad name refused",
			fsys:     fstest.MapFS{"m/a.yaml": file(strings.Replace(podYAML("a", "x"), "  name: a\n", "  name: a\n  namespace: kube-system\n", 1)), "m/b.yaml": file(podYAML("B_b", "x"))},
			path:     "m",
			want:     "ADD file kube-system/a-node-a\n",
			problems: []string{"InvalidManifest m/b.yaml"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			clk := newMock()
			r := &problems{}
			s := mustNew(t, clk, r, Poll{Source: &FileSource{FS: tc.fsys, Path: tc.path}, Every: 20 * time.Second})
			s.Step(context.Background())
			if got := lines(s.Drain()); got != tc.want {
				t.Errorf("updates:\n%s\nwant:\n%s", got, tc.want)
			}
			if got := strings.Join(r.reasons(), "|"); got != strings.Join(tc.problems, "|") {
				t.Errorf("problems %q, want %q", got, tc.problems)
			}
		})
	}
}

// TestBrokenManifestKeepsPods: a manifest that stops parsing or validating is reported on every
// poll, its last good pod and the other pods stay, and fixing it brings the new version in.
func TestBrokenManifestKeepsPods(t *testing.T) {
	cases := []struct {
		name    string
		content string
		errText string
	}{
		{"not YAML", "kind: Pod\n  bad: [", "not YAML or JSON"},
		{"no kind", "apiVersion: v1\nmetadata:\n  name: a\n", "kind: required, want Pod"},
		{"wrong kind", "apiVersion: v1\nkind: Service\nmetadata:\n  name: a\n", `kind: "Service" is not Pod`},
		{"wrong version", strings.Replace(podYAML("a", "x"), "apiVersion: v1", "apiVersion: v2", 1), `apiVersion: "v2" is not v1`},
		{"no name", "apiVersion: v1\nkind: Pod\nspec:\n  containers:\n  - name: c\n    image: x\n", "metadata.name: required"},
		{"no containers", "apiVersion: v1\nkind: Pod\nmetadata:\n  name: a\nspec: {}\n", "spec.containers: at least one container is required"},
		{"container without image", "apiVersion: v1\nkind: Pod\nmetadata:\n  name: a\nspec:\n  containers:\n  - name: c\n", "spec.containers[0].image: required"},
		{"container without name", "apiVersion: v1\nkind: Pod\nmetadata:\n  name: a\nspec:\n  containers:\n  - image: x\n", "spec.containers[0].name: required"},
		{"wrong field type", "apiVersion: v1\nkind: Pod\nmetadata:\n  name: [a]\n", "not a v1 Pod"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			clk := newMock()
			r := &problems{}
			fsys := fstest.MapFS{"m/a.yaml": file(podYAML("a", "x")), "m/b.yaml": file(podYAML("b", "x"))}
			s := mustNew(t, clk, r, Poll{Source: &FileSource{FS: fsys, Path: "m"}, Every: 20 * time.Second})
			s.Step(context.Background())
			before := s.Snapshot()
			s.Drain()

			fsys["m/a.yaml"] = file(tc.content)
			for range 2 {
				clk.Add(20 * time.Second)
				s.Step(context.Background())
			}
			if got := s.Drain(); len(got) != 0 {
				t.Errorf("a broken manifest changed the state: %s", lines(got))
			}
			if after := s.Snapshot(); len(after) != len(before) {
				t.Errorf("state has %d pods, want %d", len(after), len(before))
			}
			if len(r.got) != 2 {
				t.Fatalf("reported %d times, want once per poll (2): %v", len(r.got), r.got)
			}
			pr := r.got[0]
			if pr.Reason != ReasonInvalidManifest || pr.Origin != "m/a.yaml" || pr.Source != SourceFile || !strings.Contains(pr.Err.Error(), tc.errText) {
				t.Errorf("reported %v, want %s on m/a.yaml containing %q", pr, ReasonInvalidManifest, tc.errText)
			}

			fsys["m/a.yaml"] = file(podYAML("a", "busybox"))
			clk.Add(20 * time.Second)
			s.Step(context.Background())
			if got, want := lines(s.Drain()), "REMOVE file default/a-node-a\nADD file default/a-node-a\n"; got != want {
				t.Errorf("after the fix:\n%s\nwant:\n%s", got, want)
			}
		})
	}
}

// TestRemovedFileRemovesPod: deleting a manifest removes its pod; deleting the directory removes all.
func TestRemovedFileRemovesPod(t *testing.T) {
	clk := newMock()
	fsys := fstest.MapFS{"m/a.yaml": file(podYAML("a", "x")), "m/b.yaml": file(podYAML("b", "x"))}
	s := mustNew(t, clk, &problems{}, Poll{Source: &FileSource{FS: fsys, Path: "m"}, Every: 20 * time.Second})
	s.Step(context.Background())
	s.Drain()
	steps := []struct {
		change func()
		want   string
	}{
		{func() { delete(fsys, "m/a.yaml") }, "REMOVE file default/a-node-a\n"},
		{func() {}, ""},
		{func() { delete(fsys, "m/b.yaml") }, "REMOVE file default/b-node-a\n"},
		{func() { fsys["m/c.yaml"] = file(podYAML("c", "x")) }, "ADD file default/c-node-a\n"},
		{func() { delete(fsys, "m/c.yaml"); delete(fsys, "m") }, "REMOVE file default/c-node-a\n"},
	}
	for i, st := range steps {
		st.change()
		clk.Add(20 * time.Second)
		s.Step(context.Background())
		if got := lines(s.Drain()); got != st.want {
			t.Errorf("step %d:\n%s\nwant:\n%s", i, got, st.want)
		}
	}
}

// failingFS cannot list its root: a read failure of the whole source.
type failingFS struct{ fstest.MapFS }

func (f failingFS) ReadDir(name string) ([]fs.DirEntry, error) {
	return nil, errors.New("permission denied")
}

func TestUnreadableDirectoryChangesNothing(t *testing.T) {
	clk := newMock()
	fsys := fstest.MapFS{"m/a.yaml": file(podYAML("a", "x"))}
	src := &FileSource{FS: fsys, Path: "m"}
	r := &problems{}
	s := mustNew(t, clk, r, Poll{Source: src, Every: 20 * time.Second})
	s.Step(context.Background())
	s.Drain()
	src.FS = failingFS{fsys}
	clk.Add(20 * time.Second)
	s.Step(context.Background())
	if got := s.Drain(); len(got) != 0 {
		t.Errorf("unreadable directory changed the state: %s", lines(got))
	}
	if len(r.got) != 1 || r.got[0].Reason != ReasonReadFailed || r.got[0].Err.Error() != "m: permission denied" {
		t.Errorf("reported %v, want one %s: m: permission denied", r.got, ReasonReadFailed)
	}
}
