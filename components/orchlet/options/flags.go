package options

import (
	"strings"

	"github.com/spf13/pflag"
	cliflag "k8s.io/component-base/cli/flag"
	logsapi "k8s.io/component-base/logs/api/v1"

	"orch.io/orch/components/apis/orchlet/v1beta1"
	"orch.io/orch/components/featuregates"
)

// Help groups, in the order help prints them.
const (
	groupGeneric   = "generic"
	groupNode      = "node"
	groupSources   = "pod source"
	groupServer    = "server and authentication"
	groupRuntime   = "container runtime and images"
	groupNetwork   = "networking"
	groupResources = "resources and cgroups"
	groupEviction  = "eviction and garbage collection"
	groupClient    = "API client"
	groupLogging   = "logging"
)

// Deprecation notes SPEC.md gives.
const (
	deprecatedForConfig = "This parameter should be set via the config file specified by the orchlet's --config flag."
	deprecatedRemoval   = "This flag will be removed in 1.25 or later."
	deprecatedPodInfra  = "Will be removed in 1.35. The image garbage collector gets the sandbox image from the container runtime."
	deprecatedDeadGC    = "Use --eviction-hard or --eviction-soft instead. Will be removed in a future version."
)

// flagSets holds every option bound to its target, grouped for help, and each deprecated option's note.
type flagSets struct {
	named      cliflag.NamedFlagSets
	deprecated map[string]string
	help       bool
	version    *versionValue
}

// all returns one flag set holding every option, for parsing.
func (s *flagSets) all() *pflag.FlagSet {
	fs := pflag.NewFlagSet("orchlet", pflag.ContinueOnError)
	fs.SetNormalizeFunc(cliflag.WordSepNormalizeFunc)
	for _, name := range s.named.Order {
		fs.AddFlagSet(s.named.FlagSets[name])
	}
	return fs
}

// newFlagSets binds every option to f and c. Options SPEC.md marks C are bound first and all get the
// --config deprecation note; the others carry their own notes.
func newFlagSets(f *Flags, c *v1beta1.OrchletConfiguration, version *versionValue) *flagSets {
	s := &flagSets{deprecated: map[string]string{}, version: version}
	s.named.NormalizeNameFunc = cliflag.WordSepNormalizeFunc
	bindConfig(&s.named, c)
	for _, name := range s.named.Order {
		s.named.FlagSets[name].VisitAll(func(fl *pflag.Flag) { s.deprecate(fl, deprecatedForConfig) })
	}
	bindLogging(&s.named, &c.Logging)
	s.bindFlags(f)
	return s
}

func (s *flagSets) deprecate(fl *pflag.Flag, note string) {
	s.deprecated[fl.Name] = note
	fl.Usage += " (DEPRECATED: " + note + ")"
}

