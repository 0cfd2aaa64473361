package sim

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"orch.io/orch/components/orchlet/sources"
	"orch.io/orch/fakecri/script"
)

// A node a settle left quiet is not looked at again at the instant unless something reached it
// since: each row is an event that must wake it (or keep it from resting), and fails when the
// check that sees it is missing. The rows a look would act on say so, and the look is made.
func TestQuietNodeWakes(t *testing.T) {
	slowPull := &script.Script{Images: []script.ImageRule{{Match: "busybox*", PullDuration: script.Duration(30 * time.Second)}}}
	manifests := []string{"--pod-manifest-path=/etc/orch/manifests"}
	for _, tc := range []struct {
		name string
		api  bool
		node NodeOptions
		// event happens after the settle's last gather, before between its last look and that
		// gather (where the API work runs), during in a look that acted, before it rests.
		event, before, during func(t *testing.T, w *World, n *Node)
		asleep                bool
		acts                  bool // a look now does something
	}{
		{name: "nothing happened", asleep: true},
		{name: "nothing happened to an API node", api: true, asleep: true},
		{name: "a pod handed over", api: true, acts: true, event: func(t *testing.T, w *World, n *Node) {
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: corev1.PodSpec{NodeName: n.Name,
				Containers: []corev1.Container{{Name: "app", Image: "nginx:1.27"}}}}
			if err := w.CreatePod(pod); err != nil {
				t.Fatal(err)
			}
			if !w.deliver() {
				t.Fatal("nothing delivered")
			}
		}},
		// A lease's renewal: a status post reads the runtime too.
		{name: "a request to the API server", api: true, before: func(t *testing.T, w *World, n *Node) {
			n.api.leaseAt, n.apiAt = w.Clock.Now(), 0 // the renewal due now, which stepAPI would not look for
			if !w.stepAPI(n) {
				t.Fatal("no request made")
			}
		}},
		{name: "a runtime call", before: func(t *testing.T, _ *World, n *Node) {
			if _, err := n.cri.Version(context.Background(), "v1"); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "work left to the pod workers", acts: true, during: func(t *testing.T, _ *World, n *Node) {
			n.Agent.Pods.Update(sources.Update{Op: sources.OpAdd, Source: sources.SourceFile, Pod: &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "web-1"},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx:1.27"}}}}})
		}},
		// The Step's call is in flight as well (the row passes without the stepping check, which
		// keeps rest from Pods.Idle, which would wait for the parked Step).
		{name: "a Step parked in a pull", node: NodeOptions{Script: slowPull, Args: manifests}},
		{name: "a pull in the background", node: NodeOptions{Script: slowPull, Args: append(manifests, "--serialize-image-pulls=false")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, err := New(Options{Seed: 1, APIServer: tc.api})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			o := tc.node
			o.Name, o.API = "node-a", tc.api
			n, err := w.AddNode(o)
			if err != nil {
				t.Fatal(err)
			}
			if o.Script != nil {
				n.WriteManifest("web.yaml", []byte(webManifest))
			}
			if err := w.RunUntil(5 * time.Second); err != nil {
				t.Fatal(err)
			}
			now := w.Clock.Now()
			if tc.before != nil {
				if !n.quiet {
					t.Fatal("the settle left the node awake")
				}
				tc.before(t, w, n)
				w.gather(n, now)
				w.flush(n)
			}
			if tc.during != nil {
				tc.during(t, w, n)
				n.rest(true, false)
			}
			if tc.event != nil {
				tc.event(t, w, n)
			}
			if got := n.asleep(); got != tc.asleep {
				t.Fatalf("asleep %v, want %v", got, tc.asleep)
			}
			if tc.acts {
				if did, err := n.look(); err != nil || !did {
					t.Fatalf("the look did %v (%v), want something", did, err)
				}
			}
		})
	}
}
