package app

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	goruntime "runtime"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"k8s.io/klog/v2"
	"sigs.k8s.io/yaml"

	"orch.io/orch/components/orchlet/agent"
	"orch.io/orch/components/orchlet/apiclient"
	"orch.io/orch/components/orchlet/cm"
	"orch.io/orch/components/orchlet/cpumanager"
	"orch.io/orch/components/orchlet/events"
	"orch.io/orch/components/orchlet/host"
	"orch.io/orch/components/orchlet/iptables"
	"orch.io/orch/components/orchlet/memorymanager"
	"orch.io/orch/components/orchlet/nodestatus"
	"orch.io/orch/components/orchlet/options"
	"orch.io/orch/components/orchlet/pods"
	"orch.io/orch/components/orchlet/pods/credentialprovider"
	"orch.io/orch/components/orchlet/server"
	"orch.io/orch/components/orchlet/sources"
	"orch.io/orch/components/periodic"
)

// lockRetry is how often a lock file held by another process is tried again.
const lockRetry = time.Second

// podWorkers is how many pods a real node syncs at once. The kubelet runs a goroutine per pod;
// a bound keeps a burst of pods from flooding the runtime with more calls than it runs at once.
const podWorkers = 16

// Run takes the lock file, runs the start-up checks and logs the effective configuration at -v=2.
// With --runonce and no pod source there is nothing to run and it returns; otherwise it takes
// --root-dir (refusing a directory another running agent holds) and runs the agent in standalone
// mode on the CRI runtime, with its servers, until ctx ends, or until another process contends
// for the lock under --exit-on-lock-contention.
func Run(ctx context.Context, o *options.Options, h host.Host, clk clock.Clock) error {
	klog.InfoS("orchlet starting", "version", o.Version.GitVersion)
	lock, err := takeLock(ctx, o, h, clk)
	if err != nil {
		return err
	}
	var contended <-chan struct{}
	if lock != nil {
		defer lock.Release()
		if o.Flags.ExitOnLockContention {
			contended = lock.Contended()
		}
	}
	c := o.Config
	if err := host.Check(h, host.Requirements{
		FailSwapOn:            c.FailSwapOn,
		FailCgroupV1:          o.Flags.FailCgroupV1,
		ProtectKernelDefaults: c.ProtectKernelDefaults,
	}); err != nil {
		return err
	}
	if v := klog.V(2); v.Enabled() {
		cfg, err := yaml.Marshal(c)
		if err != nil {
			return fmt.Errorf("rendering the effective configuration: %w", err)
		}
		v.InfoS("Effective configuration", "config", string(cfg))
		v.InfoS("Command-line-only options", "flags", fmt.Sprintf("%+v", o.Flags))
	}
	// As the kubelet since kubenet is gone: with a CRI runtime the pods' network, hairpin traffic
	// included, is the runtime's network plugin's to set up.
	klog.InfoS("Hairpin traffic is set up by the container runtime's network plugin, not by this agent", "hairpinMode", c.HairpinMode)
	if path := o.Flags.ExperimentalMounterPath; path != "" {
		// The kubelet's mounter runs it only for nfs, glusterfs, ceph and cifs filesystems.
		klog.InfoS("The mounter binary is used for nfs, glusterfs, ceph and cifs mounts, volume types this agent does not run; its mounts use system calls", "experimentalMounterPath", path)
	}
	if c.RunOnce && c.StaticPodPath == "" && c.StaticPodURL == "" && o.Flags.Orchconfig == "" {
		klog.InfoS("orchlet run once: configuration valid, start-up checks passed, no pod source configured")
		return nil
	}
	if err := o.RefuseAPIServerModeSettings(); err != nil {
		return err
	}
	if c.RunOnce && o.Flags.Orchconfig != "" {
		return fmt.Errorf("--runonce with --orchconfig %s: run once runs the static pods only and exits; drop one of them", o.Flags.Orchconfig)
	}
	release, err := lockRootDir(o.Flags.RootDir, o.Flags.LockFile)
	if err != nil {
		return err
	}
	defer release()
	if c.RunOnce {
		return runOnce(ctx, o, h, clk)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	failed, err := runAgent(ctx, o, h, clk)
	if err != nil {
		if ctx.Err() != nil {
			// Asked to stop while starting (SIGTERM): a stop, not a failure to start.
			klog.InfoS("orchlet stopping during start-up", "reason", context.Cause(ctx))
			return nil
		}
		return err
	}
	klog.InfoS("orchlet started: configuration valid, start-up checks passed")
	select {
	case <-ctx.Done():
		klog.InfoS("orchlet stopping", "reason", context.Cause(ctx))
	case <-contended:
		klog.InfoS("orchlet exiting: another process contends for the lock file", "path", o.Flags.LockFile)
	case err := <-failed:
		return err
	}
	return nil
}

// The kubelet's --runonce checks each pod up to 10 times, 1s apart at first and doubling.
const (
	runOnceTries = 10
	runOnceDelay = time.Second
)

// runOnce starts the static pods of the sources, reports whether each ran, and fails when one did not.
func runOnce(ctx context.Context, o *options.Options, h host.Host, clk clock.Clock) error {
	res, err := resourcesOf(o, h)
	if err != nil {
		return err
	}
	a, node, err := newAgent(ctx, o, h, clk, events.NewLogSink(os.Stderr), nil, res)
	if err != nil {
		return err
	}
	if _, err := startContainerManager(o, h, clk, node, a, res); err != nil {
		return err
	}
	results, err := a.RunOnce(ctx, runOnceTries, runOnceDelay)
	if err != nil {
		return err
	}
	failed := 0
	for _, r := range results {
		if r.Err != nil {
			failed++
			klog.ErrorS(r.Err, "Pod did not run", "pod", r.Namespace+"/"+r.Name)
			continue
		}
		klog.InfoS("Pod ran", "pod", r.Namespace+"/"+r.Name)
	}
	if failed > 0 {
		return fmt.Errorf("--runonce: %d of %d pods did not run", failed, len(results))
	}
	klog.InfoS("orchlet run once: every pod ran", "pods", len(results))
	return nil
}

// newAgent connects to the runtime and assembles the agent for this node, recording events to sink;
// res are the node's resources (resourcesOf), whose allocatable admission fits pods into.
func newAgent(ctx context.Context, o *options.Options, h host.Host, clk clock.Clock, sink events.Sink, sourcesReady func() bool, res cm.Resources) (*agent.Agent, string, error) {
	c := o.Config
	nodeName, err := sources.NodeName(o.Flags.HostnameOverride, h)
	if err != nil {
		return nil, "", fmt.Errorf("--hostname-override: %w", err)
	}
	rs, is, err := pods.Connect(ctx, c.ContainerRuntimeEndpoint, c.ImageServiceEndpoint, c.RuntimeRequestTimeout.Duration)
	if err != nil {
		return nil, "", fmt.Errorf("--container-runtime-endpoint %s: %w", c.ContainerRuntimeEndpoint, err)
	}
	podNode, err := podNodeOf(o, h, nodeName)
	if err != nil {
		return nil, "", err
	}
	podNode.Allocatable = res.Allocatable
	if path := o.Flags.ImageCredentialProviderConfig; path != "" {
		cfg, err := credentialprovider.LoadConfig(path)
		if err != nil {
			return nil, "", fmt.Errorf("--image-credential-provider-config: %w", err)
		}
		plugins, err := credentialprovider.New(cfg, o.Flags.ImageCredentialProviderBinDir, clk, klog.Background())
		if err != nil {
			return nil, "", fmt.Errorf("--image-credential-provider-bin-dir: %w", err)
		}
		podNode.Credentials = plugins
	}
	observer := newObserver(o, h, res, rs, is)
	memcg, noMemcg := hostMemcg(o, h)
	var topology func() (*cpumanager.Topology, error)
	var numa func() ([]memorymanager.Node, error)
	if sys := h.Sysfs(); sys != "" {
		numa = func() ([]memorymanager.Node, error) {
			return memorymanager.Discover(os.DirFS(filepath.Join(sys, "devices", "system", "node")))
		}
		topology = func() (*cpumanager.Topology, error) {
			t, err := cpumanager.Discover(os.DirFS(filepath.Join(sys, "devices", "system", "cpu")))
			if err != nil {
				return nil, err
			}
			t.Distances, err = cpumanager.ReadDistances(os.DirFS(filepath.Join(sys, "devices", "system", "node")))
			return t, err
		}
	}
	a, err := agent.New(c, agent.Deps{
		Clock: clk, NodeName: nodeName, Runtime: rs, Images: is, Observer: observer, Memcg: memcg, MemcgUnavailable: noMemcg,
		Sink: sink, Gates: o.Gates, Cores: goruntime.NumCPU(), Logger: klog.Background(), SourcesReady: sourcesReady, PodNode: podNode,
		RootDir: o.Flags.RootDir, CPUTopology: topology, NUMANodes: numa, Reservation: res.Reservation, PodWorkers: podWorkers,
		Version: o.Version.Major + "." + o.Version.Minor,
	})
	return a, nodeName, err
}

// runAgent connects to the runtime and starts the agent and its servers, and with --orchconfig
// what API-server mode adds; the channel reports a component that stops before ctx ends.
func runAgent(ctx context.Context, o *options.Options, h host.Host, clk clock.Clock) (<-chan error, error) {
	c := o.Config
	var clients *apiclient.Clients
	var certs certManagers
	var sink events.Sink = events.NewLogSink(os.Stderr)
	if o.Flags.Orchconfig != "" {
		node, err := sources.NodeName(o.Flags.HostnameOverride, h)
		if err != nil {
			return nil, fmt.Errorf("--hostname-override: %w", err)
		}
		if clients, certs.client, err = loadClients(ctx, o, clk, node); err != nil {
			return nil, err
		}
		sink = apiclient.EventSink{Client: clients.Events}
	}
	// In API-server mode the runtime's pods wait for the API's list before any is an orphan.
	var api *apiMode
	var sourcesReady func() bool
	if clients != nil {
		sourcesReady = func() bool { return api != nil && api.pods.HasSynced() }
	}
	res, err := resourcesOf(o, h)
	if err != nil {
		return nil, err
	}
	a, nodeName, err := newAgent(ctx, o, h, clk, sink, sourcesReady, res)
	if err != nil {
		return nil, err
	}
	cmgr, err := startContainerManager(o, h, clk, nodeName, a, res)
	if err != nil {
		return nil, err
	}
	if clients != nil {
		if api, err = newAPIMode(o, h, clk, clients, a, nodeName, res); err != nil {
			return nil, err
		}
	}
	metrics := prometheus.NewRegistry()
	metrics.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if err := enableGC(a, o, sourcesReady, metrics); err != nil {
		return nil, err
	}
	if a.Eviction != nil {
		metrics.MustRegister(a.Eviction)
	}
	metrics.MustRegister(a.Memory)
	deps := server.Deps{
		Clock: clk, NodeName: nodeName, Pods: a.Pods, Stats: summaryStats{a, cmgr}, Logs: a, Streams: a,
		Configz: func() any { return c }, Gates: o.Gates, Metrics: metrics, CertDir: o.Flags.CertDir,
	}
	if clients != nil {
		if deps.APIServer, deps.APIClient, err = apiclient.ReviewClient(clients.Config); err != nil {
			return nil, err
		}
		if c.ServerTLSBootstrap {
			addrs, err := nodestatus.Addresses(o.Flags.NodeIP, nodeName)
			if err != nil {
				return nil, err
			}
			if certs.serving, err = certBootstrap(o, clk, nodeName).ServingManager(clients.Config, addrs); err != nil {
				return nil, err
			}
			deps.ServingCertificate = certs.serving.Current
		}
	}
	srv, err := server.New(c, deps)
	if err != nil {
		return nil, err
	}
	if err := srv.Start(); err != nil {
		return nil, err
	}
	addrs := srv.Addrs()
	klog.InfoS("Serving", "https", addrs.HTTPS, "readOnly", addrs.ReadOnly, "healthz", addrs.Healthz)
	certs.run(ctx)
	failed := make(chan error, 4)
	go func() {
		if err := cmgr.Run(ctx); err != nil && ctx.Err() == nil {
			failed <- fmt.Errorf("container manager stopped: %w", err)
		}
	}()
	if c.MakeIPTablesUtilChains && h.Sysfs() != "" {
		// A simulated machine has no network to keep chains in.
		chains := iptables.New(clk, klog.Background(), iptables.HostFamilies(ctx))
		chains.Start(ctx)
		go func() {
			if err := chains.Run(ctx); err != nil && ctx.Err() == nil {
				failed <- fmt.Errorf("iptables chains stopped: %w", err)
			}
		}()
	}
	go func() {
		err := a.Run(ctx)
		_ = srv.Close()
		if ctx.Err() == nil {
			failed <- fmt.Errorf("pod workers stopped: %w", err)
		}
	}()
	if api != nil {
		go func() {
			if err := api.Run(ctx); err != nil && ctx.Err() == nil {
				failed <- fmt.Errorf("API-server mode stopped: %w", err)
			}
		}()
	}
	return failed, nil
}

// takeLock takes --lock-file if set, waiting while another process holds it, as the kubelet does
// with or without --exit-on-lock-contention: the holder gives way when it runs with that flag.
func takeLock(ctx context.Context, o *options.Options, h host.Host, clk clock.Clock) (host.Lock, error) {
	path := o.Flags.LockFile
	if path == "" {
		return nil, nil
	}
	var lock host.Lock
	var lockErr error
	waiting := false
	err := periodic.Every(ctx, clk, lockRetry, true, func(context.Context) bool {
		if lock, lockErr = h.Lock(path); !errors.Is(lockErr, host.ErrLocked) {
			return true
		}
		if !waiting {
			klog.InfoS("Waiting for the lock file held by another process", "path", path)
			waiting = true
		}
		return false
	})
	switch {
	case err != nil:
		return nil, fmt.Errorf("--lock-file: %s: gave up waiting: %w", path, context.Cause(ctx))
	case lockErr != nil:
		return nil, fmt.Errorf("--lock-file: %s: %w", path, lockErr)
	}
	return lock, nil
}
