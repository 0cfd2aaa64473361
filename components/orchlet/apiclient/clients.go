package apiclient

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	eventsv1 "orch.io/orch/components/apis/events/v1"
)

// Defaults of --kube-api-qps and --kube-api-burst when they are 0, as the kubelet's.
const (
	DefaultQPS   = 50
	DefaultBurst = 100
)

// ProtobufMediaType is Kubernetes' protobuf encoding under orch's name.
const (
	ProtobufMediaType    = "application/vnd.orch.protobuf"
	k8sProtobufMediaType = "application/vnd.kubernetes.protobuf"
)

// protobufWire puts orch's protobuf media type on the wire in place of Kubernetes', and the user
// agent on a request without one, as client-go's user agent wrapper would: one copy of the request
// for both (a RoundTripper may not change its caller's), where the two wrappers made two, and none
// for a request already in its wire form (the heartbeats', see wireAgent).
type protobufWire struct {
	next      http.RoundTripper
	userAgent string
}

func (w protobufWire) RoundTrip(req *http.Request) (*http.Response, error) {
	if !w.onTheWire(req.Header) {
		req = w.wireCopy(req)
	}
	resp, err := w.next.RoundTrip(req)
	if err == nil {
		if v := resp.Header.Get("Content-Type"); strings.HasPrefix(v, ProtobufMediaType) {
			resp.Header.Set("Content-Type", toKubernetes(v))
		}
	}
	return resp, err
}

// onTheWire tells whether h is what wireCopy would send: no Kubernetes protobuf type in the first
// value of Accept or Content-Type, and a user agent if the wrapper has one to set.
func (w protobufWire) onTheWire(h http.Header) bool {
	if h == nil {
		return false
	}
	for _, k := range []string{"Accept", "Content-Type"} {
		if v := h[k]; len(v) > 0 && strings.Contains(v[0], k8sProtobufMediaType) {
			return false
		}
	}
	return w.userAgent == "" || h.Get("User-Agent") != ""
}

// wireCopy is req with orch's media type and the user agent.
func (w protobufWire) wireCopy(req *http.Request) *http.Request {
	out := *req // a shallow copy, as client-go's CloneRequest: only the header changes
	out.Header = req.Header.Clone()
	if out.Header == nil {
		out.Header = http.Header{}
	}
	for _, h := range []string{"Accept", "Content-Type"} {
		// The first value alone, as Set leaves it; in place, since the copy's values are its own.
		if v := out.Header[h]; len(v) > 0 && strings.Contains(v[0], k8sProtobufMediaType) {
			v[0] = toOrch(v[0])
			out.Header[h] = v[:1]
		}
	}
	if out.Header.Get("User-Agent") == "" && w.userAgent != "" {
		out.Header.Set("User-Agent", w.userAgent)
	}
	return &out
}

// The Accept value of New's protobuf clients, in either name.
const (
	k8sProtobufAccept  = k8sProtobufMediaType + ",application/json"
	orchProtobufAccept = ProtobufMediaType + ",application/json"
)

// toOrch renames Kubernetes' protobuf media type in v to orch's; the values New's clients send
// are constants, not made again at every request.
func toOrch(v string) string {
	switch v {
	case k8sProtobufMediaType:
		return ProtobufMediaType
	case k8sProtobufAccept:
		return orchProtobufAccept
	}
	return strings.ReplaceAll(v, k8sProtobufMediaType, ProtobufMediaType)
}

// toKubernetes renames the leading orch protobuf media type of an answer's v to Kubernetes'.
func toKubernetes(v string) string {
	if v == ProtobufMediaType {
		return k8sProtobufMediaType
	}
	return k8sProtobufMediaType + strings.TrimPrefix(v, ProtobufMediaType)
}

// CoordinationGroupVersion is where leases are served.
var CoordinationGroupVersion = schema.GroupVersion{Group: "coordination.orch.io", Version: "v1"}

// Settings are the agent's client options.
type Settings struct {
	QPS         float32
	Burst       int
	ContentType string
	UserAgent   string
}

// Clients are the agent's connections to the API server.
type Clients struct {
	Config *rest.Config
	Core   *CoreV1Client
	// Heartbeat and Leases carry node status and lease renewals; like the kubelet's heartbeat
	// client they are not limited by QPS/Burst, so a busy agent still heartbeats on time.
	Heartbeat *CoreV1Client
	Leases    *LeaseClient
	// Events is unthrottled here: the event recorder applies --event-qps and --event-burst.
	Events *rest.RESTClient
}

// LoadConfig reads the kubeconfig at path (--orchconfig).
func LoadConfig(path string) (*rest.Config, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return nil, fmt.Errorf("--orchconfig %s: %w", path, err)
	}
	return cfg, nil
}

