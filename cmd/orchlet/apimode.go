package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	goruntime "runtime"
	"strings"

	"github.com/benbjohnson/clock"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/klog/v2"

	"orch.io/orch/components/orchlet/agent"
	"orch.io/orch/components/orchlet/apiclient"
	"orch.io/orch/components/orchlet/apipods"
	"orch.io/orch/components/orchlet/eviction"
	"orch.io/orch/components/orchlet/host"
	"orch.io/orch/components/orchlet/nodestatus"
	"orch.io/orch/components/orchlet/options"
	"orch.io/orch/components/orchlet/pods"
)

// apiMode is what API-server mode adds to the agent: its clients, its Node and Lease, and the
// API server as a pod source.
type apiMode struct {
	clients *apiclient.Clients
	node    *nodestatus.Controller
	pods    *apipods.Syncer
}

// newAPIMode assembles the node controller and pod syncer of the agent a.
func newAPIMode(o *options.Options, h host.Host, clk clock.Clock, clients *apiclient.Clients, a *agent.Agent, node string) (*apiMode, error) {
	c := o.Config
	addrs, err := nodeAddresses(o.Flags.NodeIP, node)
	if err != nil {
		return nil, err
	}
	memory, err := h.Memory()
	if err != nil {
		return nil, fmt.Errorf("reading the node's memory: %w", err)
	}
	capacity, allocatable, err := capacityAndAllocatable(o, goruntime.NumCPU(), memory)
	if err != nil {
		return nil, err
	}
	m := &apiMode{clients: clients}
	m.node = nodestatus.New(nodestatus.Options{
		Clock: clk, Core: clients.Core, Heartbeat: clients.Heartbeat, Leases: clients.Leases, Node: node, Register: c.RegisterNode,
		Labels: nodeLabels(node, o.Flags.NodeLabels), Taints: c.RegisterWithTaints, ProviderID: o.Flags.ProviderID,
		ControllerAttachDetach: c.EnableControllerAttach,
		Addresses:              addrs, Capacity: capacity, Allocatable: allocatable, Port: c.Port,
		StatusFrequency: c.NodeStatusUpdateFrequency.Duration, MaxImages: c.NodeStatusMaxImages,
		Runtime: a.Runtime(), Images: a.Images(), Version: o.Version.GitVersion, System: h.SystemInfo(), Logger: klog.Background(),
		Pressure: a.Pressure,
	})
	a.Pods.SetObjects(apiclient.Objects{Client: clients.Core})
	a.Pods.SetTokens(apiclient.Objects{Client: clients.Core})
	m.pods = apipods.New(apipods.Options{
		Clock: clk, Core: clients.Core, Node: node, NodeUID: nodeUID(m.node), Workers: a.Pods, Logger: klog.Background(),
	})
	return m, nil
}

// Run runs the node controller and the pod syncer until ctx ends.
func (m *apiMode) Run(ctx context.Context) error {
	errc := make(chan error, 2)
	go func() { errc <- m.node.Run(ctx) }()
	go func() { errc <- m.pods.Run(ctx) }()
	err := <-errc
	if ctx.Err() == nil {
		return err
	}
	return nil
}

// nodeLabels are the labels the agent registers its Node with: Kubernetes' well-known three,
// renamed, then --node-labels (checked against the allowed orch.io keys at start).
func nodeLabels(node string, extra map[string]string) map[string]string {
	labels := map[string]string{
		"orch.io/hostname": node,
		"orch.io/os":       goruntime.GOOS,
		"orch.io/arch":     goruntime.GOARCH,
	}
	for k, v := range extra {
		labels[k] = v
	}
	return labels
}

// nodeAddresses are --node-ip's addresses, or the host's default one (IPv4 when it has one, else
// IPv6), then the hostname.
func nodeAddresses(nodeIP, hostname string) ([]corev1.NodeAddress, error) {
	var addrs []corev1.NodeAddress
	if nodeIP != "" && nodeIP != "0.0.0.0" && nodeIP != "::" {
		for _, s := range strings.Split(nodeIP, ",") {
			ip := net.ParseIP(strings.TrimSpace(s))
			if ip == nil {
				return nil, fmt.Errorf("--node-ip %s: %q is not an IP address", nodeIP, s)
			}
			addrs = append(addrs, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: ip.String()})
		}
	} else if ip := defaultIP(nodeIP == "::"); ip != "" {
		addrs = append(addrs, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: ip})
	}
	return append(addrs, corev1.NodeAddress{Type: corev1.NodeHostName, Address: hostname}), nil
}

