package apipods

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"orch.io/orch/components/orchlet/sources"
)

// A Sync a second over 110 running pods whose statuses did not change: what the syncer costs a
// node at rest. With the workers' shared pods, an unchanged pod is the same pointer and costs no
// comparison ("shared"); "copies" hands out fresh copies, as a reader of Pods gets, so every status
// is compared field by field with the one posted last.
func BenchmarkSyncUnchanged110Pods(b *testing.B) {
	for _, shared := range []bool{true, false} {
		name := map[bool]string{true: "shared", false: "copies"}[shared]
		b.Run(name, func(b *testing.B) {
			s, w, client := newSyncer(b)
			ctx := context.Background()
			now := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
			for i := range 110 {
				pod := &corev1.Pod{
					ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("app-%d", i), Namespace: "default"},
					Spec:       corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Name: "app", Image: "app:1"}}},
				}
				created, err := client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{})
				if err != nil {
					b.Fatal(err)
				}
				created.Annotations = map[string]string{sources.ConfigSourceAnnotation: sources.SourceAPI}
				created.Status = corev1.PodStatus{
					Phase: corev1.PodRunning, PodIP: "10.88.0.2", StartTime: &now, QOSClass: corev1.PodQOSBestEffort,
					Conditions: []corev1.PodCondition{
						{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: now},
						{Type: corev1.ContainersReady, Status: corev1.ConditionTrue, LastTransitionTime: now},
						{Type: corev1.PodInitialized, Status: corev1.ConditionTrue, LastTransitionTime: now},
						{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: now},
					},
					ContainerStatuses: []corev1.ContainerStatus{{
						Name: "app", Image: "app:1", ImageID: "sha256:0123", ContainerID: "fakecri://0123", Ready: true,
						State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}},
					}},
				}
				w.pods = append(w.pods, *created)
			}
			w.shared = shared
			s.Sync(ctx) // the first statuses are posted
			for b.Loop() {
				s.Sync(ctx)
			}
		})
	}
}
