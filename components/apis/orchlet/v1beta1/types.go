package v1beta1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	logsapi "k8s.io/component-base/logs/api/v1"
)

// GroupName is the configuration group of the node agent.
const GroupName = "orchlet.config.orch.io"

// SchemeGroupVersion is the group-version a configuration file must declare.
var SchemeGroupVersion = schema.GroupVersion{Group: GroupName, Version: "v1beta1"}

// Kind is the kind a configuration file must declare.
const Kind = "OrchletConfiguration"

// OrchletConfiguration is the node agent's configuration file. Values are not pointers: a file is
// decoded over the defaults, so a field the file leaves out keeps its default and a field it sets,
// even to zero, takes the file's value.
type OrchletConfiguration struct {
	metav1.TypeMeta `json:",inline"`

	// Servers and their authentication.
	EnableServer                   bool                  `json:"enableServer"`
	Address                        string                `json:"address"`
	Port                           int32                 `json:"port"`
	ReadOnlyPort                   int32                 `json:"readOnlyPort"`
	HealthzBindAddress             string                `json:"healthzBindAddress"`
	HealthzPort                    int32                 `json:"healthzPort"`
	EnableDebuggingHandlers        bool                  `json:"enableDebuggingHandlers"`
	EnableContentionProfiling      bool                  `json:"enableContentionProfiling"`
	TLSCertFile                    string                `json:"tlsCertFile"`
	TLSPrivateKeyFile              string                `json:"tlsPrivateKeyFile"`
	TLSCipherSuites                []string              `json:"tlsCipherSuites,omitempty"`
	TLSMinVersion                  string                `json:"tlsMinVersion"`
	RotateCertificates             bool                  `json:"rotateCertificates"`
	ServerTLSBootstrap             bool                  `json:"serverTLSBootstrap"`
	Authentication                 OrchletAuthentication `json:"authentication"`
	Authorization                  OrchletAuthorization  `json:"authorization"`
	StreamingConnectionIdleTimeout metav1.Duration       `json:"streamingConnectionIdleTimeout"`

	// Pod sources and periods.
	StaticPodPath             string              `json:"staticPodPath"`
	StaticPodURL              string              `json:"staticPodURL"`
	StaticPodURLHeader        map[string][]string `json:"staticPodURLHeader,omitempty"`
	FileCheckFrequency        metav1.Duration     `json:"fileCheckFrequency"`
	HTTPCheckFrequency        metav1.Duration     `json:"httpCheckFrequency"`
	SyncFrequency             metav1.Duration     `json:"syncFrequency"`
	NodeStatusUpdateFrequency metav1.Duration     `json:"nodeStatusUpdateFrequency"`
	VolumeStatsAggPeriod      metav1.Duration     `json:"volumeStatsAggPeriod"`
	RunOnce                   bool                `json:"runOnce"`

	// Node registration and networking.
	RegisterNode            bool           `json:"registerNode"`
	RegisterWithTaints      []corev1.Taint `json:"registerWithTaints,omitempty"`
	NodeStatusMaxImages     int32          `json:"nodeStatusMaxImages"`
	ClusterDomain           string         `json:"clusterDomain"`
	ClusterDNS              []string       `json:"clusterDNS,omitempty"`
	ResolverConfig          string         `json:"resolvConf"`
	PodCIDR                 string         `json:"podCIDR"`
	HairpinMode             string         `json:"hairpinMode"`
	MakeIPTablesUtilChains  bool           `json:"makeIPTablesUtilChains"`
	AllowedUnsafeSysctls    []string       `json:"allowedUnsafeSysctls,omitempty"`
	VolumePluginDir         string         `json:"volumePluginDir"`
	EnableControllerAttach  bool           `json:"enableControllerAttachDetach"`
	ProtectKernelDefaults   bool           `json:"protectKernelDefaults"`
	FailSwapOn              bool           `json:"failSwapOn"`
	KernelMemcgNotification bool           `json:"kernelMemcgNotification"`

	// Container runtime.
	ContainerRuntimeEndpoint string          `json:"containerRuntimeEndpoint"`
	ImageServiceEndpoint     string          `json:"imageServiceEndpoint"`
	RuntimeRequestTimeout    metav1.Duration `json:"runtimeRequestTimeout"`
	SerializeImagePulls      bool            `json:"serializeImagePulls"`
	ContainerLogMaxSize      string          `json:"containerLogMaxSize"`
	ContainerLogMaxFiles     int32           `json:"containerLogMaxFiles"`
	// ContainerLogMaxWorkers rotate that many containers' logs at once; ContainerLogMonitorInterval
	// is the time between rotation rounds. Kubernetes' fields of the same names.
	ContainerLogMaxWorkers      int32           `json:"containerLogMaxWorkers"`
	ContainerLogMonitorInterval metav1.Duration `json:"containerLogMonitorInterval"`

	// Resources, cgroups and resource managers.
	MaxPods                       int32               `json:"maxPods"`
	PodsPerCore                   int32               `json:"podsPerCore"`
	PodPidsLimit                  int64               `json:"podPidsLimit"`
	MaxOpenFiles                  int64               `json:"maxOpenFiles"`
	OOMScoreAdj                   int32               `json:"oomScoreAdj"`
	CgroupDriver                  string              `json:"cgroupDriver"`
	CgroupRoot                    string              `json:"cgroupRoot"`
	CgroupsPerQOS                 bool                `json:"cgroupsPerQOS"`
	KubeletCgroups                string              `json:"kubeletCgroups"`
	SystemCgroups                 string              `json:"systemCgroups"`
	CPUCFSQuota                   bool                `json:"cpuCFSQuota"`
	CPUCFSQuotaPeriod             metav1.Duration     `json:"cpuCFSQuotaPeriod"`
	CPUManagerPolicy              string              `json:"cpuManagerPolicy"`
	CPUManagerPolicyOptions       map[string]string   `json:"cpuManagerPolicyOptions,omitempty"`
	CPUManagerReconcilePeriod     metav1.Duration     `json:"cpuManagerReconcilePeriod"`
	MemoryManagerPolicy           string              `json:"memoryManagerPolicy"`
	TopologyManagerPolicy         string              `json:"topologyManagerPolicy"`
	TopologyManagerScope          string              `json:"topologyManagerScope"`
	TopologyManagerPolicyOptions  map[string]string   `json:"topologyManagerPolicyOptions,omitempty"`
	QOSReserved                   map[string]string   `json:"qosReserved,omitempty"`
	KubeReserved                  map[string]string   `json:"kubeReserved,omitempty"`
	KubeReservedCgroup            string              `json:"kubeReservedCgroup"`
	SystemReserved                map[string]string   `json:"systemReserved,omitempty"`
	SystemReservedCgroup          string              `json:"systemReservedCgroup"`
	ReservedSystemCPUs            string              `json:"reservedSystemCPUs"`
	ReservedMemory                []MemoryReservation `json:"reservedMemory,omitempty"`
	EnforceNodeAllocatable        []string            `json:"enforceNodeAllocatable"`
	LocalStorageCapacityIsolation bool                `json:"localStorageCapacityIsolation"`

	// Eviction and image garbage collection.
	EvictionHard                     map[string]string `json:"evictionHard,omitempty"`
	EvictionSoft                     map[string]string `json:"evictionSoft,omitempty"`
	EvictionSoftGracePeriod          map[string]string `json:"evictionSoftGracePeriod,omitempty"`
	EvictionMinimumReclaim           map[string]string `json:"evictionMinimumReclaim,omitempty"`
	EvictionPressureTransitionPeriod metav1.Duration   `json:"evictionPressureTransitionPeriod"`
	EvictionMaxPodGracePeriod        int32             `json:"evictionMaxPodGracePeriod"`
	ImageMinimumGCAge                metav1.Duration   `json:"imageMinimumGCAge"`
	// ImageMaximumGCAge: an unused image not used for this long is deleted whatever the disk
	// usage (with the ImageMaximumGCAge gate); 0 disables. The configuration file only, as in Kubernetes.
	ImageMaximumGCAge           metav1.Duration `json:"imageMaximumGCAge"`
	ImageGCHighThresholdPercent int32           `json:"imageGCHighThresholdPercent"`
	ImageGCLowThresholdPercent  int32           `json:"imageGCLowThresholdPercent"`

	// Rate limits.
	EventRecordQPS  int32  `json:"eventRecordQPS"`
	EventBurst      int32  `json:"eventBurst"`
	KubeAPIQPS      int32  `json:"kubeAPIQPS"`
	KubeAPIBurst    int32  `json:"kubeAPIBurst"`
	ContentType     string `json:"contentType"`
	RegistryPullQPS int32  `json:"registryPullQPS"`
	RegistryBurst   int32  `json:"registryBurst"`

	// FeatureGates maps gate names to values; it merges with `--feature-gates`, the option winning per gate.
	FeatureGates map[string]bool `json:"featureGates,omitempty"`

	// Logging uses component-base's logging configuration so Kubernetes-shaped files decode unchanged.
	Logging logsapi.LoggingConfiguration `json:"logging"`
}