// defaultIP is the first global unicast address of the host, of the preferred family first.
func defaultIP(preferIPv6 bool) string {
	ifaces, err := net.InterfaceAddrs()
	if err != nil {
		return ""
	}
	var v4, v6 string
	for _, a := range ifaces {
		ipnet, ok := a.(*net.IPNet)
		if !ok || !ipnet.IP.IsGlobalUnicast() {
			continue
		}
		if ipnet.IP.To4() != nil && v4 == "" {
			v4 = ipnet.IP.String()
		} else if ipnet.IP.To4() == nil && v6 == "" {
			v6 = ipnet.IP.String()
		}
	}
	if preferIPv6 && v6 != "" || v4 == "" {
		return v6
	}
	return v4
}

// capacityAndAllocatable are the node's resources and what pods may use of them: capacity less
// --kube-reserved and --system-reserved (cpu and memory; the rest is refused at start), and less
// the hard eviction threshold on memory.available unless --experimental-allocatable-ignore-eviction.
func capacityAndAllocatable(o *options.Options, cores int, memory int64) (corev1.ResourceList, corev1.ResourceList, error) {
	c := o.Config
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:    *resource.NewQuantity(int64(cores), resource.DecimalSI),
		corev1.ResourceMemory: *resource.NewQuantity(memory, resource.BinarySI),
		corev1.ResourcePods:   *resource.NewQuantity(int64(pods.Capacity(c.MaxPods, c.PodsPerCore, cores)), resource.DecimalSI),
	}
	allocatable := capacity.DeepCopy()
	reserve := func(name corev1.ResourceName, q resource.Quantity) {
		left := allocatable[name]
		left.Sub(q)
		if left.Sign() < 0 {
			left = *resource.NewQuantity(0, left.Format)
		}
		allocatable[name] = left
	}
	for _, reserved := range []map[string]string{c.KubeReserved, c.SystemReserved} {
		for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			if v, ok := reserved[string(name)]; ok {
				q, err := resource.ParseQuantity(v)
				if err != nil {
					return nil, nil, fmt.Errorf("reserved %s=%s: %w", name, v, err)
				}
				reserve(name, q)
			}
		}
	}
	if !o.Flags.ExperimentalAllocatableIgnoreEviction {
		// The hard memory.available threshold as the eviction manager reads it, defaults included.
		v, err := eviction.HardMemoryThreshold(c, memory)
		if err != nil {
			return nil, nil, err
		}
		reserve(corev1.ResourceMemory, *resource.NewQuantity(v, resource.BinarySI))
	}
	return capacity, allocatable, nil
}

// nodeUID reads the registered Node's uid for owner references; empty until registered.
func nodeUID(m *nodestatus.Controller) func() types.UID {
	return func() types.UID { return types.UID(m.NodeUID()) }
}

// reviewClient is how the agent's HTTPS server reaches the API server's TokenReview and
// SubjectAccessReview APIs for --authentication-token-webhook and --authorization-mode=Webhook:
// the server of --orchconfig, with the agent's own credentials from it, its reviews counted
// against --kube-api-qps and --kube-api-burst like every other request but events.
func reviewClient(cfg *rest.Config) (string, *http.Client, error) {
	base, _, err := rest.DefaultServerUrlFor(cfg)
	if err != nil {
		return "", nil, fmt.Errorf("--orchconfig: %w", err)
	}
	transport, err := rest.TransportFor(cfg)
	if err != nil {
		return "", nil, fmt.Errorf("--orchconfig: %w", err)
	}
	if cfg.RateLimiter != nil {
		transport = throttled{next: transport, limiter: cfg.RateLimiter}
	}
	return base.String(), &http.Client{Transport: transport, Timeout: cfg.Timeout}, nil
}

// throttled waits for limiter before each request.
type throttled struct {
	next    http.RoundTripper
	limiter flowcontrol.RateLimiter
}

func (t throttled) RoundTrip(r *http.Request) (*http.Response, error) {
	if err := t.limiter.Wait(r.Context()); err != nil {
		if r.Body != nil {
			_ = r.Body.Close() // a RoundTripper closes the body, even when it fails
		}
		return nil, err
	}
	return t.next.RoundTrip(r)
}
