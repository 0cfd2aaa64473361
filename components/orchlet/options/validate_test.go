package options

import (
	"strings"
	"testing"
)

// TestValidateRefuses checks each constraint SPEC.md states: the value is refused and the message
// names the option.
func TestValidateRefuses(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"cgroup driver", []string{"--cgroup-driver=docker"}, `--cgroup-driver (cgroupDriver): unsupported value "docker": must be one of "cgroupfs", "systemd"`},
		{"hairpin mode", []string{"--hairpin-mode=veth"}, `--hairpin-mode (hairpinMode): unsupported value "veth"`},
		{"topology policy", []string{"--topology-manager-policy=strict"}, `--topology-manager-policy (topologyManagerPolicy): unsupported value "strict"`},
		{"topology scope", []string{"--topology-manager-scope=node"}, `--topology-manager-scope (topologyManagerScope): unsupported value "node"`},
		{"cpu policy", []string{"--cpu-manager-policy=Static"}, `--cpu-manager-policy (cpuManagerPolicy): unsupported value "Static"`},
		{"memory policy", []string{"--memory-manager-policy=static"}, `--memory-manager-policy (memoryManagerPolicy): unsupported value "static"`},
		{"authorization mode", []string{"--authorization-mode=RBAC"}, `--authorization-mode (authorization.mode): unsupported value "RBAC"`},
		{"tls min version", []string{"--tls-min-version=VersionTLS14"}, `--tls-min-version (tlsMinVersion): unsupported value "VersionTLS14"`},
		{"tls cipher", []string{"--tls-cipher-suites=TLS_AES_128_GCM_SHA256,TLS_NOPE"}, `--tls-cipher-suites (tlsCipherSuites): unknown cipher suite "TLS_NOPE"`},
		{"logging format", []string{"--logging-format=json"}, `--logging-format (logging.format): unsupported value "json": must be one of "text"`},
		{"oom low", []string{"--oom-score-adj=-1001"}, `--oom-score-adj (oomScoreAdj): -1001 is out of range [-1000, 1000]`},
		{"oom high", []string{"--oom-score-adj=1001"}, `--oom-score-adj (oomScoreAdj): 1001 is out of range [-1000, 1000]`},
		{"gc high range", []string{"--image-gc-high-threshold=101"}, `--image-gc-high-threshold (imageGCHighThresholdPercent): 101 is out of range [0, 100]`},
		{"gc low range", []string{"--image-gc-low-threshold=-1"}, `--image-gc-low-threshold (imageGCLowThresholdPercent): -1 is out of range [0, 100]`},
		{"gc low not below high", []string{"--image-gc-low-threshold=85"}, `--image-gc-low-threshold (imageGCLowThresholdPercent): 85 must be less than --image-gc-high-threshold (imageGCHighThresholdPercent) 85`},
		{"log max files", []string{"--container-log-max-files=1"}, `--container-log-max-files (containerLogMaxFiles): must be >= 2, got 1`},
		{"log max size", []string{"--container-log-max-size=big"}, `--container-log-max-size (containerLogMaxSize): "big" is not a quantity`},
		{"log max size fraction", []string{"--container-log-max-size=1.5"}, `--container-log-max-size (containerLogMaxSize): "1.5" is not a whole number of bytes`},
		{"log max size zero", []string{"--container-log-max-size=0"}, `--container-log-max-size (containerLogMaxSize): must be greater than 0, got 0`},
		{"reserved cpus", []string{"--reserved-cpus=x"}, `--reserved-cpus (reservedSystemCPUs): "x" is not a CPU list`},
		{"cpu policy options under none", []string{"--cpu-manager-policy-options=full-pcpus-only=true"}, `--cpu-manager-policy-options (cpuManagerPolicyOptions): None policy: received unsupported options=map[full-pcpus-only:true]`},
		{"cpu policy option unknown", []string{"--cpu-manager-policy=static", "--cpu-manager-policy-options=pack=true"}, `--cpu-manager-policy-options (cpuManagerPolicyOptions): unknown CPU Manager Policy option: "pack"`},
		{"cpu policy alpha option", []string{"--cpu-manager-policy=static", "--cpu-manager-policy-options=align-by-socket=true"}, `--cpu-manager-policy-options (cpuManagerPolicyOptions): CPU Manager Policy Alpha-level Options not enabled, but option "align-by-socket" provided`},
		{"cpu policy options exclusive", []string{"--cpu-manager-policy=static", "--feature-gates=CPUManagerPolicyAlphaOptions=true", "--cpu-manager-policy-options=distribute-cpus-across-numa=true", "--cpu-manager-policy-options=distribute-cpus-across-cores=true"}, `--cpu-manager-policy-options (cpuManagerPolicyOptions): static policy options distribute-cpus-across-numa and distribute-cpus-across-cores can not be used at the same time`},
		// As the kubelet's, the flag takes one key=value: a comma is part of the value.
		{"cpu policy options one per flag", []string{"--cpu-manager-policy=static", "--cpu-manager-policy-options=full-pcpus-only=true,strict-cpu-reservation=true"}, `--cpu-manager-policy-options (cpuManagerPolicyOptions): bad value for option "full-pcpus-only": strconv.ParseBool: parsing "true,strict-cpu-reservation=true": invalid syntax`},
		{"log max workers", []string{"--container-log-max-workers=0"}, `--container-log-max-workers (containerLogMaxWorkers): must be >= 1, got 0`},
		{"log monitor interval", []string{"--container-log-monitor-interval=2s"}, `--container-log-monitor-interval (containerLogMonitorInterval): must be a duration of at least 3s, got 2s`},
		{"event qps", []string{"--event-qps=-1"}, `--event-qps (eventRecordQPS): must be >= 0, got -1`},
		{"event burst", []string{"--event-burst=-1"}, `--event-burst (eventBurst): must be >= 0, got -1`},
		{"api qps", []string{"--kube-api-qps=-1"}, `--kube-api-qps (kubeAPIQPS): must be >= 0, got -1`},
		{"api burst", []string{"--kube-api-burst=-1"}, `--kube-api-burst (kubeAPIBurst): must be >= 0, got -1`},
		{"registry qps", []string{"--registry-qps=-1"}, `--registry-qps (registryPullQPS): must be >= 0, got -1`},
		{"registry burst", []string{"--registry-burst=-1"}, `--registry-burst (registryBurst): must be >= 0, got -1`},
		{"node status images", []string{"--node-status-max-images=-2"}, `--node-status-max-images (nodeStatusMaxImages): must be >= -1, got -2`},
		{"pod pids", []string{"--pod-max-pids=-2"}, `--pod-max-pids (podPidsLimit): must be >= -1, got -2`},
		{"port", []string{"--port=70000"}, `--port (port): 70000 is out of range [1, 65535]`},
		{"cfs period", []string{"--cpu-cfs-quota-period=2s"}, `--cpu-cfs-quota-period (cpuCFSQuotaPeriod): 2s is out of range [1ms, 1s]`},
		{"sync frequency", []string{"--sync-frequency=0s"}, `--sync-frequency (syncFrequency): must be greater than 0`},
		{"allocatable none alone", []string{"--enforce-node-allocatable=none,pods"}, `--enforce-node-allocatable (enforceNodeAllocatable): "none" must stand alone`},
		{"allocatable unknown level", []string{"--enforce-node-allocatable=everything"}, `--enforce-node-allocatable (enforceNodeAllocatable): unsupported level "everything"`},
		{"allocatable system cgroup", []string{"--enforce-node-allocatable=pods,system-reserved"}, `level "system-reserved" needs --system-reserved-cgroup (systemReservedCgroup)`},
		{"allocatable system compressible cgroup", []string{"--enforce-node-allocatable=system-reserved-compressible"}, `level "system-reserved-compressible" needs --system-reserved-cgroup`},
		{"allocatable orch cgroup", []string{"--enforce-node-allocatable=orch-reserved"}, `level "orch-reserved" needs --kube-reserved-cgroup (kubeReservedCgroup)`},
		{"allocatable kube spelling", []string{"--enforce-node-allocatable=kube-reserved-compressible"}, `level "kube-reserved-compressible" needs --kube-reserved-cgroup`},
		{"node label namespace", []string{"--node-labels=orch.io/role=x"}, `--node-labels: key "orch.io/role" is in the orch.io namespace`},
		{"node label subdomain", []string{"--node-labels=foo.orch.io/x=y"}, `key "foo.orch.io/x" is in the orch.io namespace`},
		{"node label syntax", []string{"--node-labels=bad key=x"}, `--node-labels: key "bad key"`},
		{"node label value", []string{"--node-labels=a=bad value"}, `--node-labels: value "bad value" of "a"`},
		{"runonce with server", []string{"--runonce"}, `--runonce (runOnce): is exclusive with --enable-server (enableServer)`},
		{"qos reserved gate", []string{"--qos-reserved=memory=50%"}, `--qos-reserved (qosReserved): needs feature gate QOSReserved`},
		{"qos reserved resource", []string{"--feature-gates=QOSReserved=true", "--qos-reserved=cpu=50%"}, `--qos-reserved (qosReserved): unsupported resource "cpu"`},
		{"qos reserved percent", []string{"--feature-gates=QOSReserved=true", "--qos-reserved=memory=150%"}, `--qos-reserved (qosReserved): memory="150%" must be a percentage`},
		{"split stream gate", []string{"--log-text-split-stream"}, `--log-text-split-stream (logging.options.text.splitStream): needs feature gate LoggingAlphaOptions`},
		{"info buffer gate", []string{"--log-text-info-buffer-size=1Mi"}, `--log-text-info-buffer-size (logging.options.text.infoBufferSize): needs feature gate LoggingAlphaOptions`},
		{"server rotation gate", []string{"--feature-gates=RotateOrchletServerCertificate=false", "--rotate-server-certificates"}, `--rotate-server-certificates (serverTLSBootstrap): needs feature gate RotateOrchletServerCertificate`},
		{"server rotation gate via AllBeta", []string{"--feature-gates=AllBeta=false", "--rotate-server-certificates"}, `needs feature gate RotateOrchletServerCertificate`},
		{"taint effect", []string{"--register-with-taints=a=b:Sometimes"}, `--register-with-taints (registerWithTaints): taint "a": unsupported effect "Sometimes"`},
		{"taint key", []string{"--register-with-taints=-a=b:NoSchedule"}, `--register-with-taints (registerWithTaints): key "-a"`},
		{"reserved resource", []string{"--kube-reserved=gpu=1"}, `--kube-reserved (kubeReserved): unsupported resource "gpu"`},
		{"reserved quantity", []string{"--system-reserved=memory=lots"}, `--system-reserved (systemReserved): memory="lots" is not a non-negative quantity`},
		{"reserved memory type", []string{"--reserved-memory=0:cpu=1"}, `--reserved-memory (reservedMemory): NUMA node 0: unsupported memory type "cpu"`},
		{"reserved memory total", []string{"--kube-reserved=memory=1Gi", "--reserved-memory=0:memory=512Mi"}, `--reserved-memory (reservedMemory): the total amount "512Mi" of type "memory" is not equal to the value "1124Mi" determined by Node Allocatable feature`},
		{"eviction signal", []string{"--eviction-hard=disk.available<1Gi"}, `--eviction-hard (evictionHard): unsupported eviction signal disk.available`},
		{"eviction value", []string{"--eviction-hard=memory.available<lots"}, `--eviction-hard (evictionHard): eviction threshold memory.available: "lots" is neither a quantity nor a percentage`},
		{"eviction zero", []string{"--eviction-hard=memory.available<0"}, `--eviction-hard (evictionHard): eviction threshold memory.available must be positive: 0`},
		{"reclaim zero percent", []string{"--eviction-minimum-reclaim=nodefs.available=0%"}, `--eviction-minimum-reclaim (evictionMinimumReclaim): eviction percentage minimum reclaim nodefs.available must be positive: 0%`},
		{"reclaim negative", []string{"--eviction-minimum-reclaim=nodefs.available=-1Gi"}, `--eviction-minimum-reclaim (evictionMinimumReclaim): negative eviction minimum reclaim specified for nodefs.available`},
		{"eviction percent", []string{"--eviction-hard=nodefs.available<120%"}, `--eviction-hard (evictionHard): eviction percentage threshold nodefs.available must be <= 100%: 120%`},
		{"soft without grace", []string{"--eviction-soft=memory.available<1Gi"}, `--eviction-soft (evictionSoft): grace period must be specified for the soft eviction threshold memory.available`},
		{"soft grace duration", []string{"--eviction-soft-grace-period=memory.available=soon"}, `--eviction-soft-grace-period (evictionSoftGracePeriod): memory.available: "soon"`},
		{"exit on lock without file", []string{"--exit-on-lock-contention"}, `--exit-on-lock-contention: needs --lock-file`},
		{"address", []string{"--address=localhost"}, `--address (address): "localhost" is not an IP address`},
		{"cluster dns", []string{"--cluster-dns=dns.local"}, `--cluster-dns (clusterDNS): "dns.local" is not an IP address`},
		{"pod cidr", []string{"--pod-cidr=10.0.0.0"}, `--pod-cidr (podCIDR): "10.0.0.0" is not a CIDR`},
		{"node ip", []string{"--node-ip=10.0.0.1,fe80::1,10.0.0.2"}, `--node-ip: at most two addresses`},
		{"plugins without their directory", []string{"--image-credential-provider-config=/etc/orch/credentials.yaml"}, `--image-credential-provider-config: needs --image-credential-provider-bin-dir`},
		{"a plugin directory alone", []string{"--image-credential-provider-bin-dir=/opt/bin"}, `--image-credential-provider-bin-dir: needs --image-credential-provider-config`},
		{"in-tree cloud provider", []string{"--cloud-provider=aws"}, `--cloud-provider: cloud provider "aws" was specified, but built-in cloud providers are disabled. Please set --cloud-provider=external`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse(tt.args, build)
			if err == nil {
				t.Fatalf("%q accepted", tt.args)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v\nwant it to contain %q", err, tt.want)
			}
		})
	}
}

