package sources

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
)

// maxPollTime flags an input that makes a poll crawl: seconds for three small manifests mean a hang
// in the making, not a slow machine.
const maxPollTime = 5 * time.Second

// FuzzManifests feeds arbitrary bytes to the static pod sources as two files of --pod-manifest-path
// and the body of --manifest-url. Polling never panics or hangs; every pod it adds is one the agent
// can run (a valid name with the node's appended, a namespace, the node, its source, a unique UID,
// containers with names and images); an unchanged source polled again changes nothing; and emptied
// sources remove exactly the pods they added.
func FuzzManifests(f *testing.F) {
	f.Add([]byte(podYAML("web", "nginx")), []byte(podJSON("db", "postgres")), []byte(`{"apiVersion":"v1","kind":"PodList","items":[`+podJSON("b", "x")+`]}`))
	f.Add([]byte(podYAML("same", "a")), []byte(podYAML("same", "b")), []byte(podYAML("same", "c")))
	f.Add([]byte(podYAML("web", "nginx")+"  uid: fixed\n"), []byte(podYAML("other", "nginx")+"  uid: fixed\n"), []byte{})
	f.Add([]byte("apiVersion: v1\nkind: List\nitems: [{kind: Pod, metadata: {name: a}}]\n"), []byte("kind: Pod\n"), []byte("apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Pod\n  metadata: {name: a, namespace: Bad_NS}\n  spec: {containers: [{name: c, image: x, resources: {limits: {cpu: 1}}}]}\n"))
	f.Add([]byte(podYAML("UPPER", "x")), []byte(podYAML(strings.Repeat("n", 250), "x")), []byte(`{"apiVersion":"v1","kind":"PodList","items":[{"kind":"Service"}]}`))
	f.Fuzz(func(t *testing.T, fileA, fileB, body []byte) {
		watchdog := time.AfterFunc(maxPollTime, func() {
			panic(fmt.Sprintf("poll still running after %v on %q, %q and %q", maxPollTime, fileA, fileB, body))
		})
		defer watchdog.Stop()
		fsys := fstest.MapFS{"etc/m/a.yaml": {Data: fileA}, "etc/m/b.json": {Data: fileB}}
		url := &bodyTransport{body}
		clk := newMock()
		r := &problems{}
		s := mustNew(t, clk, r,
			Poll{Source: &FileSource{FS: fsys, Path: "/etc/m"}, Every: 20 * time.Second},
			Poll{Source: &HTTPSource{Client: &http.Client{Transport: url}, URL: "http://manifests.test/node-a"}, Every: 20 * time.Second})
		ctx := context.Background()

		s.Step(ctx)
		added := map[types.UID]bool{}
		for _, u := range s.Drain() {
			if u.Op != OpAdd {
				t.Fatalf("first poll: %s, want only ADDs", u)
			}
			if added[u.Pod.UID] {
				t.Fatalf("UID %s added twice", u.Pod.UID)
			}
			added[u.Pod.UID] = true
			checkRunnable(t, u)
		}
		for _, p := range r.got {
			if p.Reason != ReasonInvalidManifest && p.Reason != ReasonDuplicate && p.Reason != ReasonReadFailed {
				t.Fatalf("problem with an unknown reason: %s", p)
			}
		}

		clk.Add(20 * time.Second)
		s.Step(ctx)
		if us := s.Drain(); len(us) > 0 {
			t.Fatalf("the same manifests polled again changed %d pods, first %s", len(us), us[0])
		}

		delete(fsys, "etc/m/a.yaml")
		delete(fsys, "etc/m/b.json")
		url.body = nil
		clk.Add(20 * time.Second)
		s.Step(ctx)
		for _, u := range s.Drain() {
			if u.Op != OpRemove || !added[u.Pod.UID] {
				t.Fatalf("emptied sources: %s, want only REMOVEs of pods added", u)
			}
			delete(added, u.Pod.UID)
		}
		if len(added) > 0 || len(s.Snapshot()) > 0 {
			t.Fatalf("emptied sources left %d pods added and %d in the snapshot", len(added), len(s.Snapshot()))
		}
	})
}

// checkRunnable fails unless u's pod has what the pod workers rely on a static pod having.
func checkRunnable(t *testing.T, u Update) {
	t.Helper()
	p := u.Pod
	switch {
	case len(validation.IsDNS1123Subdomain(p.Name)) > 0 || !strings.HasSuffix(p.Name, "-"+node):
		t.Fatalf("%s: name %q", u, p.Name)
	case len(validation.IsDNS1123Label(p.Namespace)) > 0:
		t.Fatalf("%s: namespace %q", u, p.Namespace)
	case p.UID == "" || p.Spec.NodeName != node || p.Annotations[ConfigSourceAnnotation] != u.Source || !IsStatic(p):
		t.Fatalf("%s: UID %q, node %q, source annotation %q", u, p.UID, p.Spec.NodeName, p.Annotations[ConfigSourceAnnotation])
	case len(p.Spec.Containers) == 0:
		t.Fatalf("%s: no containers", u)
	}
	for _, c := range p.Spec.Containers {
		if strings.TrimSpace(c.Name) == "" || strings.TrimSpace(c.Image) == "" {
			t.Fatalf("%s: container %q with image %q", u, c.Name, c.Image)
		}
	}
}
