package app

import (
	"context"
	goruntime "runtime"

	"github.com/benbjohnson/clock"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"orch.io/orch/components/orchlet/agent"
	"orch.io/orch/components/orchlet/apiclient"
	"orch.io/orch/components/orchlet/apipods"
	"orch.io/orch/components/orchlet/cm"
	"orch.io/orch/components/orchlet/host"
	"orch.io/orch/components/orchlet/nodestatus"
	"orch.io/orch/components/orchlet/options"
)

// apiMode is what API-server mode adds to the agent: its clients, its Node and Lease, and the
// API server as a pod source.
type apiMode struct {
	clients *apiclient.Clients
	node    *nodestatus.Controller
	pods    *apipods.Syncer
}

// newAPIMode assembles the node controller and pod syncer of the agent a.
// res are the node's capacity and allocatable (resourcesOf).
func newAPIMode(o *options.Options, h host.Host, clk clock.Clock, clients *apiclient.Clients, a *agent.Agent, node string, res cm.Resources) (*apiMode, error) {
	c := o.Config
	external := o.Flags.CloudProvider == options.ExternalCloudProvider
	addrs, err := nodestatus.Addresses(o.Flags.NodeIP, node)
	var provided string
	if external {
		addrs, provided, err = nodestatus.CloudAddresses(o.Flags.NodeIP, node)
	}
	if err != nil {
		return nil, err
	}
	capacity, allocatable := nodestatus.CapacityAndAllocatable(c, goruntime.NumCPU(), res)
	m := &apiMode{clients: clients}
	m.node = nodestatus.New(nodestatus.Options{
		Clock: clk, Core: clients.Core, Heartbeat: clients.Heartbeat, Leases: clients.Leases, Node: node, Register: c.RegisterNode,
		Labels: nodestatus.Labels(node, o.Flags.NodeLabels), Taints: c.RegisterWithTaints, ProviderID: o.Flags.ProviderID,
		ControllerAttachDetach: c.EnableControllerAttach, ExternalCloudProvider: external, ProvidedNodeIP: provided,
		Addresses: addrs, Capacity: capacity, Allocatable: allocatable, Port: c.Port,
		StatusFrequency: c.NodeStatusUpdateFrequency.Duration, MaxImages: c.NodeStatusMaxImages,
		Runtime: a.Runtime(), Images: a.Images(), Version: o.Version.GitVersion, System: h.SystemInfo(), Logger: klog.Background(),
		Pressure: a.Pressure,
	})
	a.Pods.SetObjects(apiclient.Objects{Client: clients.Core})
	a.Pods.SetTokens(apiclient.Objects{Client: clients.Core})
	a.Pods.SetServiceAccounts(apiclient.Objects{Client: clients.Core})
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

// nodeUID reads the registered Node's uid for owner references; empty until registered.
func nodeUID(m *nodestatus.Controller) func() types.UID {
	return func() types.UID { return types.UID(m.NodeUID()) }
}
