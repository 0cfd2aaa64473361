package apiclient

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	eventsv1 "orch.io/orch/components/apis/events/v1"
)

// Defaults of --kube-api-qps and --kube-api-burst when they are 0, as the kubelet's.
const (
	DefaultQPS   = 50
	DefaultBurst = 100
)

// CoordinationGroupVersion is where leases are served.
var CoordinationGroupVersion = schema.GroupVersion{Group: "coordination.orch.io", Version: "v1"}

// Settings are the agent's client options.
type Settings struct {
	// Orchconfig is the kubeconfig file: server, CA, client certificate and key or token.
	Orchconfig  string
	QPS         float32
	Burst       int
	ContentType string
	UserAgent   string
}

// Clients are the agent's connections to the API server.
type Clients struct {
	Config *rest.Config
	Core   kubernetes.Interface
	Leases *rest.RESTClient
	// Events is unthrottled here: the event recorder applies --event-qps and --event-burst.
	Events *rest.RESTClient
}

// Load reads the kubeconfig and builds the clients; every request but events' is limited to
// QPS/Burst (0 meaning DefaultQPS/DefaultBurst).
func Load(s Settings) (*Clients, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", s.Orchconfig)
	if err != nil {
		return nil, fmt.Errorf("--orchconfig %s: %w", s.Orchconfig, err)
	}
	return New(cfg, s)
}

// New builds the clients from a rest.Config (tests and the simulator pass theirs).
func New(base *rest.Config, s Settings) (*Clients, error) {
	cfg := rest.CopyConfig(base)
	cfg.QPS, cfg.Burst = s.QPS, s.Burst
	if cfg.QPS == 0 {
		cfg.QPS = DefaultQPS
	}
	if cfg.Burst == 0 {
		cfg.Burst = DefaultBurst
	}
	if s.ContentType != "" {
		cfg.ContentType = s.ContentType
	}
	if s.UserAgent != "" {
		cfg.UserAgent = s.UserAgent
	}
	core, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	// One limiter for every throttled client, as the kubelet's clients share one configuration.
	cfg.RateLimiter = core.CoreV1().RESTClient().GetRateLimiter()
	leases, err := groupClient(cfg, CoordinationGroupVersion, &coordinationv1.Lease{}, &coordinationv1.LeaseList{})
	if err != nil {
		return nil, err
	}
	eventsCfg := rest.CopyConfig(cfg)
	eventsCfg.RateLimiter, eventsCfg.QPS, eventsCfg.Burst = nil, -1, 0
	eventsCfg.ContentType = "application/json" // events.orch.io has no protobuf form
	events, err := groupClient(eventsCfg, eventsv1.SchemeGroupVersion)
	if err != nil {
		return nil, err
	}
	return &Clients{Config: cfg, Core: core, Leases: leases, Events: events}, nil
}

func groupClient(base *rest.Config, gv schema.GroupVersion, types ...runtime.Object) (*rest.RESTClient, error) {
	scheme := runtime.NewScheme()
	scheme.AddKnownTypes(gv, types...)
	metav1.AddToGroupVersion(scheme, gv)
	cfg := rest.CopyConfig(base)
	cfg.APIPath = "/apis"
	cfg.GroupVersion = &gv
	cfg.NegotiatedSerializer = serializer.NewCodecFactory(scheme).WithoutConversion()
	return rest.RESTClientFor(cfg)
}

// EventSink writes the recorder's events to events.orch.io/v1.
type EventSink struct{ Client *rest.RESTClient }

// Create posts e to its namespace.
func (s EventSink) Create(ctx context.Context, e *eventsv1.Event) (*eventsv1.Event, error) {
	return s.send(ctx, http.MethodPost, e, s.Client.Post().Namespace(e.Namespace).Resource("events"))
}

// Update replaces e, the next occurrence of a series.
func (s EventSink) Update(ctx context.Context, e *eventsv1.Event) (*eventsv1.Event, error) {
	return s.send(ctx, http.MethodPut, e, s.Client.Put().Namespace(e.Namespace).Resource("events").Name(e.Name))
}

func (s EventSink) send(ctx context.Context, method string, e *eventsv1.Event, req *rest.Request) (*eventsv1.Event, error) {
	body, err := json.Marshal(e)
	if err != nil {
		return nil, err
	}
	data, err := req.SetHeader("Content-Type", "application/json").Body(body).Do(ctx).Raw()
	if err != nil {
		return nil, fmt.Errorf("%s event %s/%s: %w", method, e.Namespace, e.Name, err)
	}
	out := &eventsv1.Event{}
	if err := json.Unmarshal(data, out); err != nil {
		return nil, err
	}
	return out, nil
}
