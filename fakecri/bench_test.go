package fakecri

import (
	"context"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"orch.io/orch/fakecri/script"
)

// benchClient serves rt on a unix socket and dials it as the kubelet does.
func benchClient(b testing.TB, rt *Runtime) runtimeapi.RuntimeServiceClient {
	b.Helper()
	ep := serve(b, rt)
	conn, err := grpc.NewClient(ep,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(MaxMessageSize)))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { conn.Close() })
	return runtimeapi.NewRuntimeServiceClient(conn)
}

// timed runs f b.N times and reports the median and 99th percentile.
func timed(b *testing.B, unit time.Duration, name string, f func() error) {
	b.Helper()
	for i := 0; i < 3; i++ { // warm the connection
		if err := f(); err != nil {
			b.Fatal(err)
		}
	}
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		if err := f(); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(start))
	}
	b.StopTimer()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(float64(lat[len(lat)/2])/float64(unit), "p50-"+name)
	b.ReportMetric(float64(lat[len(lat)*99/100])/float64(unit), "p99-"+name)
}

func BenchmarkStatusRoundTrip(b *testing.B) {
	rt, _ := New(Options{})
	c := benchClient(b, rt)
	ctx := context.Background()
	timed(b, time.Microsecond, "µs", func() error {
		_, err := c.Status(ctx, &runtimeapi.StatusRequest{})
		return err
	})
}

func BenchmarkContainerStatusRoundTrip(b *testing.B) {
	rt, _ := New(Options{})
	populate(b, rt, 100, 10)
	c := benchClient(b, rt)
	ctx := context.Background()
	id := rt.State().Containers[500].ID
	timed(b, time.Microsecond, "µs", func() error {
		_, err := c.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: id})
		return err
	})
}

func BenchmarkListContainers10k(b *testing.B) {
	rt, _ := New(Options{})
	populate(b, rt, 1000, 10)
	c := benchClient(b, rt)
	ctx := context.Background()
	timed(b, time.Millisecond, "ms", func() error {
		r, err := c.ListContainers(ctx, &runtimeapi.ListContainersRequest{})
		if err == nil && len(r.Containers) != 10000 {
			err = fmt.Errorf("%d containers", len(r.Containers))
		}
		return err
	})
}

func BenchmarkListContainers10kInProcess(b *testing.B) {
	rt, _ := New(Options{})
	populate(b, rt, 1000, 10)
	ctx := context.Background()
	timed(b, time.Millisecond, "ms", func() error {
		_, err := rt.ListContainers(ctx, &runtimeapi.ListContainersRequest{})
		return err
	})
}

func BenchmarkListContainerStats10k(b *testing.B) {
	rt, _ := New(Options{})
	populate(b, rt, 1000, 10)
	c := benchClient(b, rt)
	ctx := context.Background()
	timed(b, time.Millisecond, "ms", func() error {
		_, err := c.ListContainerStats(ctx, &runtimeapi.ListContainerStatsRequest{})
		return err
	})
}

// populate makes pods × perPod running containers with kubelet-like labels
// and annotations.
func populate(b testing.TB, rt *Runtime, pods, perPod int) {
	b.Helper()
	ctx := context.Background()
	if _, err := rt.PullImage(ctx, &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: "registry.k8s.io/e2e-test-images/agnhost:2.53"}}); err != nil {
		b.Fatal(err)
	}
	for p := 0; p < pods; p++ {
		name := fmt.Sprintf("pod-%05d", p)
		uid := fmt.Sprintf("6f1d2c3b-%04x-4e5f-8a9b-%012x", p, p)
		cfg := &runtimeapi.PodSandboxConfig{
			Metadata:     &runtimeapi.PodSandboxMetadata{Name: name, Namespace: "default", Uid: uid},
			LogDirectory: "/var/log/pods/default_" + name + "_" + uid,
			Labels: map[string]string{"io.kubernetes.pod.name": name, "io.kubernetes.pod.namespace": "default",
				"io.kubernetes.pod.uid": uid, "app": "bench"},
			Annotations: map[string]string{"kubernetes.io/config.seen": "2025-01-01T00:00:00.000000000Z", "kubernetes.io/config.source": "api"},
		}
		sb, err := rt.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: cfg})
		if err != nil {
			b.Fatal(err)
		}
		for i := 0; i < perPod; i++ {
			cname := fmt.Sprintf("container-%d", i)
			cc := &runtimeapi.ContainerConfig{
				Metadata: &runtimeapi.ContainerMetadata{Name: cname},
				Image:    &runtimeapi.ImageSpec{Image: "registry.k8s.io/e2e-test-images/agnhost:2.53", UserSpecifiedImage: "registry.k8s.io/e2e-test-images/agnhost:2.53"},
				Labels: map[string]string{"io.kubernetes.container.name": cname, "io.kubernetes.pod.name": name,
					"io.kubernetes.pod.namespace": "default", "io.kubernetes.pod.uid": uid},
				Annotations: map[string]string{"io.kubernetes.container.hash": "3c2a7a8f", "io.kubernetes.container.restartCount": "0",
					"io.kubernetes.container.terminationMessagePath":   "/dev/termination-log",
					"io.kubernetes.container.terminationMessagePolicy": "File", "io.kubernetes.pod.terminationGracePeriod": "30"},
				LogPath: cname + "/0.log",
			}
			r, err := rt.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: sb.PodSandboxId, Config: cc})
			if err != nil {
				b.Fatal(err)
			}
			if _, err := rt.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: r.ContainerId}); err != nil {
				b.Fatal(err)
			}
		}
	}
	rt.ResetCalls()
}

