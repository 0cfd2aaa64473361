package apiclient

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/client-go/rest"
)

// protobufAnswer is obj as the API server encodes an answer: Kubernetes' protobuf serializer.
func protobufAnswer(t *testing.T, obj runtime.Object) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := protobuf.NewSerializer(nil, nil).Encode(obj, &buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// clientGoBody is the body client-go's UpdateStatus sends for node: the clients' own encoder.
func clientGoBody(t *testing.T, node *corev1.Node) []byte {
	t.Helper()
	c, err := coreCodecs()
	if err != nil {
		t.Fatal(err)
	}
	info, ok := runtime.SerializerInfoForMediaType(c.serializers.SupportedMediaTypes(), k8sProtobufMediaType)
	if !ok {
		t.Fatal("no protobuf serializer")
	}
	data, err := runtime.Encode(c.serializers.EncoderForVersion(info.Serializer, corev1.SchemeGroupVersion), node)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func typedNode(n *corev1.Node) *corev1.Node {
	n.APIVersion, n.Kind = "v1", "Node"
	return n
}

func richNode() *corev1.Node {
	deleted := metav1.NewTime(time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC))
	grace := int64(30)
	return typedNode(&corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name: "nœud-1", UID: "u-1", ResourceVersion: "42", Generation: 3,
			CreationTimestamp: metav1.NewTime(time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)),
			DeletionTimestamp: &deleted, DeletionGracePeriodSeconds: &grace,
			Labels:          map[string]string{"orch.io/hostname": "n1", "a": "", "zone": "z1"},
			Annotations:     map[string]string{"volumes.orch.io/controller-managed-attach-detach": "true", "b": "x"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Thing", Name: "t", UID: "t-1"}},
			Finalizers:      []string{"orch.io/one", "orch.io/two"},
			ManagedFields: []metav1.ManagedFieldsEntry{
				{Manager: "orchlet", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1", Time: &deleted,
					FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:metadata":{"f:labels":{".":{},"f:zone":{}}}}`)},
				{Manager: "orchlet", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1", Time: &deleted,
					FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:status":{"f:conditions":{}}}`), Subresource: "status"},
			},
		},
		Spec: corev1.NodeSpec{PodCIDR: "10.0.0.0/24", PodCIDRs: []string{"10.0.0.0/24", "fd00::/64"}, ProviderID: "sim://n1", Unschedulable: true,
			Taints: []corev1.Taint{{Key: "k", Value: "v", Effect: corev1.TaintEffectNoSchedule, TimeAdded: &deleted}}},
		Status: corev1.NodeStatus{
			Capacity:    corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("8Gi")},
			Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1900m")},
			Phase:       corev1.NodeRunning,
			Conditions:  []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "OrchletReady", LastHeartbeatTime: deleted, LastTransitionTime: deleted}},
			Addresses:   []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.0.0.1"}, {Type: corev1.NodeHostName, Address: "n1"}},
			NodeInfo:    corev1.NodeSystemInfo{MachineID: "m", KubeletVersion: "v0.1.0", OperatingSystem: "linux", Architecture: "amd64"},
			Images:      []corev1.ContainerImage{{Names: []string{"pause:3.10", "sha256:1"}, SizeBytes: 700_000}},
		},
	})
}

// The body of a status post over an answer kept as bytes is, byte for byte, what client-go sends
// for the answer decoded with that status, for Nodes with every kind of field, over statuses of
// every size (none included); and the answer's status and name read from the bytes are the
// decoded answer's.
func TestNodeBodyIsClientGos(t *testing.T) {
	now := metav1.NewTime(time.Date(2026, 11, 30, 11, 0, 0, 0, time.UTC))
	statuses := []corev1.NodeStatus{
		{},
		richNode().Status,
		{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionFalse, Reason: "OrchletNotReady", Message: strings.Repeat("m", 300), LastHeartbeatTime: now, LastTransitionTime: now}},
			DaemonEndpoints: corev1.NodeDaemonEndpoints{KubeletEndpoint: corev1.DaemonEndpoint{Port: 10250}}},
	}
	for _, tc := range []struct {
		name string
		node *corev1.Node
	}{
		{"name alone", typedNode(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}})},
		{"every kind of field", richNode()},
		{"no status", func() *corev1.Node { n := richNode(); n.Status = corev1.NodeStatus{}; return n }()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			answer := protobufAnswer(t, tc.node)
			p, ok := nodeWire(answer)
			if !ok {
				t.Fatal("the answer was not kept as bytes")
			}
			if p.name != tc.node.Name {
				t.Errorf("name %q, want %q", p.name, tc.node.Name)
			}
			got, err := p.Status()
			if err != nil || !reflect.DeepEqual(got, decodeNode(t, answer).Status) {
				t.Errorf("status read from the bytes %+v (%v), decoded %+v", got, err, decodeNode(t, answer).Status)
			}
			for i, status := range statuses {
				decoded := decodeNode(t, answer)
				decoded.Status = status
				if got, want := nodeBody(p.head, &status), clientGoBody(t, decoded); !bytes.Equal(got, want) {
					t.Errorf("status %d: body\n%x\nclient-go's\n%x", i, got, want)
				}
			}
		})
	}
}

