package v1beta1

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	logsapi "k8s.io/component-base/logs/api/v1"
)

// NewDefault returns a configuration holding SPEC.md's default for every field, with its kind and
// group-version set. Each call returns fresh maps and slices the caller may change.
func NewDefault() *OrchletConfiguration {
	d := func(x time.Duration) metav1.Duration { return metav1.Duration{Duration: x} }
	return &OrchletConfiguration{
		TypeMeta: metav1.TypeMeta{Kind: Kind, APIVersion: SchemeGroupVersion.String()},

		EnableServer:            true,
		Address:                 "0.0.0.0",
		Port:                    10250,
		ReadOnlyPort:            10255,
		HealthzBindAddress:      "127.0.0.1",
		HealthzPort:             10248,
		EnableDebuggingHandlers: true,
		Authentication: OrchletAuthentication{
			Webhook:   OrchletWebhookAuthentication{CacheTTL: d(2 * time.Minute)},
			Anonymous: OrchletAnonymousAuthentication{Enabled: true},
		},
		Authorization: OrchletAuthorization{
			Mode: "AlwaysAllow",
			Webhook: OrchletWebhookAuthorization{
				CacheAuthorizedTTL:   d(5 * time.Minute),
				CacheUnauthorizedTTL: d(30 * time.Second),
			},
		},
		StreamingConnectionIdleTimeout: d(4 * time.Hour),

		FileCheckFrequency:        d(20 * time.Second),
		HTTPCheckFrequency:        d(20 * time.Second),
		SyncFrequency:             d(time.Minute),
		NodeStatusUpdateFrequency: d(10 * time.Second),
		VolumeStatsAggPeriod:      d(time.Minute),

		RegisterNode:           true,
		NodeStatusMaxImages:    50,
		ResolverConfig:         "/etc/resolv.conf",
		HairpinMode:            "promiscuous-bridge",
		MakeIPTablesUtilChains: true,
		VolumePluginDir:        "/usr/libexec/orch/orchlet-plugins/volume/exec/",
		EnableControllerAttach: true,
		FailSwapOn:             true,

		ContainerRuntimeEndpoint:    "unix:///run/containerd/containerd.sock",
		RuntimeRequestTimeout:       d(2 * time.Minute),
		SerializeImagePulls:         true,
		ContainerLogMaxSize:         "10Mi",
		ContainerLogMaxFiles:        5,
		ContainerLogMaxWorkers:      1,
		ContainerLogMonitorInterval: d(10 * time.Second),

		MaxPods:                       110,
		PodPidsLimit:                  -1,
		MaxOpenFiles:                  1000000,
		OOMScoreAdj:                   -999,
		CgroupDriver:                  "cgroupfs",
		CgroupsPerQOS:                 true,
		CPUCFSQuota:                   true,
		CPUCFSQuotaPeriod:             d(100 * time.Millisecond),
		CPUManagerPolicy:              "none",
		CPUManagerReconcilePeriod:     d(10 * time.Second),
		MemoryManagerPolicy:           "None",
		TopologyManagerPolicy:         "none",
		TopologyManagerScope:          "container",
		EnforceNodeAllocatable:        []string{"pods"},
		LocalStorageCapacityIsolation: true,

		EvictionPressureTransitionPeriod: d(5 * time.Minute),
		ImageMinimumGCAge:                d(2 * time.Minute),
		ImageGCHighThresholdPercent:      85,
		ImageGCLowThresholdPercent:       80,

		EventRecordQPS:  50,
		EventBurst:      100,
		KubeAPIQPS:      50,
		KubeAPIBurst:    100,
		ContentType:     "application/vnd.orch.protobuf",
		RegistryPullQPS: 5,
		RegistryBurst:   10,

		Logging: *logsapi.NewLoggingConfiguration(),
	}
}
