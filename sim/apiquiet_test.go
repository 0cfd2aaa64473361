package sim

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"orch.io/orch/components/orchlet/sources"
	"orch.io/orch/fakecri/script"
)

// A node the API pass skips (apiQuiet) has no API work due: nothing handed over since its last
// Sync, the pods version it synced the workers', and no timed work before apiAt, which is the
// earliest of its times. Checked after every simulated second, once the world's next pod changes
// are handed over as the next settle's first step does, while pods come and go through the API
// server or handed to the pod workers (a Step that publishes after the instant's Sync), Steps are
// held 30s by pulls, the API server goes away and comes back, and the agents are killed and
// restarted. Fails with deliver's or startStep's clearing of apiAt left out.
func TestAPIQuietHasNothingDue(t *testing.T) {
	slow := &script.Script{Images: []script.ImageRule{{Match: "busybox*", PullDuration: script.Duration(30 * time.Second)}}}
	w, nodes := worldOf(t, Options{Seed: 1, APIServer: true},
		NodeOptions{Name: "serial", Script: slow, API: true, Args: []string{"--serialize-image-pulls=true"}},
		NodeOptions{Name: "background", Script: slow, API: true, Args: []string{"--serialize-image-pulls=false", "--node-status-update-frequency=7s"}})
	quiet := 0
	for s := 1; s <= 5*60; s++ {
		if err := w.RunUntil(time.Duration(s) * time.Second); err != nil {
			t.Fatal(err)
		}
		if err := act(w, nodes, s); err != nil {
			t.Fatal(err)
		}
		w.deliver()
		now := w.Clock.Now()
		for _, n := range nodes {
			if s%50 == 25 && !n.down && !n.stepping {
				// A Step that publishes at an instant whose Sync is done: a static pod handed
				// to the pod workers directly, stepped as begin steps them (never beside a Step
				// still running, whose end the node would then not hear).
				n.pods.Update(sources.Update{Op: sources.OpAdd, Source: sources.SourceFile, Pod: &corev1.Pod{
					ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("static-%d", s), Namespace: "default", UID: types.UID(fmt.Sprint("static-", s))},
					Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx:1.27"}}}}})
				n.startStep(n.life)
				if _, err := n.waitSettled(n.life); err != nil {
					t.Fatal(err)
				}
			}
			if n.down || !n.apiQuiet(now) {
				continue
			}
			quiet++
			a := n.api
			if n.stepping || a.poked || a.podsVersion != n.pods.PodsVersion() {
				t.Fatalf("%s at %v: skipped with work: stepping %v, a pod handed over %v, synced version %d of the workers' %d",
					n.Name, w.Now(), n.stepping, a.poked, a.podsVersion, n.pods.PodsVersion())
			}
			var first time.Time
			a.next(func(at time.Time, ok bool) {
				if ok && (first.IsZero() || at.Before(first)) {
					first = at
				}
			})
			if !first.After(now) || first.UnixNano() != n.apiAt {
				t.Fatalf("%s at %v: skipped until %v, its first due time %v", n.Name, w.Now(), time.Unix(0, n.apiAt).UTC(), first.UTC())
			}
		}
	}
	if quiet < 100 {
		t.Fatalf("a node was quiet for the API pass at %d checks: the story tested too little", quiet)
	}
}

// act is what happens in TestAPIQuietHasNothingDue's story at its s-th second.
func act(w *World, nodes []*Node, s int) error {
	pod := func(name, node, image string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PodSpec{NodeName: node,
			Containers: []corev1.Container{{Name: "app", Image: image}}}}
	}
	var err error
	switch s {
	case 10:
		err = w.CreatePod(pod("sleeper", "serial", "busybox:1.36"))
	case 12:
		err = w.CreatePod(pod("puller", "background", "busybox:1.36"))
	case 40:
		err = w.CreatePod(pod("web", "background", "nginx:1.27"))
	case 60:
		err = w.SetAPIServerDown(true)
	case 95:
		err = w.SetAPIServerDown(false)
	case 100:
		err = w.DeletePod("default", "sleeper", nil)
	case 150, 250:
		err = each(nodes, (*Node).Kill)
	case 153, 253:
		err = each(nodes, (*Node).Restart)
	case 200:
		err = w.CreatePod(pod("late", "serial", "busybox:1.36"))
	}
	return err
}
