package sources

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"orch.io/orch/components/orchlet/host"
)

func TestNodeName(t *testing.T) {
	cases := []struct {
		name     string
		override string
		hostname string
		want     string
		err      string
	}{
		{"override wins, lowercased", "Node-B", "machine", "node-b", ""},
		{"hostname, lowercased and trimmed", "", " Machine.Example \n", "machine.example", ""},
		{"nothing", "", "", "", "empty node name: set --hostname-override or give the host a name"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := host.NewFake()
			h.Name = tc.hostname
			got, err := NodeName(tc.override, h)
			if got != tc.want || (err == nil) != (tc.err == "") || (err != nil && err.Error() != tc.err) {
				t.Errorf("NodeName = %q, %v; want %q, %q", got, err, tc.want, tc.err)
			}
		})
	}
}

// onePod runs one Step of a fresh Sources on node over the given polls and returns its pods by name.
func onePod(t *testing.T, nodeName string, polls ...Poll) map[string]*corev1.Pod {
	t.Helper()
	s, err := New(Options{Clock: newMock(), NodeName: nodeName, Reporter: &problems{}}, polls...)
	if err != nil {
		t.Fatal(err)
	}
	s.Step(context.Background())
	out := map[string]*corev1.Pod{}
	for uid, e := range s.Snapshot() {
		if e.Pod.UID != uid || e.Pod.Annotations[ConfigSourceAnnotation] != e.Source {
			t.Errorf("snapshot entry %s: pod UID %s, source %s vs annotation %q", uid, e.Pod.UID, e.Source, e.Pod.Annotations[ConfigSourceAnnotation])
		}
		out[e.Pod.Name] = e.Pod
	}
	return out
}

func fileAt(files map[string]string) Poll {
	fsys := fstest.MapFS{}
	for name, content := range files {
		fsys[name] = file(content)
	}
	return Poll{Source: &FileSource{FS: fsys, Path: "/etc/m"}, Every: 20 * time.Second}
}

// TestStaticPodRules: name, namespace, node, annotations and toleration of a static pod.
func TestStaticPodRules(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(podYAML("web", "nginx")))
	}))
	defer srv.Close()
	cases := []struct {
		name       string
		poll       Poll
		source     string
		toleration bool
	}{
		{"file", fileAt(map[string]string{"etc/m/web.yaml": podYAML("web", "nginx")}), SourceFile, true},
		{"http", Poll{Source: &HTTPSource{Client: srv.Client(), URL: srv.URL}, Every: 20 * time.Second}, SourceHTTP, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pod := onePod(t, node, tc.poll)["web-node-a"]
			if pod == nil {
				t.Fatal("no pod named web-node-a")
			}
			checks := []struct {
				what      string
				got, want string
			}{
				{"namespace", pod.Namespace, "default"},
				{"spec.nodeName", pod.Spec.NodeName, node},
				{"source annotation", pod.Annotations[ConfigSourceAnnotation], tc.source},
				{"hash annotation", pod.Annotations[ConfigHashAnnotation], string(pod.UID)},
				{"phase", string(pod.Status.Phase), "Pending"},
			}
			for _, c := range checks {
				if c.got != c.want {
					t.Errorf("%s = %q, want %q", c.what, c.got, c.want)
				}
			}
			if len(pod.UID) != 32 {
				t.Errorf("UID %q is not an md5 hex digest", pod.UID)
			}
			noExecute := corev1.Toleration{Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute}
			has := len(pod.Spec.Tolerations) == 1 && pod.Spec.Tolerations[0] == noExecute
			if has != tc.toleration {
				t.Errorf("tolerations %v, want the NoExecute toleration: %v", pod.Spec.Tolerations, tc.toleration)
			}
		})
	}
}