func decodeNode(t *testing.T, answer []byte) *corev1.Node {
	t.Helper()
	c, err := coreCodecs()
	if err != nil {
		t.Fatal(err)
	}
	info, _ := runtime.SerializerInfoForMediaType(c.serializers.SupportedMediaTypes(), k8sProtobufMediaType)
	n := &corev1.Node{}
	if _, _, err := info.Serializer.Decode(answer, nil, n); err != nil {
		t.Fatal(err)
	}
	return n
}

// Answers that are no protobuf Node of the three fields in order are not kept as bytes (they are
// decoded, as before).
func TestNodeWireOnlyForNodes(t *testing.T) {
	node := typedNode(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}, Status: corev1.NodeStatus{Phase: corev1.NodeRunning}})
	answer := protobufAnswer(t, node)
	envelope := func(typeMeta, raw []byte, extra ...byte) []byte {
		b := append([]byte{}, protobufPrefix...)
		b = protowire.AppendTag(b, unknownTypeMeta, protowire.BytesType)
		b = protowire.AppendBytes(b, typeMeta)
		b = protowire.AppendTag(b, unknownRaw, protowire.BytesType)
		b = protowire.AppendBytes(b, raw)
		return append(b, extra...)
	}
	typeMeta := func(apiVersion, kind string) []byte {
		b := protowire.AppendTag(nil, typeMetaAPIVersion, protowire.BytesType)
		b = protowire.AppendString(b, apiVersion)
		b = protowire.AppendTag(b, typeMetaKind, protowire.BytesType)
		return protowire.AppendString(b, kind)
	}
	raw, err := node.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	fieldOf := func(num protowire.Number, v []byte) []byte {
		return protowire.AppendBytes(protowire.AppendTag(nil, num, protowire.BytesType), v)
	}
	meta, _ := node.ObjectMeta.Marshal()
	spec, _ := node.Spec.Marshal()
	status, _ := node.Status.Marshal()
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	if _, ok := nodeWire(envelope(typeMeta("v1", "Node"), raw)); !ok {
		t.Fatal("the envelope made here is not read: the rows below test nothing")
	}
	for name, body := range map[string][]byte{
		"JSON":                       []byte(`{"kind":"Node","apiVersion":"v1","metadata":{"name":"n1"}}`),
		"another kind":               envelope(typeMeta("v1", "Pod"), raw),
		"another version":            envelope(typeMeta("v2", "Node"), raw),
		"no type":                    envelope(nil, raw),
		"a content encoding":         envelope(typeMeta("v1", "Node"), raw, cat(fieldOf(unknownContentEncoding, []byte("gzip")))...),
		"the raw object twice":       envelope(typeMeta("v1", "Node"), raw, cat(fieldOf(unknownRaw, raw))...),
		"truncated":                  answer[:len(answer)-3],
		"an unknown field after":     envelope(typeMeta("v1", "Node"), cat(raw, fieldOf(4, []byte("x")))),
		"status before spec":         envelope(typeMeta("v1", "Node"), cat(fieldOf(nodeMetadata, meta), fieldOf(nodeStatus, status), fieldOf(nodeSpec, spec))),
		"no status":                  envelope(typeMeta("v1", "Node"), cat(fieldOf(nodeMetadata, meta), fieldOf(nodeSpec, spec))),
		"no name":                    envelope(typeMeta("v1", "Node"), cat(fieldOf(nodeMetadata, nil), fieldOf(nodeSpec, spec), fieldOf(nodeStatus, status))),
		"a varint where spec is":     envelope(typeMeta("v1", "Node"), cat(fieldOf(nodeMetadata, meta), protowire.AppendVarint(protowire.AppendTag(nil, nodeSpec, protowire.VarintType), 1), fieldOf(nodeStatus, status))),
		"no prefix":                  answer[len(protobufPrefix):],
		"an envelope field unknown":  envelope(typeMeta("v1", "Node"), raw, cat(fieldOf(5, nil))...),
		"metadata that is no object": envelope(typeMeta("v1", "Node"), cat(fieldOf(nodeMetadata, []byte{0xff}), fieldOf(nodeSpec, spec), fieldOf(nodeStatus, status))),
	} {
		if _, ok := nodeWire(body); ok {
			t.Errorf("%s: kept as bytes", name)
		}
	}
}

