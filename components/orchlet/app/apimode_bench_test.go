package app

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"

	"orch.io/orch/components/orchlet/app/apptest"
	"orch.io/orch/components/orchlet/host"
)

// BenchmarkAPIServerMode100Pods measures, in wall time, how long 100 pods created through the API
// for one agent on fakecri take until the API shows all of them Running (status posted), and then
// until all are gone after a delete. The target is 2 s for the first figure.
func BenchmarkAPIServerMode100Pods(b *testing.B) {
	kubeconfig, client, _ := apiServer(b, nil)
	args := apptest.WithRuntime(b, "--orchconfig="+kubeconfig, "--hostname-override=node-a", "--max-pods=110")
	o := parse(b, args...)
	cancel, done := runAsync(o, host.NewFake(), clock.New())
	defer func() {
		cancel()
		<-done
	}()
	ctx := context.Background()
	pods := client.CoreV1().Pods("default")
	running := func() int {
		list, err := pods.List(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("status.phase", "Running").String()})
		if err != nil {
			return -1
		}
		return len(list.Items)
	}
	waitCount := func(want func() bool) {
		for deadline := time.Now().Add(time.Minute); !want(); time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				b.Fatal("timed out")
			}
		}
	}
	var toRunning, toGone time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		for p := 0; p < 100; p++ {
			pod := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("web-%d-%d", i, p)},
				Spec:       corev1.PodSpec{NodeName: "node-a", Containers: []corev1.Container{{Name: "app", Image: "busybox:1.36"}}},
			}
			if _, err := pods.Create(ctx, pod, metav1.CreateOptions{}); err != nil {
				b.Fatal(err)
			}
		}
		waitCount(func() bool { return running() == 100 })
		toRunning += time.Since(start)
		start = time.Now()
		if err := pods.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
			b.Fatal(err)
		}
		waitCount(func() bool {
			list, err := pods.List(ctx, metav1.ListOptions{})
			return err == nil && len(list.Items) == 0
		})
		toGone += time.Since(start)
	}
	// What the agent and this benchmark asked of the server, by verb and resource.
	if raw, err := client.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx); err == nil {
		for _, line := range strings.Split(string(raw), "\n") {
			if strings.HasPrefix(line, "apiserver_request_total") {
				b.Log(line)
			}
		}
	}
	b.ReportMetric(toRunning.Seconds()/float64(b.N), "s-to-all-running")
	b.ReportMetric(toGone.Seconds()/float64(b.N), "s-to-all-gone")
}