// New builds the clients from a rest.Config (the agent's from --orchconfig, or a test's or the
// simulator's); every request but events' is limited to QPS/Burst (0 meaning DefaultQPS/DefaultBurst).
func New(base *rest.Config, s Settings) (*Clients, error) {
	cfg := rest.CopyConfig(base)
	cfg.QPS, cfg.Burst = s.QPS, s.Burst
	if cfg.QPS == 0 {
		cfg.QPS = DefaultQPS
	}
	if cfg.Burst == 0 {
		cfg.Burst = DefaultBurst
	}
	if s.UserAgent != "" {
		cfg.UserAgent = s.UserAgent
	}
	if cfg.UserAgent == "" {
		cfg.UserAgent = rest.DefaultKubernetesUserAgent() // as client-go's clientset sends
	}
	switch s.ContentType {
	case ProtobufMediaType:
		// client-go knows protobuf by Kubernetes' name: it encodes with that, and the wire
		// carries orch's. The wrapper copies every request for that, so it sets the user agent
		// too (Config keeps it, for the clients others build from it).
		cfg.ContentType = k8sProtobufMediaType
		cfg.AcceptContentTypes = k8sProtobufAccept
		userAgent := cfg.UserAgent
		cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return protobufWire{rt, userAgent} })
	case "":
	default:
		cfg.ContentType = s.ContentType
	}
	exported := cfg
	wireAgent := ""
	if s.ContentType == ProtobufMediaType {
		cfg = rest.CopyConfig(cfg)
		wireAgent, cfg.UserAgent = cfg.UserAgent, ""
	}
	core, err := newCoreV1(cfg)
	if err != nil {
		return nil, err
	}
	// One limiter for every throttled client, as the kubelet's clients share one configuration.
	cfg.RateLimiter = core.RESTClient().GetRateLimiter()
	exported.RateLimiter = cfg.RateLimiter
	heartbeatCfg := rest.CopyConfig(cfg)
	heartbeatCfg.RateLimiter, heartbeatCfg.QPS, heartbeatCfg.Burst = nil, -1, 0
	if wireAgent != "" {
		// The heartbeats' requests are made in their wire form (see wireAgent): Accept as the
		// wrapper would rename it, which it then leaves as it is for every request of these clients.
		heartbeatCfg.AcceptContentTypes = orchProtobufAccept
	}
	heartbeat, err := newCoreV1(heartbeatCfg)
	if err != nil {
		return nil, err
	}
	heartbeat.wireAgent = wireAgent
	leases, err := groupClient(heartbeatCfg, CoordinationGroupVersion, leaseSerializers())
	if err != nil {
		return nil, err
	}
	eventsCfg := rest.CopyConfig(heartbeatCfg)
	eventsCfg.ContentType, eventsCfg.AcceptContentTypes = "application/json", "application/json" // events.orch.io has no protobuf form
	events, err := groupClient(eventsCfg, eventsv1.SchemeGroupVersion, eventSerializers())
	if err != nil {
		return nil, err
	}
	return &Clients{Config: exported, Core: core, Heartbeat: heartbeat, Leases: &LeaseClient{leases, wireAgent}, Events: events}, nil
}

// LeaseClient is New's client of coordination.orch.io leases.
type LeaseClient struct {
	*rest.RESTClient
	// wireAgent is as CoreV1Client's.
	wireAgent string
}

// The leases' and events' serializers, each built once and shared by every client, as coreCodecs.
var (
	leaseSerializers = sync.OnceValue(func() runtime.NegotiatedSerializer {
		return groupSerializers(CoordinationGroupVersion, &coordinationv1.Lease{}, &coordinationv1.LeaseList{})
	})
	eventSerializers = sync.OnceValue(func() runtime.NegotiatedSerializer {
		return groupSerializers(eventsv1.SchemeGroupVersion)
	})
)

func groupSerializers(gv schema.GroupVersion, types ...runtime.Object) runtime.NegotiatedSerializer {
	scheme := runtime.NewScheme()
	scheme.AddKnownTypes(gv, types...)
	metav1.AddToGroupVersion(scheme, gv)
	return serializer.NewCodecFactory(scheme).WithoutConversion()
}

func groupClient(base *rest.Config, gv schema.GroupVersion, serializers runtime.NegotiatedSerializer) (*rest.RESTClient, error) {
	cfg := rest.CopyConfig(base)
	cfg.APIPath = "/apis"
	cfg.GroupVersion = &gv
	cfg.NegotiatedSerializer = serializers
	return rest.RESTClientFor(cfg)
}

// EventSink writes the recorder's events to events.orch.io/v1.
type EventSink struct{ Client *rest.RESTClient }

// Create posts e to its namespace.
func (s EventSink) Create(ctx context.Context, e *eventsv1.Event) (*eventsv1.Event, error) {
	return s.send(ctx, http.MethodPost, e, nil, s.Client.Post().Namespace(e.Namespace).Resource("events"))
}

// Update records the next occurrence of a series as the Kubernetes events recorder does: a merge
// patch of the series alone.
func (s EventSink) Update(ctx context.Context, e *eventsv1.Event) (*eventsv1.Event, error) {
	body, err := json.Marshal(map[string]any{"series": e.Series})
	if err != nil {
		return nil, err
	}
	req := s.Client.Patch(types.MergePatchType).Namespace(e.Namespace).Resource("events").Name(e.Name)
	return s.send(ctx, http.MethodPatch, e, body, req)
}

func (s EventSink) send(ctx context.Context, method string, e *eventsv1.Event, body []byte, req *rest.Request) (*eventsv1.Event, error) {
	if body == nil {
		var err error
		if body, err = json.Marshal(e); err != nil {
			return nil, err
		}
		req = req.SetHeader("Content-Type", "application/json")
	}
	data, err := req.Body(body).Do(ctx).Raw()
	if err != nil {
		return nil, fmt.Errorf("%s event %s/%s: %w", method, e.Namespace, e.Name, err)
	}
	out := &eventsv1.Event{}
	if err := json.Unmarshal(data, out); err != nil {
		return nil, err
	}
	return out, nil
}