// Against the real handler, status posts over answers kept as bytes write what they carry and
// keep the rest of the Node; over a decoded Node (the registration's) the answer is kept as bytes.
func TestUpdateNodeStatusOnTheWire(t *testing.T) {
	for _, contentType := range []string{ProtobufMediaType, "application/json"} {
		t.Run(contentType, func(t *testing.T) {
			c, seen := newClients(t, contentType)
			ctx := context.Background()
			created, err := c.Core.Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{"zone": "z1"}}}, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			posted := NewPostedNode(created)
			for i, phase := range []corev1.NodePhase{corev1.NodePending, corev1.NodeRunning, corev1.NodeTerminated} {
				status := corev1.NodeStatus{Phase: phase, Addresses: []corev1.NodeAddress{{Type: corev1.NodeHostName, Address: string(phase)}}}
				if posted, err = c.Heartbeat.UpdateNodeStatus(ctx, posted, &status); err != nil {
					t.Fatalf("post %d: %v", i, err)
				}
				if kept := posted.head != nil; kept != (contentType == ProtobufMediaType) {
					t.Errorf("post %d: answer kept as bytes %v", i, kept)
				}
				got, err := c.Core.Nodes().Get(ctx, "n1", metav1.GetOptions{})
				if err != nil {
					t.Fatal(err)
				}
				if got.Status.Phase != phase || got.Status.Addresses[0].Address != string(phase) || got.Labels["zone"] != "z1" || got.UID != created.UID {
					t.Errorf("post %d: stored %+v", i, got)
				}
				if answered, err := posted.Status(); err != nil || !reflect.DeepEqual(answered, got.Status) {
					t.Errorf("post %d: answered status %+v (%v), stored %+v", i, answered, err, got.Status)
				}
			}
			want := "PUT /api/v1/nodes/n1/status sent=" + contentType
			if n := strings.Count(seen.String(), want); n != 3 {
				t.Errorf("%d of 3 posts %q:\n%s", n, want, seen)
			}
		})
	}
}

// A status post over a decoded Node and over one kept as bytes are, on the wire, the request
// UpdateStatus makes with empty options: method, URL, headers and body.
func TestUpdateNodeStatusIsUpdateStatus(t *testing.T) {
	node := richNode()
	answer := protobufAnswer(t, node)
	var sent []string
	c := recordingClients(t, answer, ProtobufMediaType, &sent)
	ctx := context.Background()
	status := corev1.NodeStatus{Phase: corev1.NodeRunning, Addresses: []corev1.NodeAddress{{Type: corev1.NodeHostName, Address: "n1"}}}
	withStatus := node.DeepCopy()
	withStatus.Status = status
	if _, err := c.Heartbeat.Nodes().UpdateStatus(ctx, withStatus, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	posted, err := c.Heartbeat.UpdateNodeStatus(ctx, NewPostedNode(node.DeepCopy()), &status)
	if err != nil || posted.head == nil {
		t.Fatalf("over a decoded Node: %v, kept as bytes %v", err, posted.head != nil)
	}
	if _, err := c.Heartbeat.UpdateNodeStatus(ctx, posted, &status); err != nil {
		t.Fatal(err)
	}
	if len(sent) != 3 || sent[1] != sent[0] || sent[2] != sent[0] {
		t.Errorf("requests differ:\n%s", strings.Join(sent, "\n"))
	}
}

// recordingClients are protobuf clients whose every request is added to *sent as its method, URL,
// headers and body, and answered 200 with answer as answerType.
func recordingClients(t *testing.T, answer []byte, answerType string, sent *[]string) *Clients {
	t.Helper()
	c, err := New(&rest.Config{Host: "https://api.invalid", Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			return nil, err
		}
		*sent = append(*sent, fmt.Sprintf("%s %s %q %x", r.Method, r.URL, r.Header, body))
		return &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {answerType}}, Body: io.NopCloser(bytes.NewReader(answer)), Request: r}, nil
	})}, Settings{ContentType: ProtobufMediaType, UserAgent: "orchlet/v1.2.3"})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// The heartbeats sent as bytes reach the transport as client-go built them, not copied by the