func (s *flagSets) bindFlags(f *Flags) {
	n := &s.named
	fs := n.FlagSet(groupGeneric)
	fs.StringVar(&f.ConfigFile, "config", f.ConfigFile, "The orchlet reads its initial configuration from this file (absolute, or relative to the working directory). Omit to use the built-in defaults. Command-line options override the file.")
	fs.StringVar(&f.ConfigDir, "config-dir", f.ConfigDir, "Directory of drop-in configuration files ending in .conf, applied in lexical order; they override the built-in defaults and the --config file.")
	fs.BoolVarP(&s.help, "help", "h", false, "Prints help.")
	fs.Var(s.version, "version", "--version, --version=raw prints version information and quits; --version=vX.Y.Z... sets the reported version")
	fs.Lookup("version").NoOptDefVal = "true"

	fs = n.FlagSet(groupNode)
	fs.StringVar(&f.Orchconfig, "orchconfig", f.Orchconfig, "Path to a connection-settings file for the API server. Given: API-server mode; omitted: standalone mode.")
	fs.StringVar(&f.BootstrapKubeconfig, "bootstrap-kubeconfig", f.BootstrapKubeconfig, "Path to a connection-settings file used to obtain a client certificate when the --orchconfig file does not exist. On success a file referencing the new certificate and key is written to the --orchconfig path; the certificate and key are stored under --cert-dir.")
	fs.StringVar(&f.HostnameOverride, "hostname-override", f.HostnameOverride, "If non-empty, this string is used as identification instead of the actual hostname.")
	fs.StringVar(&f.NodeIP, "node-ip", f.NodeIP, "IP address (or comma-separated dual-stack IP addresses) of the node. If unset, the default IPv4 address is used, else the default IPv6 address; '::' prefers IPv6.")
	fs.Var(cliflag.NewMapStringString(&f.NodeLabels), "node-labels", "Labels added when registering the node, as <key>=<value> pairs. Keys in the orch.io namespace must begin with orchlet.orch.io or node.orch.io, or be one of "+strings.Join(allowedNodeLabels(), ", ")+".")
	fs.StringVar(&f.ProviderID, "provider-id", f.ProviderID, "Unique identifier of the node in the machine database, for example a cloud provider's.")
	fs.StringVar(&f.CloudProvider, "cloud-provider", f.CloudProvider, "The cloud provider. Empty for none; 'external' for an external provider.")
	fs.StringVar(&f.RootDir, "root-dir", f.RootDir, "Directory for orchlet files (volume mounts etc.).")

	fs = n.FlagSet(groupServer)
	fs.StringVar(&f.CertDir, "cert-dir", f.CertDir, "Directory of the TLS certificates. Ignored when --tls-cert-file and --tls-private-key-file are both given.")

	fs = n.FlagSet(groupRuntime)
	fs.StringVar(&f.ImageCredentialProviderBinDir, "image-credential-provider-bin-dir", f.ImageCredentialProviderBinDir, "Directory of the credential provider plugin binaries.")
	fs.StringVar(&f.ImageCredentialProviderConfig, "image-credential-provider-config", f.ImageCredentialProviderConfig, "Credential provider plugin config file (JSON/YAML/YML), or a directory of such files merged in lexicographic order (not recursive).")
	fs.StringVar(&f.PodInfraContainerImage, "pod-infra-container-image", f.PodInfraContainerImage, "The image exempt from image garbage collection.")
	s.deprecate(fs.Lookup("pod-infra-container-image"), deprecatedPodInfra)
	fs.StringVar(&f.ExperimentalMounterPath, "experimental-mounter-path", f.ExperimentalMounterPath, "Experimental path of the mounter binary. Empty for the default mount.")
	s.deprecate(fs.Lookup("experimental-mounter-path"), deprecatedRemoval)
	fs.BoolVar(&f.SeccompDefault, "seccomp-default", f.SeccompDefault, "Enable the use of `RuntimeDefault` as the default seccomp profile for all workloads.")

	fs = n.FlagSet(groupResources)
	fs.BoolVar(&f.FailCgroupV1, "fail-cgroupv1", f.FailCgroupV1, "Refuse to start on a cgroup v1 host.")
	fs.StringVar(&f.LockFile, "lock-file", f.LockFile, "Alpha. The path of the orchlet's lock file.")
	fs.BoolVar(&f.ExitOnLockContention, "exit-on-lock-contention", f.ExitOnLockContention, "Exit on lock-file contention: refuse to start while another process holds --lock-file, and exit when another process opens it.")
	fs.StringVar(&f.RuntimeCgroups, "runtime-cgroups", f.RuntimeCgroups, "Optional absolute name of the cgroup in which the container runtime runs.")

	fs = n.FlagSet(groupEviction)
	fs.BoolVar(&f.ExperimentalAllocatableIgnoreEviction, "experimental-allocatable-ignore-eviction", f.ExperimentalAllocatableIgnoreEviction, "Ignore hard eviction thresholds when computing node allocatable.")
	s.deprecate(fs.Lookup("experimental-allocatable-ignore-eviction"), deprecatedRemoval)
	fs.Int32Var(&f.MaximumDeadContainers, "maximum-dead-containers", f.MaximumDeadContainers, "Maximum number of old container instances to retain globally; negative disables.")
	s.deprecate(fs.Lookup("maximum-dead-containers"), deprecatedDeadGC)
	fs.Int32Var(&f.MaximumDeadContainersPerContainer, "maximum-dead-containers-per-container", f.MaximumDeadContainersPerContainer, "Maximum number of old instances to retain per container.")
	s.deprecate(fs.Lookup("maximum-dead-containers-per-container"), deprecatedDeadGC)
	fs.DurationVar(&f.MinimumContainerTTLDuration, "minimum-container-ttl-duration", f.MinimumContainerTTLDuration, "Minimum age of a finished container before it is garbage collected, for example '300ms', '10s' or '2h45m'.")
	s.deprecate(fs.Lookup("minimum-container-ttl-duration"), deprecatedDeadGC)
}

