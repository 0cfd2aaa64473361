package apiclient

import (
	"bytes"
	"context"

	"google.golang.org/protobuf/encoding/protowire"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
)

// PostedNode is the Node a status post answered, over which the next post is made. When the
// answer was protobuf it is kept as its bytes: the next post sends its metadata and spec as they
// came, with the new status, and neither decodes nor encodes them again (the answer's decode and
// its encode back were a third of a status post's allocations on the agent's side, every ten
// seconds at every node). Those bytes are what client-go's
// encoding of the decoded Node would be, as the server encodes with the same generated code,
// except that fields this client does not know are sent back rather than dropped.
type PostedNode struct {
	// Node is the decoded Node, when the answer was not kept as bytes.
	Node *corev1.Node
	// name is the Node's; head its message's metadata and spec fields as answered, and status
	// its status field's contents (nil head: Node).
	name         string
	head, status []byte
}

// NewPostedNode is n as the base of a status post.
func NewPostedNode(n *corev1.Node) PostedNode { return PostedNode{Node: n} }

// Valid says whether p is a Node, not the zero PostedNode.
func (p PostedNode) Valid() bool { return p.Node != nil || p.head != nil }

// Status is the posted Node's status.
func (p PostedNode) Status() (corev1.NodeStatus, error) {
	if p.head == nil {
		return p.Node.Status, nil
	}
	var s corev1.NodeStatus
	err := s.Unmarshal(p.status)
	return s, err
}

// The protobuf serializer's prefix, and the envelope (runtime.Unknown) and Node field numbers.
var protobufPrefix = []byte{0x6b, 0x38, 0x73, 0x00}

const (
	unknownTypeMeta, unknownRaw, unknownContentEncoding, unknownContentType protowire.Number = 1, 2, 3, 4
	typeMetaAPIVersion, typeMetaKind                                        protowire.Number = 1, 2
	nodeMetadata, nodeSpec, nodeStatus                                      protowire.Number = 1, 2, 3
)

// UpdateNodeStatus puts status over posted, as UpdateStatus of posted's Node with that status
// would, and returns what the server answered. A client configured for protobuf sends a Node
// kept as bytes as it is (client-go's clients fall back to no other encoding for protobuf: only
// for CBOR); another decodes it and sends it as client-go sends it.
func (c *CoreV1Client) UpdateNodeStatus(ctx context.Context, posted PostedNode, status *corev1.NodeStatus) (PostedNode, error) {
	// No options: UpdateStatus's empty UpdateOptions are no parameters, and encoding them (a
	// conversion through reflection) was a tenth of this request's building.
	req := c.Nodes().request(c.client.Put())
	if posted.head != nil && c.protobuf {
		req = wireForm(req.Name(posted.name).SubResource("status"), c.wireAgent).Body(nodeBody(posted.head, status))
	} else {
		node := posted.Node
		if posted.head != nil {
			node = &corev1.Node{}
			if err := node.Unmarshal(append(append([]byte{}, posted.head...), statusField(status)...)); err != nil {
				return PostedNode{}, err
			}
		}
		node.Status = *status
		req = req.Name(node.Name).SubResource("status").Body(node)
	}
	return c.nodeAnswer(req.Do(ctx))
}

// nodeAnswer is a status post's answer: as bytes when it is a protobuf Node whose fields are
// metadata, spec and status once each in that order, as the generated code writes them; decoded
// otherwise, as Into decodes it (with its errors).
func (c *CoreV1Client) nodeAnswer(r interface {
	Error() error
	Raw() ([]byte, error)
	Into(runtime.Object) error
}) (PostedNode, error) {
	if err := r.Error(); err != nil {
		return PostedNode{}, err
	}
	body, _ := r.Raw()
	if p, ok := nodeWire(body); ok {
		return p, nil
	}
	node := &corev1.Node{}
	if err := r.Into(node); err != nil {
		return PostedNode{}, err
	}
	return PostedNode{Node: node}, nil
}

// nodeWire reads a protobuf answer's Node: its three fields each once and in order, and its name.
func nodeWire(body []byte) (PostedNode, bool) {
	raw, ok := envelopeObject(body, "v1", "Node")
	if !ok {
		return PostedNode{}, false
	}
	at, status, ok := fieldsInOrder(raw, nodeStatus)
	if !ok {
		return PostedNode{}, false
	}
	_, metadata, _ := field(raw)
	name, ok := metadataName(metadata)
	if !ok {
		return PostedNode{}, false
	}
	return PostedNode{name: name, head: raw[:at:at], status: status}, true
}

// envelopeObject is the object's bytes in a protobuf answer: the envelope's type apiVersion and
// kind, each of its fields once, its encoding and content type empty.
func envelopeObject(body []byte, apiVersion, kind string) ([]byte, bool) {
	rest, ok := bytes.CutPrefix(body, protobufPrefix)
	if !ok {
		return nil, false
	}
	var raw []byte
	var seen [unknownContentType + 1]bool
	for len(rest) > 0 {
		num, v, n := field(rest)
		if n < 0 || num < unknownTypeMeta || num > unknownContentType || seen[num] {
			return nil, false
		}
		seen[num], rest = true, rest[n:]
		switch num {
		case unknownTypeMeta:
			if !isType(v, apiVersion, kind) {
				return nil, false
			}
		case unknownRaw:
			raw = v
		default:
			if len(v) != 0 {
				return nil, false
			}
		}
	}
	if !seen[unknownTypeMeta] || raw == nil {
		return nil, false
	}
	return raw, true
}