// wrapper (a retry after a 429 with Retry-After sends the very same header map again), and each
// attempt is on the wire what client-go's own request is (the wrapper renaming and copying it):
// UpdateStatus's for a status post, a Put of the renewed Lease for a renewal.
func TestHeartbeatsSentAsBuilt(t *testing.T) {
	node := richNode()
	holder := "n1"
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "n1", Namespace: "orch-node-lease", UID: "l-1", ResourceVersion: "9"}}
	status := corev1.NodeStatus{Phase: corev1.NodeRunning}
	renew := func(s *coordinationv1.LeaseSpec) { s.HolderIdentity = &holder }
	for name, tc := range map[string]struct {
		answer   []byte
		clientGo func(context.Context, *Clients) error
		bytes    func(context.Context, *Clients) (bool, error)
	}{
		"status post": {
			answer: protobufAnswer(t, node),
			clientGo: func(ctx context.Context, c *Clients) error {
				withStatus := node.DeepCopy()
				withStatus.Status = status
				_, err := c.Heartbeat.Nodes().UpdateStatus(ctx, withStatus, metav1.UpdateOptions{})
				return err
			},
			bytes: func(ctx context.Context, c *Clients) (bool, error) {
				posted, err := c.Heartbeat.UpdateNodeStatus(ctx, NewPostedNode(node.DeepCopy()), &status)
				if err != nil {
					return false, err
				}
				posted, err = c.Heartbeat.UpdateNodeStatus(ctx, posted, &status)
				return posted.head != nil, err
			},
		},
		"lease renewal": {
			answer: func() []byte { b, _ := leaseProtobuf(t, lease); return b }(),
			clientGo: func(ctx context.Context, c *Clients) error {
				renewed := lease.DeepCopy()
				renew(&renewed.Spec)
				return c.Leases.Put().Namespace("orch-node-lease").Resource("leases").Name("n1").Body(renewed).Do(ctx).Error()
			},
			bytes: func(ctx context.Context, c *Clients) (bool, error) {
				posted, err := RenewLease(ctx, c.Leases, "orch-node-lease", "n1", NewPostedLease(lease.DeepCopy()), renew)
				if err != nil {
					return false, err
				}
				posted, err = RenewLease(ctx, c.Leases, "orch-node-lease", "n1", posted, renew)
				return posted.head != nil, err
			},
		},
	} {
		t.Run(name, func(t *testing.T) {
			var sent, headers []string
			attempt := 0
			c, err := New(&rest.Config{Host: "https://api.invalid", Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
				body, err := io.ReadAll(r.Body)
				if err != nil {
					return nil, err
				}
				sent = append(sent, fmt.Sprintf("%s %s %q %x", r.Method, r.URL, r.Header, body))
				headers = append(headers, fmt.Sprintf("%p", r.Header))
				if attempt++; attempt%2 == 1 {
					return &http.Response{StatusCode: http.StatusTooManyRequests, Header: http.Header{"Retry-After": {"0"}}, Body: http.NoBody, Request: r}, nil
				}
				return &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {ProtobufMediaType}}, Body: io.NopCloser(bytes.NewReader(tc.answer)), Request: r}, nil
			})}, Settings{ContentType: ProtobufMediaType, UserAgent: "orchlet/v1.2.3"})
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			if err := tc.clientGo(ctx, c); err != nil {
				t.Fatal(err)
			}
			kept, err := tc.bytes(ctx, c)
			if err != nil || !kept {
				t.Fatalf("answer kept as bytes %v, %v", kept, err)
			}
			if len(sent) != 6 {
				t.Fatalf("%d attempts, want 6 (three requests, each retried once)", len(sent))
			}
			for i, s := range sent {
				if s != sent[0] {
					t.Errorf("attempt %d differs from client-go's:\n%s\n%s", i, s, sent[0])
				}
			}
			if headers[0] == headers[1] {
				t.Errorf("client-go's request (Kubernetes' type, no user agent) not copied by the wrapper")
			}
			if headers[4] != headers[5] {
				t.Errorf("the heartbeat sent over bytes was copied by the wrapper")
			}
		})
	}
}