func TestValidateAccepts(t *testing.T) {
	tests := [][]string{
		{"--enforce-node-allocatable=none"},
		{"--enforce-node-allocatable=pods,system-reserved,kube-reserved", "--system-reserved-cgroup=/sys", "--kube-reserved-cgroup=/kube"},
		{"--enforce-node-allocatable=orch-reserved-compressible", "--kube-reserved-cgroup=/kube"},
		{"--node-labels=orchlet.orch.io/a=b,node.orch.io/c=d,x.node.orch.io/e=f,orch.io/hostname=h,topology.orch.io/zone=z,example.com/k=v,plain=1"},
		{"--runonce", "--enable-server=false"},
		{"--feature-gates=AllAlpha=true", "--qos-reserved=memory=50%", "--log-text-split-stream", "--log-text-info-buffer-size=1Mi"},
		{"--rotate-server-certificates"},
		{"--image-gc-high-threshold=100", "--image-gc-low-threshold=0"},
		{"--tls-min-version=VersionTLS13", "--tls-cipher-suites=TLS_AES_128_GCM_SHA256,TLS_RSA_WITH_RC4_128_SHA"},
		{"--eviction-soft=memory.available<1Gi", "--eviction-soft-grace-period=memory.available=1m30s", "--eviction-minimum-reclaim=imagefs.available=2Gi"},
		{"--kube-reserved=memory=1Gi", "--system-reserved=memory=512Mi", "--eviction-hard=memory.available<512Mi", "--reserved-memory=0:memory=1Gi;1:memory=1Gi"},
		// A percentage threshold is a share of a capacity only the machine knows: checked at start.
		{"--eviction-hard=memory.available<5%", "--reserved-memory=0:memory=1Gi"},
		// Without --eviction-hard, Kubernetes' 100Mi holds.
		{"--reserved-memory=0:memory=60Mi;1:memory=40Mi"},
		{"--lock-file=/run/orchlet.lock", "--exit-on-lock-contention"},
		{"--node-ip=10.0.0.1,fe80::1"},
		{"--cloud-provider=external"},
		{"--cpu-manager-policy=static", "--cpu-manager-policy-options=distribute-cpus-across-numa=true", "--cpu-manager-policy-options=full-pcpus-only=true", "--cpu-manager-policy-options=strict-cpu-reservation=true"},
		{"--cpu-manager-policy=static", "--feature-gates=CPUManagerPolicyAlphaOptions=true", "--cpu-manager-policy-options=align-by-socket=true", "--cpu-manager-policy-options=distribute-cpus-across-cores=true"},
		{"--image-credential-provider-config=/etc/orch/credentials.yaml", "--image-credential-provider-bin-dir=/opt/bin"},
	}
	for _, args := range tests {
		if _, err := Parse(args, build); err != nil {
			t.Errorf("%q refused: %v", args, err)
		}
	}
}

func TestValidateReportsEveryMistake(t *testing.T) {
	_, err := Parse([]string{"--cgroup-driver=x", "--oom-score-adj=5000", "--hairpin-mode=y", "--container-log-max-files=0", "--event-qps=-3"}, build)
	if err == nil {
		t.Fatal("accepted")
	}
	for _, opt := range []string{"--cgroup-driver", "--oom-score-adj", "--hairpin-mode", "--container-log-max-files", "--event-qps"} {
		if !strings.Contains(err.Error(), opt) {
			t.Errorf("error lacks %s: %v", opt, err)
		}
	}
}
