package fakecri

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// The generated servers must embed the Unimplemented types. Runtime defines
// every method itself (a test checks), so the embedded ones sit one level
// deeper and are shadowed: they only supply the unexported marker method.
type unimplRuntime struct {
	runtimeapi.UnimplementedRuntimeServiceServer
}

type unimplImage struct {
	runtimeapi.UnimplementedImageServiceServer
}

type runtimeServer struct {
	*Runtime
	unimplRuntime
	wire *wireCodec
}

// ListContainers hands the codec the response's cached encoding.
func (s runtimeServer) ListContainers(ctx context.Context, req *runtimeapi.ListContainersRequest) (*runtimeapi.ListContainersResponse, error) {
	return s.Runtime.listContainersRPC(ctx, req, s.wire)
}

// wireCodec is gRPC's proto codec, except that a ListContainersResponse the
// server registered goes out as the concatenation of its containers' cached
// encodings (the same bytes proto would produce, without re-encoding 10,000
// unchanged containers on every call).
type wireCodec struct {
	base    encoding.CodecV2
	pending sync.Map // *runtimeapi.ListContainersResponse -> mem.BufferSlice
}

func (c *wireCodec) Marshal(v any) (mem.BufferSlice, error) {
	if w, ok := c.pending.LoadAndDelete(v); ok {
		return w.(mem.BufferSlice), nil
	}
	return c.base.Marshal(v)
}

func (c *wireCodec) Unmarshal(data mem.BufferSlice, v any) error { return c.base.Unmarshal(data, v) }
func (c *wireCodec) Name() string                                { return c.base.Name() }

type imageServer struct {
	*Runtime
	unimplImage
}

var (
	_ runtimeapi.RuntimeServiceServer = runtimeServer{}
	_ runtimeapi.ImageServiceServer   = imageServer{}
)

// RegisterGRPC registers r as both the RuntimeService and the ImageService
// on s. (NewGRPCServer also installs a codec that sends large
// ListContainers answers from cached encodings.)
func RegisterGRPC(s *grpc.Server, r *Runtime) {
	runtimeapi.RegisterRuntimeServiceServer(s, runtimeServer{Runtime: r})
	runtimeapi.RegisterImageServiceServer(s, imageServer{Runtime: r})
}

const protoCodecName = proto.Name

// MaxMessageSize is the largest message the server sends or takes (16 MiB,
// as the kubelet's CRI client).
const MaxMessageSize = 16 << 20

// NewGRPCServer returns a gRPC server serving r.
func NewGRPCServer(r *Runtime, opts ...grpc.ServerOption) *grpc.Server {
	wc := &wireCodec{base: encoding.GetCodecV2(protoCodecName)}
	opts = append([]grpc.ServerOption{
		grpc.MaxRecvMsgSize(MaxMessageSize),
		grpc.MaxSendMsgSize(MaxMessageSize),
		grpc.ForceServerCodecV2(wc),
	}, opts...)
	s := grpc.NewServer(opts...)
	runtimeapi.RegisterRuntimeServiceServer(s, runtimeServer{Runtime: r, wire: wc})
	runtimeapi.RegisterImageServiceServer(s, imageServer{Runtime: r})
	return s
}

// Listen opens an endpoint given as unix:///path/to.sock (a stale socket
// file is replaced), a plain absolute path, tcp://host:port or host:port.
func Listen(endpoint string) (net.Listener, error) {
	network, addr, err := ParseEndpoint(endpoint)
	if err != nil {
		return nil, err
	}
	if network == "unix" {
		if err := os.MkdirAll(filepath.Dir(addr), 0o755); err != nil {
			return nil, err
		}
		if err := os.Remove(addr); err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("remove stale socket %s: %w", addr, err)
		}
	}
	return net.Listen(network, addr)
}

// ParseEndpoint splits an endpoint into a network and an address.
func ParseEndpoint(endpoint string) (network, addr string, err error) {
	switch {
	case strings.HasPrefix(endpoint, "unix://"):
		addr = strings.TrimPrefix(endpoint, "unix://")
		if addr == "" {
			return "", "", fmt.Errorf("endpoint %q has no socket path", endpoint)
		}
		return "unix", addr, nil
	case strings.HasPrefix(endpoint, "tcp://"):
		return "tcp", strings.TrimPrefix(endpoint, "tcp://"), nil
	case strings.HasPrefix(endpoint, "/"):
		return "unix", endpoint, nil
	case strings.Contains(endpoint, "://"):
		return "", "", fmt.Errorf("endpoint %q: only unix:// and tcp:// are supported", endpoint)
	case endpoint == "":
		return "", "", errors.New("empty endpoint")
	default:
		return "tcp", endpoint, nil
	}
}
