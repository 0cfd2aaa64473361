package nodestatus

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/client-go/rest"
	cri "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"

	"orch.io/orch/components/orchlet/apiclient"
)

// stubRuntime answers the status's runtime calls at once, as the simulator's fake runtime does.
type stubRuntime struct{ cri.RuntimeService }

type stubImages struct{ cri.ImageManagerService }

func (stubRuntime) Version(context.Context, string) (*runtimeapi.VersionResponse, error) {
	return &runtimeapi.VersionResponse{RuntimeName: "fakecri", RuntimeVersion: "0.1.0"}, nil
}

func (stubRuntime) Status(context.Context, bool) (*runtimeapi.StatusResponse, error) {
	return &runtimeapi.StatusResponse{Status: &runtimeapi.RuntimeStatus{Conditions: []*runtimeapi.RuntimeCondition{
		{Type: runtimeapi.RuntimeReady, Status: true}, {Type: runtimeapi.NetworkReady, Status: true},
	}}}, nil
}

func (stubImages) ListImages(context.Context, *runtimeapi.ImageFilter) ([]*runtimeapi.Image, error) {
	return []*runtimeapi.Image{{Id: "sha256:1", RepoTags: []string{"pause:3.10"}, Size: 700_000}}, nil
}

// cannedServer answers every request with the protobuf encoding of answer, having read the
// body: the client's side of a round trip alone.
type cannedServer struct{ answer []byte }

func (s cannedServer) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		_, _ = io.Copy(io.Discard, r.Body)
		_ = r.Body.Close()
	}
	return &http.Response{
		StatusCode: http.StatusOK, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1, Request: r,
		Header:        http.Header{"Content-Type": {apiclient.ProtobufMediaType}},
		ContentLength: int64(len(s.answer)), Body: io.NopCloser(bytes.NewReader(s.answer)),
	}, nil
}

func protobufOf(b *testing.B, obj runtime.Object) []byte {
	b.Helper()
	var buf bytes.Buffer
	if err := protobuf.NewSerializer(nil, nil).Encode(obj, &buf); err != nil {
		b.Fatal(err)
	}
	return buf.Bytes()
}

func benchController(b *testing.B, answer runtime.Object) *Controller {
	b.Helper()
	clients, err := apiclient.New(&rest.Config{Host: "https://api.invalid", Transport: cannedServer{protobufOf(b, answer)}},
		apiclient.Settings{ContentType: apiclient.ProtobufMediaType, UserAgent: "orchlet/v0.1.0"})
	if err != nil {
		b.Fatal(err)
	}
	clk := clock.NewMock()
	clk.Set(start)
	return New(Options{
		Clock: clk, Core: clients.Core, Heartbeat: clients.Heartbeat, Leases: clients.Leases, Node: "n1", Register: true,
		Addresses:   []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.0.0.1"}, {Type: corev1.NodeHostName, Address: "n1"}},
		Capacity:    corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("8Gi"), corev1.ResourcePods: resource.MustParse("110")},
		Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("8092Mi"), corev1.ResourcePods: resource.MustParse("110")},
		Port:        10250, StatusFrequency: 10 * time.Second, MaxImages: 50, Runtime: stubRuntime{}, Images: stubImages{}, Version: "v0.1.0", Logger: klog.Background(),
	})
}

// BenchmarkStatusPost is one node status post on the agent's side (building the status, client-go,
// the protobuf encode and the answer's decode) against a server that answers at once.
func BenchmarkStatusPost(b *testing.B) {
	ctx := context.Background()
	probe := benchController(b, &corev1.Node{})
	status, err := probe.status(ctx)
	if err != nil {
		b.Fatal(err)
	}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", UID: "u1", ResourceVersion: "7"}, Status: status}
	node.APIVersion, node.Kind = "v1", "Node"
	c := benchController(b, node)
	c.posted = apiclient.NewPostedNode(node.DeepCopy())
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if err := c.SyncStatus(ctx); err != nil {
			b.Fatal(err)
		}
		if !c.posted.Valid() {
			b.Fatal("the answer was not kept: " + strconv.Itoa(i))
		}
	}
}

// BenchmarkLeaseRenewal is one lease renewal on the agent's side.
func BenchmarkLeaseRenewal(b *testing.B) {
	ctx := context.Background()
	holder, duration, now := "n1", int32(LeaseDurationSeconds), metav1.NewMicroTime(start)
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "n1", Namespace: LeaseNamespace, UID: "l1", ResourceVersion: "8"},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &duration, RenewTime: &now}}
	lease.APIVersion, lease.Kind = "coordination.orch.io/v1", "Lease"
	c := benchController(b, lease)
	c.lease = apiclient.NewPostedLease(lease.DeepCopy())
	b.ReportAllocs()
	for b.Loop() {
		if err := c.RenewLease(ctx); err != nil {
			b.Fatal(err)
		}
	}
}