// fieldsInOrder says whether msg's fields are 1 to last, each once, in order and nothing else, as
// the generated code writes an object's; at is where the last starts, and v its contents.
func fieldsInOrder(msg []byte, last protowire.Number) (at int, v []byte, ok bool) {
	for want := protowire.Number(1); want <= last; want++ {
		num, contents, n := field(msg[at:])
		if n < 0 || num != want {
			return 0, nil, false
		}
		if num == last {
			return at, contents, at+n == len(msg)
		}
		at += n
	}
	return 0, nil, false
}

// field is the length-delimited field at the start of b: its number, contents and length; n < 0
// when it is none.
func field(b []byte) (protowire.Number, []byte, int) {
	num, typ, n := protowire.ConsumeTag(b)
	if n < 0 || typ != protowire.BytesType {
		return 0, nil, -1
	}
	v, m := protowire.ConsumeBytes(b[n:])
	if m < 0 {
		return 0, nil, -1
	}
	return num, v, n + m
}

// isType says whether an envelope's TypeMeta is apiVersion and kind.
func isType(b []byte, apiVersion, kind string) bool {
	var v, k []byte
	for len(b) > 0 {
		num, contents, n := field(b)
		switch {
		case n < 0:
			return false
		case num == typeMetaAPIVersion:
			v = contents
		case num == typeMetaKind:
			k = contents
		}
		b = b[n:]
	}
	return string(v) == apiVersion && string(k) == kind
}

// metadataName is the name (ObjectMeta's field 1) in a Node's metadata, as decoding takes it:
// the last one written.
func metadataName(b []byte) (string, bool) {
	name := ""
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return "", false
		}
		m := protowire.ConsumeFieldValue(num, typ, b[n:])
		if m < 0 {
			return "", false
		}
		if num == 1 && typ == protowire.BytesType {
			v, _ := protowire.ConsumeBytes(b[n:])
			name = string(v)
		}
		b = b[n+m:]
	}
	return name, name != ""
}

// wireForm sets the headers of a protobuf body sent as bytes: Content-Type, and with agent (a
// client's wireAgent) orch's media type and the user agent as protobufWire would put them on the
// wire, which then passes the request on without a copy; without, Kubernetes' type, for the
// wrapper (or none) to rename.
func wireForm(req *rest.Request, agent string) *rest.Request {
	if agent == "" {
		return req.SetHeader("Content-Type", k8sProtobufMediaType)
	}
	return req.SetHeader("Content-Type", ProtobufMediaType).SetHeader("User-Agent", agent)
}

// nodeBody is the protobuf body of a Node whose metadata and spec fields are head, with status:
// the bytes client-go's serializer writes for it, envelope and all, in one allocation.
func nodeBody(head []byte, status *corev1.NodeStatus) []byte {
	return objectBody("v1", "Node", spliced{head: head, num: nodeStatus, last: status, size: status.Size()})
}

// objectBody is the protobuf body of the object o of the type apiVersion and kind, as client-go's
// serializer writes it: its prefix, then the envelope (runtime.Unknown) around the object's bytes.
func objectBody(apiVersion, kind string, o spliced) []byte {
	size := o.Size()
	unk := runtime.Unknown{TypeMeta: runtime.TypeMeta{APIVersion: apiVersion, Kind: kind}}
	data := make([]byte, len(protobufPrefix)+unk.Size()+1+protowire.SizeVarint(uint64(size))+size)
	copy(data, protobufPrefix)
	if _, err := unk.NestedMarshalTo(data[len(protobufPrefix):], o, uint64(size)); err != nil {
		panic(err) // the sizes above are the ones written
	}
	return data
}

// statusField is status as a Node's field.
func statusField(status *corev1.NodeStatus) []byte {
	o := spliced{num: nodeStatus, last: status, size: status.Size()}
	data := make([]byte, o.Size())
	_, _ = o.MarshalTo(data)
	return data
}

// spliced is an object's message: its fields before the last as they were encoded (head), then
// the last, field num, encoded (size its length).
type spliced struct {
	head []byte
	num  protowire.Number
	last interface {
		MarshalToSizedBuffer([]byte) (int, error)
	}
	size int
}

func (o spliced) Size() int {
	return len(o.head) + protowire.SizeTag(o.num) + protowire.SizeVarint(uint64(o.size)) + o.size
}

func (o spliced) MarshalTo(data []byte) (int, error) {
	i := copy(data, o.head)
	i += len(protowire.AppendTag(data[i:i], o.num, protowire.BytesType))
	i += len(protowire.AppendVarint(data[i:i], uint64(o.size)))
	m, err := o.last.MarshalToSizedBuffer(data[i : i+o.size])
	return i + m, err
}