// rawCodec receives answers as bytes without decoding them: it measures
// what fakecri and the transport cost, apart from the client's own decode.
type rawCodec struct{ base encoding.CodecV2 }

type rawBytes struct{ n int }

func (c rawCodec) Marshal(v any) (mem.BufferSlice, error) { return c.base.Marshal(v) }
func (c rawCodec) Unmarshal(data mem.BufferSlice, v any) error {
	if r, ok := v.(*rawBytes); ok {
		r.n = data.Len()
		return nil
	}
	return c.base.Unmarshal(data, v)
}
func (c rawCodec) Name() string { return c.base.Name() }

func BenchmarkListContainers10kUndecoded(b *testing.B) {
	rt, _ := New(Options{})
	populate(b, rt, 1000, 10)
	ep := serve(b, rt)
	conn, err := grpc.NewClient(ep, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(MaxMessageSize), grpc.ForceCodecV2(rawCodec{encoding.GetCodecV2(protoCodecName)})))
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	ctx := context.Background()
	timed(b, time.Millisecond, "ms", func() error {
		var out rawBytes
		err := conn.Invoke(ctx, "/runtime.v1.RuntimeService/ListContainers", &runtimeapi.ListContainersRequest{}, &out)
		if err == nil && out.n < 10000*500 {
			err = fmt.Errorf("only %d bytes", out.n)
		}
		return err
	})
}

// The client's share of BenchmarkListContainers10k: protobuf-go decoding the same answer (8.5 MB,
// 10,000 containers with a kubelet's labels and annotations), with no runtime involved.
func BenchmarkDecodeListContainers10k(b *testing.B) {
	rt, _ := New(Options{})
	populate(b, rt, 1000, 10)
	resp, err := rt.ListContainers(context.Background(), &runtimeapi.ListContainersRequest{})
	if err != nil {
		b.Fatal(err)
	}
	wire, err := proto.Marshal(resp)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(len(wire))/(1<<20), "MiB")
	timed(b, time.Millisecond, "ms", func() error {
		var out runtimeapi.ListContainersResponse
		if err := proto.Unmarshal(wire, &out); err != nil {
			return err
		}
		if len(out.Containers) != 10000 {
			return fmt.Errorf("decoded %d containers", len(out.Containers))
		}
		return nil
	})
}

// BenchmarkSandboxStats110 is what a simulator's eviction round asks of the runtime's stats, read
// without a call: every sandbox's of a full node (110 pods of one container each, their memory
// a ramp). The clock stays put: the runtime computes the stats afresh at every call all the same.
func BenchmarkSandboxStats110(b *testing.B) {
	mock := clock.NewMock()
	rt, err := New(Options{Clock: mock, Script: &script.Script{Containers: []script.ContainerRule{
		{Match: script.ContainerMatch{Name: "*"}, Usage: &script.Usage{Memory: &script.Curve{Ramp: &script.Ramp{From: script.N(10 << 20), PerSecond: ptrQ("1Mi")}}}},
	}}})
	if err != nil {
		b.Fatal(err)
	}
	populate(b, rt, 110, 1)
	mock.Add(time.Hour)
	for _, c := range []struct {
		name  string
		arena *StatsArena
	}{{"new", nil}, {"arena", &StatsArena{}}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if n := len(rt.SandboxStats(c.arena)); n != 110 {
					b.Fatalf("%d sandboxes' stats, want 110", n)
				}
			}
		})
	}
}
