package generic_test

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"orch.io/orch/components/apiserver/registry/core"
	"orch.io/orch/components/apiserver/registry/generic"
	"orch.io/orch/components/apiserver/storage/memory"
)

// A node agent's status post: read the node, change its heartbeats, write it through
// nodes/status with managedFields recorded, as orchlet does every 10 s.
func BenchmarkNodeStatusPost(b *testing.B) { benchmarkNodeStatusPost(b, true) }

// BenchmarkNodeStatusRepost is orchlet's post: the node is the last post's answer, not read
// again, so the update reads what the store's last write kept.
func BenchmarkNodeStatusRepost(b *testing.B) { benchmarkNodeStatusPost(b, false) }

func benchmarkNodeStatusPost(b *testing.B, read bool) {
	clk := clock.NewUnyieldingMock() // the upstream mock sleeps a millisecond at every move
	clk.Set(time.Date(2026, 11, 25, 11, 0, 0, 0, time.UTC))
	st := memory.New(clk)
	nodes := generic.New(generic.Options{Strategy: core.NodeStrategy{Clock: clk}, Storage: st, Clock: clk})
	status := nodes.WithUpdates("status", core.NodeStatusStrategy{NodeStrategy: core.NodeStrategy{Clock: clk}})
	ctx := generic.WithManager(context.Background(), "orchlet")
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1", Labels: map[string]string{"kubernetes.io/hostname": "node-1"}}}
	obj, err := nodes.Create(ctx, "", node, false)
	if err != nil {
		b.Fatal(err)
	}
	capacity := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("8Gi"), corev1.ResourcePods: resource.MustParse("110")}
	b.ReportAllocs()
	cpu := processCPU(b)
	for b.Loop() {
		if read {
			if obj, err = status.Get(ctx, "", "node-1"); err != nil {
				b.Fatal(err)
			}
		}
		n := obj.(*corev1.Node)
		clk.Add(10 * time.Second)
		now := metav1.NewTime(clk.Now())
		n.Status.Capacity, n.Status.Allocatable = capacity, capacity
		n.Status.Conditions = nil
		for _, c := range []corev1.NodeConditionType{corev1.NodeMemoryPressure, corev1.NodeDiskPressure, corev1.NodePIDPressure, corev1.NodeReady} {
			n.Status.Conditions = append(n.Status.Conditions, corev1.NodeCondition{Type: c, Status: corev1.ConditionFalse, LastHeartbeatTime: now, Reason: "KubeletHasSufficientMemory", Message: "orchlet has sufficient memory available"})
		}
		n.Status.Images = []corev1.ContainerImage{{Names: []string{"registry.k8s.io/pause:3.10"}, SizeBytes: 300000}, {Names: []string{"app:1"}, SizeBytes: 5 << 20}}
		n.Status.NodeInfo = corev1.NodeSystemInfo{KubeletVersion: "v1.34.4", OperatingSystem: "linux", Architecture: "amd64", ContainerRuntimeVersion: "fakecri://1.0"}
		if obj, _, err = status.Update(ctx, "", "node-1", n, false); err != nil {
			b.Fatal(err)
		}
	}
	// CPU rather than wall time: the machine is shared, and a loaded one stretches wall time.
	b.ReportMetric(float64((processCPU(b)-cpu).Microseconds())/float64(b.N), "cpu-µs/op")
}

// processCPU is the CPU (user and system) the process has used.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