// bindConfig binds the options SPEC.md marks C to the configuration fields that mirror them.
func bindConfig(n *cliflag.NamedFlagSets, c *v1beta1.OrchletConfiguration) {
	fs := n.FlagSet(groupGeneric)
	fs.Var(featuregates.NewMapValue(&c.FeatureGates), "feature-gates", "A set of key=value pairs that describe feature gates for alpha/experimental features. Options are:\n"+strings.Join(featuregates.Usage(), "\n"))

	fs = n.FlagSet(groupNode)
	fs.BoolVar(&c.RegisterNode, "register-node", c.RegisterNode, "Register the node with the API server. Irrelevant without --orchconfig.")
	fs.Var(taintsValue(&c.RegisterWithTaints), "register-with-taints", "Register the node with these taints, comma-separated <key>=<value>:<effect>. No effect if --register-node is false.")
	fs.DurationVar(&c.NodeStatusUpdateFrequency.Duration, "node-status-update-frequency", c.NodeStatusUpdateFrequency.Duration, "How often the orchlet posts node status; must fit the node controller's grace period.")
	fs.Int32Var(&c.NodeStatusMaxImages, "node-status-max-images", c.NodeStatusMaxImages, "Number of images reported in node status; -1 means no cap.")
	fs.StringVar(&c.PodCIDR, "pod-cidr", c.PodCIDR, "CIDR for pod IP addresses, standalone mode only. For IPv6 at most 65536 addresses are allocated.")

	fs = n.FlagSet(groupSources)
	fs.StringVar(&c.StaticPodPath, "pod-manifest-path", c.StaticPodPath, "Directory of static pod files, or one file. Files whose names begin with dots are ignored.")
	fs.StringVar(&c.StaticPodURL, "manifest-url", c.StaticPodURL, "URL of additional pod specifications.")
	fs.Var(cliflag.NewColonSeparatedMultimapStringString(&c.StaticPodURLHeader), "manifest-url-header", "Headers for --manifest-url requests, comma-separated name:value; repeatable; headers of the same name are added in the order given.")
	fs.DurationVar(&c.FileCheckFrequency.Duration, "file-check-frequency", c.FileCheckFrequency.Duration, "Interval between checks of the config files for new data.")
	fs.DurationVar(&c.HTTPCheckFrequency.Duration, "http-check-frequency", c.HTTPCheckFrequency.Duration, "Interval between checks of the HTTP source for new data.")
	fs.DurationVar(&c.SyncFrequency.Duration, "sync-frequency", c.SyncFrequency.Duration, "Maximum period between synchronizing running containers and config.")
	fs.BoolVar(&c.RunOnce, "runonce", c.RunOnce, "Exit after starting the pods from static files or URLs. Exclusive with --enable-server.")

	fs = n.FlagSet(groupServer)
	fs.StringVar(&c.Address, "address", c.Address, "IP address to serve on; 0.0.0.0 or :: for all interfaces and families.")
	fs.Int32Var(&c.Port, "port", c.Port, "Port to serve on.")
	fs.Int32Var(&c.ReadOnlyPort, "read-only-port", c.ReadOnlyPort, "Port of the server without authentication or authorization; 0 disables.")
	fs.StringVar(&c.HealthzBindAddress, "healthz-bind-address", c.HealthzBindAddress, "IP address of the health server.")
	fs.Int32Var(&c.HealthzPort, "healthz-port", c.HealthzPort, "Port of the health server; 0 disables.")
	fs.BoolVar(&c.EnableServer, "enable-server", c.EnableServer, "Enable the orchlet's server.")
	fs.BoolVar(&c.EnableDebuggingHandlers, "enable-debugging-handlers", c.EnableDebuggingHandlers, "Serve the endpoints for log collection and local running of containers and commands.")
	fs.BoolVar(&c.EnableContentionProfiling, "contention-profiling", c.EnableContentionProfiling, "Enable block profiling, if profiling is enabled.")
	fs.BoolVar(&c.Authentication.Anonymous.Enabled, "anonymous-auth", c.Authentication.Anonymous.Enabled, "Allow anonymous requests to the server. Requests no other method rejects are anonymous, with user system:anonymous and group system:unauthenticated.")
	fs.BoolVar(&c.Authentication.Webhook.Enabled, "authentication-token-webhook", c.Authentication.Webhook.Enabled, "Authenticate bearer tokens with the TokenReview API.")
	fs.DurationVar(&c.Authentication.Webhook.CacheTTL.Duration, "authentication-token-webhook-cache-ttl", c.Authentication.Webhook.CacheTTL.Duration, "How long answers of the token webhook are cached.")
	fs.StringVar(&c.Authentication.X509.ClientCAFile, "client-ca-file", c.Authentication.X509.ClientCAFile, "Client certificates signed by an authority in this file are authenticated with the certificate's CommonName as identity.")
	fs.StringVar(&c.Authorization.Mode, "authorization-mode", c.Authorization.Mode, "Authorization mode of the server: AlwaysAllow or Webhook (uses the SubjectAccessReview API).")
	fs.DurationVar(&c.Authorization.Webhook.CacheAuthorizedTTL.Duration, "authorization-webhook-cache-authorized-ttl", c.Authorization.Webhook.CacheAuthorizedTTL.Duration, "How long 'authorized' answers of the webhook authorizer are cached.")
	fs.DurationVar(&c.Authorization.Webhook.CacheUnauthorizedTTL.Duration, "authorization-webhook-cache-unauthorized-ttl", c.Authorization.Webhook.CacheUnauthorizedTTL.Duration, "How long 'unauthorized' answers of the webhook authorizer are cached.")
	fs.StringVar(&c.TLSCertFile, "tls-cert-file", c.TLSCertFile, "x509 serving certificate, intermediates appended after it. If neither this nor --tls-private-key-file is given, a self-signed pair is generated and saved to --cert-dir.")
	fs.StringVar(&c.TLSPrivateKeyFile, "tls-private-key-file", c.TLSPrivateKeyFile, "x509 private key matching --tls-cert-file.")
	fs.Var(stringsValue(&c.TLSCipherSuites), "tls-cipher-suites", "Comma-separated cipher suites of the server; omitted means the implementation's defaults.\nPreferred values: "+strings.Join(cliflag.PreferredTLSCipherNames(), ", ")+".\nInsecure values: "+strings.Join(cliflag.InsecureTLSCipherNames(), ", ")+".")
	fs.StringVar(&c.TLSMinVersion, "tls-min-version", c.TLSMinVersion, "Minimum TLS version: "+strings.Join(cliflag.TLSPossibleVersions(), ", ")+".")
	fs.BoolVar(&c.RotateCertificates, "rotate-certificates", c.RotateCertificates, "Rotate the client certificate automatically, requesting a new one from the API server as expiry nears.")
	fs.BoolVar(&c.ServerTLSBootstrap, "rotate-server-certificates", c.ServerTLSBootstrap, "Request and rotate the serving certificate from the API server automatically; needs feature gate RotateOrchletServerCertificate and approval of the certificate signing requests.")
	fs.DurationVar(&c.StreamingConnectionIdleTimeout.Duration, "streaming-connection-idle-timeout", c.StreamingConnectionIdleTimeout.Duration, "Idle limit of streaming connections; 0 means none. Every connection to the server lasts at most 4 hours.")

	fs = n.FlagSet(groupRuntime)
	fs.StringVar(&c.ContainerRuntimeEndpoint, "container-runtime-endpoint", c.ContainerRuntimeEndpoint, "Endpoint of the container runtime: unix sockets on Linux; npipe and tcp endpoints on Windows.")
	fs.StringVar(&c.ImageServiceEndpoint, "image-service-endpoint", c.ImageServiceEndpoint, "Endpoint of the image service; defaults to --container-runtime-endpoint.")
	fs.DurationVar(&c.RuntimeRequestTimeout.Duration, "runtime-request-timeout", c.RuntimeRequestTimeout.Duration, "Timeout of runtime requests other than pull, logs, exec and attach; on expiry the request is cancelled, an error raised and the request retried later.")
	fs.BoolVar(&c.SerializeImagePulls, "serialize-image-pulls", c.SerializeImagePulls, "Pull images one at a time; keeping the default is advised on older container daemons or layered storage backends.")
	fs.Int32Var(&c.RegistryPullQPS, "registry-qps", c.RegistryPullQPS, "Image pull rate limit, >= 0; 0 means unlimited.")
	fs.Int32Var(&c.RegistryBurst, "registry-burst", c.RegistryBurst, "Burst of image pulls, >= 0; used only if --registry-qps > 0.")
	fs.Int32Var(&c.ContainerLogMaxFiles, "container-log-max-files", c.ContainerLogMaxFiles, "Beta. Maximum number of log files per container; must be >= 2.")
	fs.StringVar(&c.ContainerLogMaxSize, "container-log-max-size", c.ContainerLogMaxSize, "Beta. Size, as a quantity, at which a container log file is rotated.")
	fs.Int32Var(&c.ContainerLogMaxWorkers, "container-log-max-workers", c.ContainerLogMaxWorkers, "Maximum number of containers whose logs are rotated at once; must be >= 1.")
	fs.DurationVar(&c.ContainerLogMonitorInterval.Duration, "container-log-monitor-interval", c.ContainerLogMonitorInterval.Duration, "Interval at which container log sizes are checked for rotation; must be >= 3s.")
	fs.StringVar(&c.VolumePluginDir, "volume-plugin-dir", c.VolumePluginDir, "Directory searched for third-party volume plugins.")
	fs.DurationVar(&c.VolumeStatsAggPeriod.Duration, "volume-stats-agg-period", c.VolumeStatsAggPeriod.Duration, "Interval of volume disk usage calculation; negative disables.")
	fs.BoolVar(&c.EnableControllerAttach, "enable-controller-attach-detach", c.EnableControllerAttach, "The attach/detach controller manages the volumes of pods on this node; the orchlet performs no attach or detach.")

	fs = n.FlagSet(groupNetwork)
	fs.Var(stringsValue(&c.ClusterDNS), "cluster-dns", "Comma-separated DNS server IP addresses for pods with dnsPolicy=ClusterFirst; all must serve the same records.")
	fs.StringVar(&c.ClusterDomain, "cluster-domain", c.ClusterDomain, "Cluster domain added to the search domains of containers.")
	fs.StringVar(&c.ResolverConfig, "resolv-conf", c.ResolverConfig, "Resolver configuration file used as the basis of container DNS resolution.")
	fs.StringVar(&c.HairpinMode, "hairpin-mode", c.HairpinMode, "How hairpin NAT is set up: promiscuous-bridge, hairpin-veth or none.")
	fs.BoolVar(&c.MakeIPTablesUtilChains, "make-iptables-util-chains", c.MakeIPTablesUtilChains, "Ensure the iptables utility rules exist on the host.")
	fs.Var(stringsValue(&c.AllowedUnsafeSysctls), "allowed-unsafe-sysctls", "Comma-separated allow-list of unsafe sysctls or sysctl patterns ending in *.")

	fs = n.FlagSet(groupResources)
	fs.BoolVar(&c.FailSwapOn, "fail-swap-on", c.FailSwapOn, "Refuse to start if swap is enabled on the node.")
	fs.BoolVar(&c.ProtectKernelDefaults, "protect-kernel-defaults", c.ProtectKernelDefaults, "Error if a kernel tunable differs from the orchlet's defaults.")
	fs.Int32Var(&c.MaxPods, "max-pods", c.MaxPods, "Number of pods that can run on this orchlet.")
	fs.Int32Var(&c.PodsPerCore, "pods-per-core", c.PodsPerCore, "Number of pods per core, capped by --max-pods; 0 disables.")
	fs.Int64Var(&c.PodPidsLimit, "pod-max-pids", c.PodPidsLimit, "Maximum number of processes per pod; -1 means the node's allocatable pid capacity.")
	fs.Int64Var(&c.MaxOpenFiles, "max-open-files", c.MaxOpenFiles, "Number of files the orchlet process can open.")
	fs.Int32Var(&c.OOMScoreAdj, "oom-score-adj", c.OOMScoreAdj, "The oom-score-adj value of the orchlet process, in [-1000, 1000].")
	fs.StringVar(&c.CgroupDriver, "cgroup-driver", c.CgroupDriver, "Driver used to manipulate cgroups on the host: cgroupfs or systemd.")
	fs.StringVar(&c.CgroupRoot, "cgroup-root", c.CgroupRoot, "Optional root cgroup for pods, honoured by the runtime on a best-effort basis; empty means the runtime's default.")
	fs.BoolVar(&c.CgroupsPerQOS, "cgroups-per-qos", c.CgroupsPerQOS, "Create the QoS cgroup hierarchy.")
	fs.StringVar(&c.KubeletCgroups, "kubelet-cgroups", c.KubeletCgroups, "Optional absolute name of the cgroup in which the orchlet runs.")
	fs.StringVar(&c.SystemCgroups, "system-cgroups", c.SystemCgroups, "Optional absolute name of the cgroup for non-kernel processes not already in a cgroup; empty for none. Rolling back needs a reboot.")
	fs.BoolVar(&c.CPUCFSQuota, "cpu-cfs-quota", c.CPUCFSQuota, "Enforce CPU CFS quota for containers that specify CPU limits.")
	fs.DurationVar(&c.CPUCFSQuotaPeriod.Duration, "cpu-cfs-quota-period", c.CPUCFSQuotaPeriod.Duration, "CPU CFS quota period, between 1ms and 1s.")
	fs.StringVar(&c.CPUManagerPolicy, "cpu-manager-policy", c.CPUManagerPolicy, "CPU manager policy: none or static.")
	fs.Var(cliflag.NewMapStringStringNoSplit(&c.CPUManagerPolicyOptions), "cpu-manager-policy-options", "a key=value option to fine-tune the CPU manager policy; repeat the flag for several (as the kubelet, a comma does not split them).")
	fs.DurationVar(&c.CPUManagerReconcilePeriod.Duration, "cpu-manager-reconcile-period", c.CPUManagerReconcilePeriod.Duration, "Alpha. CPU manager reconcile period.")
	fs.StringVar(&c.MemoryManagerPolicy, "memory-manager-policy", c.MemoryManagerPolicy, "Memory manager policy: None or Static.")
	fs.StringVar(&c.TopologyManagerPolicy, "topology-manager-policy", c.TopologyManagerPolicy, "Topology manager policy: none, best-effort, restricted or single-numa-node.")
	fs.Var(cliflag.NewMapStringString(&c.TopologyManagerPolicyOptions), "topology-manager-policy-options", "key=value options to fine-tune the topology manager policy.")
	fs.StringVar(&c.TopologyManagerScope, "topology-manager-scope", c.TopologyManagerScope, "Scope of topology hints: container or pod.")
	fs.Var(cliflag.NewMapStringString(&c.QOSReserved), "qos-reserved", "Alpha. Percentage of pod requests reserved at QoS level, only memory (for example memory=50%); needs feature gate QOSReserved.")
	fs.Var(cliflag.NewMapStringString(&c.KubeReserved), "kube-reserved", "Resources reserved for the product's system components, <resource>=<quantity> pairs of cpu, memory, pid and ephemeral-storage (root filesystem only).")
	fs.StringVar(&c.KubeReservedCgroup, "kube-reserved-cgroup", c.KubeReservedCgroup, "Absolute name of the top-level cgroup of the components --kube-reserved is for.")
	fs.Var(cliflag.NewMapStringString(&c.SystemReserved), "system-reserved", "Resources reserved for the other system components, with the resources of --kube-reserved.")
	fs.StringVar(&c.SystemReservedCgroup, "system-reserved-cgroup", c.SystemReservedCgroup, "Absolute name of the top-level cgroup of the components --system-reserved is for.")
	fs.StringVar(&c.ReservedSystemCPUs, "reserved-cpus", c.ReservedSystemCPUs, "CPUs or CPU ranges reserved for system and orch components; supersedes the CPU counts of the reserved options.")
	fs.Var(reservedMemoryValue(&c.ReservedMemory), "reserved-memory", "Memory reserved per NUMA node, <numa>:<type>=<quantity>[,<type>=<quantity>...], nodes separated by ';'; repeatable. Per type the total must equal --kube-reserved plus --system-reserved plus the hard eviction threshold.")
	fs.Var(stringsValue(&c.EnforceNodeAllocatable), "enforce-node-allocatable", "Comma-separated levels of node allocatable the orchlet enforces: none, pods, system-reserved, system-reserved-compressible, orch-reserved, orch-reserved-compressible (also written kube-reserved, kube-reserved-compressible). The reserved levels need their --system-reserved-cgroup or --kube-reserved-cgroup; none must stand alone.")
	fs.BoolVar(&c.LocalStorageCapacityIsolation, "local-storage-capacity-isolation", c.LocalStorageCapacityIsolation, "Enable local ephemeral storage isolation.")
	fs.BoolVar(&c.KernelMemcgNotification, "kernel-memcg-notification", c.KernelMemcgNotification, "Use kernel memcg notification, instead of polling, to tell when memory eviction thresholds are crossed.")

	fs = n.FlagSet(groupEviction)
	fs.Var(cliflag.NewLangleSeparatedMapStringString(&c.EvictionHard), "eviction-hard", "Thresholds (for example memory.available<1Gi) that trigger pod eviction.")
	fs.Var(cliflag.NewLangleSeparatedMapStringString(&c.EvictionSoft), "eviction-soft", "Thresholds (for example memory.available<1.5Gi) that trigger pod eviction when held over their grace period.")
	fs.Var(cliflag.NewMapStringString(&c.EvictionSoftGracePeriod), "eviction-soft-grace-period", "Grace periods of the soft thresholds (for example memory.available=1m30s).")
	fs.Var(cliflag.NewMapStringString(&c.EvictionMinimumReclaim), "eviction-minimum-reclaim", "Minimum amount to reclaim per resource under pressure (for example imagefs.available=2Gi).")
	fs.DurationVar(&c.EvictionPressureTransitionPeriod.Duration, "eviction-pressure-transition-period", c.EvictionPressureTransitionPeriod.Duration, "How long to wait before leaving an eviction pressure condition.")
	fs.Int32Var(&c.EvictionMaxPodGracePeriod, "eviction-max-pod-grace-period", c.EvictionMaxPodGracePeriod, "Maximum grace period in seconds on soft eviction; the effective one is the lesser of this and the pod's terminationGracePeriodSeconds; negative means immediate.")
	fs.DurationVar(&c.ImageMinimumGCAge.Duration, "minimum-image-ttl-duration", c.ImageMinimumGCAge.Duration, "Minimum age of an unused image before it is garbage collected.")
	fs.Int32Var(&c.ImageGCHighThresholdPercent, "image-gc-high-threshold", c.ImageGCHighThresholdPercent, "Percent of disk usage above which image garbage collection always runs, in [0, 100]; 100 disables.")
	fs.Int32Var(&c.ImageGCLowThresholdPercent, "image-gc-low-threshold", c.ImageGCLowThresholdPercent, "Percent of disk usage below which image garbage collection never runs, in [0, 100]; must be less than --image-gc-high-threshold.")

	fs = n.FlagSet(groupClient)
	fs.Int32Var(&c.KubeAPIQPS, "kube-api-qps", c.KubeAPIQPS, "QPS to the API server, >= 0; 0 means 50. Events and node heartbeats are not counted.")
	fs.Int32Var(&c.KubeAPIBurst, "kube-api-burst", c.KubeAPIBurst, "Burst to the API server, >= 0; 0 means 100. Events and node heartbeats are not counted.")
	fs.StringVar(&c.ContentType, "kube-api-content-type", c.ContentType, "Content type of requests sent to the API server.")
	fs.Int32Var(&c.EventRecordQPS, "event-qps", c.EventRecordQPS, "Event creation rate limit, >= 0; 0 means 5.")
	fs.Int32Var(&c.EventBurst, "event-burst", c.EventBurst, "Burst of event records, >= 0; 0 means 10.")

	fs = n.FlagSet(groupLogging)
	fs.StringVar(&c.Logging.Format, "logging-format", c.Logging.Format, "Log format; only text is permitted.")
	fs.BoolVar(&c.Logging.Options.Text.SplitStream, "log-text-split-stream", c.Logging.Options.Text.SplitStream, "Alpha. Write error messages to stderr and info messages to stdout; needs feature gate LoggingAlphaOptions.")
	fs.Var(&c.Logging.Options.Text.InfoBufferSize, "log-text-info-buffer-size", "Alpha. Size of the buffer for info messages when streams are split; needs feature gate LoggingAlphaOptions.")
}

// bindLogging binds the logging options SPEC.md does not mark C; they still live in the file's logging
// section, as in Kubernetes.
func bindLogging(n *cliflag.NamedFlagSets, c *logsapi.LoggingConfiguration) {
	fs := n.FlagSet(groupLogging)
	fs.VarP(logsapi.VerbosityLevelPflag(&c.Verbosity), "v", "v", "Number for the log level verbosity.")
	fs.Var(logsapi.VModuleConfigurationPflag(&c.VModule), "vmodule", "Comma-separated pattern=N settings for file-filtered logging (text format only).")
	fs.DurationVar(&c.FlushFrequency.Duration.Duration, "log-flush-frequency", c.FlushFrequency.Duration.Duration, "Maximum number of seconds between log flushes.")
}