// TestUIDRules: the UID is a hash of source and content: the same manifest gives the same UID, a
// change of content, file name or node gives another, and a UID in the manifest is kept.
func TestUIDRules(t *testing.T) {
	base := fileAt(map[string]string{"etc/m/web.yaml": podYAML("web", "nginx")})
	uid := func(nodeName string, p Poll) types.UID {
		for _, pod := range onePod(t, nodeName, p) {
			return pod.UID
		}
		t.Fatal("no pod")
		return ""
	}
	want := uid(node, base)
	cases := []struct {
		name string
		uid  types.UID
		same bool
	}{
		{"same manifest again", uid(node, fileAt(map[string]string{"etc/m/web.yaml": podYAML("web", "nginx")})), true},
		{"same manifest beside another file", uid(node, fileAt(map[string]string{"etc/m/web.yaml": podYAML("web", "nginx"), "etc/m/.x": "junk"})), true},
		{"other content", uid(node, fileAt(map[string]string{"etc/m/web.yaml": podYAML("web", "nginx:2")})), false},
		{"other file name", uid(node, fileAt(map[string]string{"etc/m/web2.yaml": podYAML("web", "nginx")})), false},
		{"other node", uid("node-b", base), false},
		{"UID in the manifest", uid(node, fileAt(map[string]string{"etc/m/web.yaml": strings.Replace(podYAML("web", "nginx"), "  name: web\n", "  name: web\n  uid: fixed-uid\n", 1)})), false},
	}
	for _, tc := range cases {
		if (tc.uid == want) != tc.same {
			t.Errorf("%s: UID %s vs %s, want same: %v", tc.name, tc.uid, want, tc.same)
		}
	}
	if got := cases[len(cases)-1].uid; got != "fixed-uid" {
		t.Errorf("manifest UID became %q, want it kept", got)
	}
}

// TestUpdateOp: a pod whose manifest sets a UID is updated in place; one whose UID is its content
// hash is replaced.
func TestUpdateOp(t *testing.T) {
	withUID := func(image string) string {
		return strings.Replace(podYAML("web", image), "  name: web\n", "  name: web\n  uid: fixed\n", 1)
	}
	cases := []struct {
		name          string
		before, after string
		want          string
	}{
		{"UID set: update", withUID("nginx"), withUID("nginx:2"), "UPDATE file default/web-node-a\n"},
		{"content hash: replace", podYAML("web", "nginx"), podYAML("web", "nginx:2"), "REMOVE file default/web-node-a\nADD file default/web-node-a\n"},
		{"unchanged: nothing", podYAML("web", "nginx"), podYAML("web", "nginx"), ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			clk := newMock()
			fsys := fstest.MapFS{"m/web.yaml": file(tc.before)}
			s := mustNew(t, clk, &problems{}, Poll{Source: &FileSource{FS: fsys, Path: "m"}, Every: time.Second})
			s.Step(context.Background())
			s.Drain()
			fsys["m/web.yaml"] = file(tc.after)
			clk.Add(time.Second)
			s.Step(context.Background())
			if got := lines(s.Drain()); got != tc.want {
				t.Errorf("updates:\n%s\nwant:\n%s", got, tc.want)
			}
		})
	}
}

// TestDuplicateNames: the first pod to claim a name keeps it; a later one, in the same source or
// another, is reported and left out until the name is free at its source's next poll.
func TestDuplicateNames(t *testing.T) {
	body := podYAML("web", "nginx:http")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(body)) }))
	defer srv.Close()
	clk := newMock()
	fsys := fstest.MapFS{
		"m/a.yaml": file(podYAML("web", "nginx")),
		"m/b.yaml": file(podYAML("web", "nginx:b")),
	}
	r := &problems{}
	s := mustNew(t, clk, r,
		Poll{Source: &FileSource{FS: fsys, Path: "m"}, Every: 20 * time.Second},
		Poll{Source: &HTTPSource{Client: srv.Client(), URL: srv.URL}, Every: 30 * time.Second})
	steps := []struct {
		change   func()
		advance  time.Duration
		want     string
		problems []string
	}{
		{func() {}, 0, "ADD file default/web-node-a\n", []string{"FailedValidation m/b.yaml", "FailedValidation " + srv.URL}},
		// The file source drops its pod at 20s; the HTTP source takes the name at its own poll at 30s.
		{func() { delete(fsys, "m/a.yaml"); delete(fsys, "m/b.yaml") }, 20 * time.Second, "REMOVE file default/web-node-a\n", nil},
		{func() {}, 10 * time.Second, "ADD http default/web-node-a\n", nil},
		{func() { fsys["m/a.yaml"] = file(podYAML("web", "nginx")) }, 10 * time.Second, "", []string{"FailedValidation m/a.yaml"}},
	}
	for i, st := range steps {
		st.change()
		clk.Add(st.advance)
		r.got = nil
		s.Step(context.Background())
		if got := lines(s.Drain()); got != st.want {
			t.Errorf("step %d:\n%s\nwant:\n%s", i, got, st.want)
		}
		if got := strings.Join(r.reasons(), "|"); got != strings.Join(st.problems, "|") {
			t.Errorf("step %d: problems %q, want %q", i, got, st.problems)
		}
		for _, p := range r.got {
			if p.Pod == nil || p.Pod.Name != "web-node-a" || !strings.Contains(p.Err.Error(), `duplicate pod name "default/web-node-a"`) {
				t.Errorf("step %d: duplicate report %v", i, p)
			}
		}
	}
}