// OrchletAuthentication configures who may call the node agent's HTTPS server.
type OrchletAuthentication struct {
	X509      OrchletX509Authentication      `json:"x509"`
	Webhook   OrchletWebhookAuthentication   `json:"webhook"`
	Anonymous OrchletAnonymousAuthentication `json:"anonymous"`
}

// OrchletX509Authentication names the client certificate authorities.
type OrchletX509Authentication struct {
	ClientCAFile string `json:"clientCAFile"`
}

// OrchletWebhookAuthentication configures bearer-token checks through the TokenReview API.
type OrchletWebhookAuthentication struct {
	Enabled  bool            `json:"enabled"`
	CacheTTL metav1.Duration `json:"cacheTTL"`
}

// OrchletAnonymousAuthentication allows requests no other method rejected, as system:anonymous.
type OrchletAnonymousAuthentication struct {
	Enabled bool `json:"enabled"`
}

// OrchletAuthorization chooses how authenticated requests are authorized.
type OrchletAuthorization struct {
	Mode    string                      `json:"mode"`
	Webhook OrchletWebhookAuthorization `json:"webhook"`
}

// OrchletWebhookAuthorization caches SubjectAccessReview answers.
type OrchletWebhookAuthorization struct {
	CacheAuthorizedTTL   metav1.Duration `json:"cacheAuthorizedTTL"`
	CacheUnauthorizedTTL metav1.Duration `json:"cacheUnauthorizedTTL"`
}

// MemoryReservation reserves memory of each type on one NUMA node.
type MemoryReservation struct {
	NumaNode int32               `json:"numaNode"`
	Limits   corev1.ResourceList `json:"limits"`
}
