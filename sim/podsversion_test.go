package sim

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"orch.io/orch/fakecri/script"
)

// The pod workers' PodsVersion a node keeps (podsVersionNow, which stepAPI and gather read) is
// theirs whenever it is taken as fresh: at every settle, while pods come and go through the API
// server and a manifest, Steps are held for 30s by pulls, and the agents are killed and restarted
// (a new agent's pod workers count afresh); a read while a Step is held is not taken as fresh.
// Fails when a Step started, or one running at the read, leaves the kept version taken as fresh.
func TestPodsVersionKeptIsTheWorkers(t *testing.T) {
	slow := &script.Script{Images: []script.ImageRule{{Match: "busybox*", PullDuration: script.Duration(30 * time.Second)}}}
	w, nodes := worldOf(t, Options{Seed: 1, APIServer: true},
		NodeOptions{Name: "standalone", Script: slow, Args: []string{"--pod-manifest-path=/etc/orch/manifests"}},
		NodeOptions{Name: "api", Script: slow, API: true, Args: []string{"--serialize-image-pulls=true"}}) // Steps held by pulls
	pod := func(name, image string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PodSpec{NodeName: "api",
			Containers: []corev1.Container{{Name: "app", Image: image}}}}
	}
	fresh, held, versions := 0, 0, map[uint64]bool{}
	for s := 1; s <= 6*60; s++ {
		if err := w.RunUntil(time.Duration(s) * time.Second); err != nil {
			t.Fatal(err)
		}
		for _, n := range nodes {
			if !n.down && n.stepping {
				// A Step held by a pull may publish before it returns: a read now is not fresh.
				held++
				if n.podsVersionNow(); n.pvFresh {
					t.Fatalf("%s at %v: PodsVersion read while a Step runs taken as fresh", n.Name, w.Now())
				}
			}
			if n.down || !n.pvFresh {
				continue
			}
			fresh++
			if v := n.pods.PodsVersion(); n.pv != v {
				t.Fatalf("%s at %v: kept PodsVersion %d taken as fresh, the pod workers' %d", n.Name, w.Now(), n.pv, v)
			}
			versions[n.pv] = true
		}
		var err error
		switch s {
		case 10:
			err = w.CreatePod(pod("sleeper", "busybox:1.36"))
		case 20:
			nodes[0].WriteManifest("web.yaml", []byte(webManifest))
		case 60:
			err = w.CreatePod(pod("web", "nginx:1.27"))
		case 100:
			err = w.DeletePod("default", "sleeper", nil)
		case 130:
			nodes[0].DeleteManifest("web.yaml")
		case 150, 250:
			err = each(nodes, (*Node).Kill)
		case 153, 253:
			err = each(nodes, (*Node).Restart)
		case 200:
			err = w.CreatePod(pod("late", "busybox:1.36"))
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if fresh == 0 || held == 0 || len(versions) < 5 {
		t.Fatalf("the kept version was taken as fresh at %d settles, with %d versions, a Step held at %d: the story moved too little", fresh, len(versions), held)
	}
}