// TestSameWorldSameUpdates: two runs over the same clock advances and contents give the same
// updates, and applying them rebuilds the snapshot.
func TestSameWorldSameUpdates(t *testing.T) {
	run := func() (string, Snapshot, Snapshot) {
		clk := newMock()
		fsys := fstest.MapFS{}
		s := mustNew(t, clk, &problems{}, Poll{Source: &FileSource{FS: fsys, Path: "m"}, Every: 20 * time.Second})
		var all []Update
		for i := range 12 {
			// Each period adds a pod and rewrites another, so every run sees many changes at once.
			fsys["m/p"+string(rune('a'+i))+".yaml"] = file(podYAML("p"+string(rune('a'+i)), "x"))
			if i > 2 {
				fsys["m/p"+string(rune('a'+i-3))+".yaml"] = file(podYAML("p"+string(rune('a'+i-3)), "busybox"))
			}
			s.Step(context.Background())
			all = append(all, s.Drain()...)
			clk.Add(20 * time.Second)
		}
		rebuilt := Snapshot{}
		for _, u := range all {
			rebuilt.Apply(u)
		}
		return lines(all), rebuilt, s.Snapshot()
	}
	first, rebuilt, snap := run()
	for range 3 {
		if again, _, _ := run(); again != first {
			t.Fatalf("runs differ:\n%s\nvs\n%s", first, again)
		}
	}
	if len(rebuilt) != len(snap) || len(snap) != 12 {
		t.Fatalf("rebuilt %d pods, snapshot %d, want 12", len(rebuilt), len(snap))
	}
	for uid, e := range snap {
		if rebuilt[uid].Source != e.Source || rebuilt[uid].Pod.Name != e.Pod.Name {
			t.Errorf("pod %s: rebuilt %+v, snapshot %+v", uid, rebuilt[uid], e)
		}
	}
}

// errSource fails as a whole, for the Problem text.
type errSource struct{}

func (errSource) Name() string { return "http" }
func (errSource) Read(context.Context) ([]Manifest, error) {
	return nil, errors.New("connection refused")
}
func TestProblemString(t *testing.T) {
	var got []string
	s := mustNew(t, newMock(), ReporterFunc(func(p Problem) { got = append(got, p.String()) }), Poll{Source: errSource{}, Every: time.Second})
	s.Step(context.Background())
	if len(got) != 1 || got[0] != "http source: ManifestReadFailed: connection refused" {
		t.Errorf("reported %q", got)
	}
	p := Problem{Source: "file", Origin: "/m/a.yaml", Reason: ReasonInvalidManifest, Err: errors.New("metadata.name: required")}
	if got := p.String(); got != "file source /m/a.yaml: InvalidManifest: metadata.name: required" {
		t.Errorf("String() = %q", got)
	}
}

func TestMissingDependenciesAreErrors(t *testing.T) {
	cases := []struct {
		name string
		src  Source
		want string
	}{
		{"file source without a filesystem", &FileSource{Path: "/etc/m"}, "/etc/m: no filesystem"},
		{"HTTP source without a client", &HTTPSource{URL: "http://pods.test/"}, "http://pods.test/: no HTTP client"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := &problems{}
			s := mustNew(t, newMock(), r, Poll{Source: tc.src, Every: time.Second})
			s.Step(context.Background())
			if len(r.got) != 1 || r.got[0].Err.Error() != tc.want {
				t.Errorf("reported %v, want %q", r.got, tc.want)
			}
		})
	}
}

func TestUpdateString(t *testing.T) {
	s := mustNew(t, newMock(), &problems{}, fileAt(map[string]string{"etc/m/web.yaml": strings.Replace(podYAML("web", "nginx"), "  name: web\n", "  name: web\n  uid: u1\n", 1)}))
	s.Step(context.Background())
	us := s.Drain()
	if len(us) != 1 || us[0].String() != "ADD file default/web-node-a u1" {
		t.Errorf("updates %v, want [ADD file default/web-node-a u1]", us)
	}
}
