package options

import (
	"errors"
	"fmt"
	"maps"
	"net"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"
	cliflag "k8s.io/component-base/cli/flag"
	"k8s.io/utils/cpuset"

	orchletapis "orch.io/orch/components/apis/orchlet"
	"orch.io/orch/components/apis/orchlet/v1beta1"
	"orch.io/orch/components/featuregates"
	"orch.io/orch/components/orchlet/cpumanager"
	"orch.io/orch/components/orchlet/eviction"
)

// errs collects refusals, each naming the option and, for options the file can set, the field.
type errs []error

func (e *errs) add(option, field, format string, args ...any) {
	name := "--" + option
	if field != "" {
		name += " (" + field + ")"
	}
	*e = append(*e, fmt.Errorf("%s: %s", name, fmt.Sprintf(format, args...)))
}

func (e *errs) oneOf(option, field, value string, allowed ...string) {
	if !slices.Contains(allowed, value) {
		e.add(option, field, "unsupported value %q: must be one of %s", value, quoteAll(allowed))
	}
}

func (e *errs) inRange(option, field string, value, lo, hi int64) {
	if value < lo || value > hi {
		e.add(option, field, "%d is out of range [%d, %d]", value, lo, hi)
	}
}

func (e *errs) positive(option, field string, d time.Duration) {
	if d <= 0 {
		e.add(option, field, "must be greater than 0, got %v", d)
	}
}

func quoteAll(s []string) string {
	q := make([]string, len(s))
	for i, v := range s {
		q[i] = fmt.Sprintf("%q", v)
	}
	return strings.Join(q, ", ")
}

// ExternalCloudProvider is the one --cloud-provider value besides none: a cloud controller outside
// the agent initializes the Node.
const ExternalCloudProvider = "external"

// Validate checks every constraint SPEC.md states on the effective options and reports each broken one.
func Validate(o *Options) error {
	var e errs
	c, g := o.Config, o.Gates
	validateValueSets(&e, c)
	validateRanges(&e, c)
	validateAllocatable(&e, c)
	validateReserved(&e, c)
	validateEviction(&e, c)
	validateGated(&e, c, g)
	validateGC(&e, o)
	validateAddresses(&e, c, &o.Flags)
	validateNodeLabels(&e, o.Flags.NodeLabels)
	validateTaints(&e, c.RegisterWithTaints)
	if c.RunOnce && c.EnableServer {
		e.add("runonce", "runOnce", "is exclusive with --enable-server (enableServer); set --enable-server=false")
	}
	if p := o.Flags.CloudProvider; p != "" && p != ExternalCloudProvider {
		// As the kubelet refuses it: the in-tree providers are gone.
		e.add("cloud-provider", "", "cloud provider %q was specified, but built-in cloud providers are disabled. Please set --cloud-provider=external and migrate to an external cloud provider", p)
	}
	switch f := o.Flags; {
	case f.ImageCredentialProviderConfig != "" && f.ImageCredentialProviderBinDir == "":
		e.add("image-credential-provider-config", "", "needs --image-credential-provider-bin-dir, where its plugins are")
	case f.ImageCredentialProviderConfig == "" && f.ImageCredentialProviderBinDir != "":
		e.add("image-credential-provider-bin-dir", "", "needs --image-credential-provider-config, which names its plugins")
	}
	if o.Flags.ExitOnLockContention && o.Flags.LockFile == "" {
		e.add("exit-on-lock-contention", "", "needs --lock-file")
	}
	return errors.Join(e...)
}

func validateValueSets(e *errs, c *v1beta1.OrchletConfiguration) {
	e.oneOf("cgroup-driver", "cgroupDriver", c.CgroupDriver, "cgroupfs", "systemd")
	e.oneOf("hairpin-mode", "hairpinMode", c.HairpinMode, "promiscuous-bridge", "hairpin-veth", "none")
	e.oneOf("topology-manager-policy", "topologyManagerPolicy", c.TopologyManagerPolicy, "none", "best-effort", "restricted", "single-numa-node")
	e.oneOf("topology-manager-scope", "topologyManagerScope", c.TopologyManagerScope, "container", "pod")
	e.oneOf("cpu-manager-policy", "cpuManagerPolicy", c.CPUManagerPolicy, "none", "static")
	if c.ReservedSystemCPUs != "" {
		if _, err := cpuset.Parse(c.ReservedSystemCPUs); err != nil {
			e.add("reserved-cpus", "reservedSystemCPUs", "%q is not a CPU list: %v", c.ReservedSystemCPUs, err)
		}
	}
	e.oneOf("memory-manager-policy", "memoryManagerPolicy", c.MemoryManagerPolicy, "None", "Static")
	e.oneOf("authorization-mode", "authorization.mode", c.Authorization.Mode, "AlwaysAllow", "Webhook")
	e.oneOf("logging-format", "logging.format", c.Logging.Format, "text")
	e.oneOf("kube-api-content-type", "contentType", c.ContentType, "application/vnd.orch.protobuf", "application/json")
	if c.TLSMinVersion != "" {
		e.oneOf("tls-min-version", "tlsMinVersion", c.TLSMinVersion, cliflag.TLSPossibleVersions()...)
	}
	known := cliflag.TLSCipherPossibleValues()
	for _, name := range c.TLSCipherSuites {
		if !slices.Contains(known, name) {
			e.add("tls-cipher-suites", "tlsCipherSuites", "unknown cipher suite %q", name)
		}
	}
}

func validateRanges(e *errs, c *v1beta1.OrchletConfiguration) {
	e.inRange("oom-score-adj", "oomScoreAdj", int64(c.OOMScoreAdj), -1000, 1000)
	e.inRange("image-gc-high-threshold", "imageGCHighThresholdPercent", int64(c.ImageGCHighThresholdPercent), 0, 100)
	e.inRange("image-gc-low-threshold", "imageGCLowThresholdPercent", int64(c.ImageGCLowThresholdPercent), 0, 100)
	if c.ImageGCLowThresholdPercent >= c.ImageGCHighThresholdPercent {
		e.add("image-gc-low-threshold", "imageGCLowThresholdPercent", "%d must be less than --image-gc-high-threshold (imageGCHighThresholdPercent) %d",
			c.ImageGCLowThresholdPercent, c.ImageGCHighThresholdPercent)
	}
	if c.ContainerLogMaxFiles < 2 {
		e.add("container-log-max-files", "containerLogMaxFiles", "must be >= 2, got %d", c.ContainerLogMaxFiles)
	}
	if c.ContainerLogMaxWorkers < 1 {
		e.add("container-log-max-workers", "containerLogMaxWorkers", "must be >= 1, got %d", c.ContainerLogMaxWorkers)
	}
	if c.ContainerLogMonitorInterval.Duration < 3*time.Second {
		e.add("container-log-monitor-interval", "containerLogMonitorInterval", "must be a duration of at least 3s, got %v", c.ContainerLogMonitorInterval.Duration)
	}
	if q, err := resource.ParseQuantity(c.ContainerLogMaxSize); err != nil {
		e.add("container-log-max-size", "containerLogMaxSize", "%q is not a quantity: %v", c.ContainerLogMaxSize, err)
	} else if q.Sign() <= 0 {
		e.add("container-log-max-size", "containerLogMaxSize", "must be greater than 0, got %s", c.ContainerLogMaxSize)
	} else if _, ok := q.AsInt64(); !ok {
		e.add("container-log-max-size", "containerLogMaxSize", "%q is not a whole number of bytes", c.ContainerLogMaxSize)
	}
	nonNegative := []struct {
		option, field string
		value         int64
	}{
		{"event-qps", "eventRecordQPS", int64(c.EventRecordQPS)},
		{"event-burst", "eventBurst", int64(c.EventBurst)},
		{"kube-api-qps", "kubeAPIQPS", int64(c.KubeAPIQPS)},
		{"kube-api-burst", "kubeAPIBurst", int64(c.KubeAPIBurst)},
		{"registry-qps", "registryPullQPS", int64(c.RegistryPullQPS)},
		{"registry-burst", "registryBurst", int64(c.RegistryBurst)},
		{"max-pods", "maxPods", int64(c.MaxPods)},
		{"pods-per-core", "podsPerCore", int64(c.PodsPerCore)},
		{"max-open-files", "maxOpenFiles", c.MaxOpenFiles},
	}
	for _, n := range nonNegative {
		if n.value < 0 {
			e.add(n.option, n.field, "must be >= 0, got %d", n.value)
		}
	}
	if c.NodeStatusMaxImages < -1 {
		e.add("node-status-max-images", "nodeStatusMaxImages", "must be >= -1, got %d", c.NodeStatusMaxImages)
	}
	if c.PodPidsLimit < -1 {
		e.add("pod-max-pids", "podPidsLimit", "must be >= -1, got %d", c.PodPidsLimit)
	}
	e.inRange("port", "port", int64(c.Port), 1, 65535)
	e.inRange("read-only-port", "readOnlyPort", int64(c.ReadOnlyPort), 0, 65535)
	e.inRange("healthz-port", "healthzPort", int64(c.HealthzPort), 0, 65535)
	if p := c.CPUCFSQuotaPeriod.Duration; p < time.Millisecond || p > time.Second {
		e.add("cpu-cfs-quota-period", "cpuCFSQuotaPeriod", "%v is out of range [1ms, 1s]", p)
	}
	e.positive("file-check-frequency", "fileCheckFrequency", c.FileCheckFrequency.Duration)
	e.positive("http-check-frequency", "httpCheckFrequency", c.HTTPCheckFrequency.Duration)
	e.positive("sync-frequency", "syncFrequency", c.SyncFrequency.Duration)
	e.positive("node-status-update-frequency", "nodeStatusUpdateFrequency", c.NodeStatusUpdateFrequency.Duration)
	e.positive("log-flush-frequency", "logging.flushFrequency", c.Logging.FlushFrequency.Duration.Duration)
	if c.StreamingConnectionIdleTimeout.Duration < 0 {
		e.add("streaming-connection-idle-timeout", "streamingConnectionIdleTimeout", "must be >= 0, got %v", c.StreamingConnectionIdleTimeout.Duration)
	}
}

// allocatableNeeds maps each reserved enforcement level to the cgroup option it needs. SPEC.md writes
// the product's level with the neutral word; Kubernetes' spelling is accepted too.
var allocatableNeeds = map[string]struct{ option, field string }{
	"system-reserved":              {"system-reserved-cgroup", "systemReservedCgroup"},
	"system-reserved-compressible": {"system-reserved-cgroup", "systemReservedCgroup"},
	"orch-reserved":                {"kube-reserved-cgroup", "kubeReservedCgroup"},
	"orch-reserved-compressible":   {"kube-reserved-cgroup", "kubeReservedCgroup"},
	"kube-reserved":                {"kube-reserved-cgroup", "kubeReservedCgroup"},
	"kube-reserved-compressible":   {"kube-reserved-cgroup", "kubeReservedCgroup"},
}

func validateAllocatable(e *errs, c *v1beta1.OrchletConfiguration) {
	const opt, field = "enforce-node-allocatable", "enforceNodeAllocatable"
	levels := c.EnforceNodeAllocatable
	for _, level := range levels {
		if level == "none" || level == "pods" {
			continue
		}
		need, ok := allocatableNeeds[level]
		if !ok {
			allowed := append([]string{"none", "pods"}, slices.Sorted(maps.Keys(allocatableNeeds))...)
			e.add(opt, field, "unsupported level %q: must be one of %s", level, quoteAll(allowed))
			continue
		}
		cgroup := c.SystemReservedCgroup
		if need.field == "kubeReservedCgroup" {
			cgroup = c.KubeReservedCgroup
		}
		if cgroup == "" {
			e.add(opt, field, "level %q needs --%s (%s)", level, need.option, need.field)
		}
	}
	if slices.Contains(levels, "none") && len(levels) > 1 {
		e.add(opt, field, "\"none\" must stand alone, got %s", quoteAll(levels))
	}
}

// reservable are the resources --kube-reserved and --system-reserved accept.
var reservable = []string{"cpu", "memory", "pid", "ephemeral-storage"}

func validateReserved(e *errs, c *v1beta1.OrchletConfiguration) {
	reserved := []struct {
		option, field string
		m             map[string]string
	}{{"kube-reserved", "kubeReserved", c.KubeReserved}, {"system-reserved", "systemReserved", c.SystemReserved}}
	for _, r := range reserved {
		for _, k := range slices.Sorted(maps.Keys(r.m)) {
			if !slices.Contains(reservable, k) {
				e.add(r.option, r.field, "unsupported resource %q: must be one of %s", k, quoteAll(reservable))
				continue
			}
			if q, err := resource.ParseQuantity(r.m[k]); err != nil || q.Sign() < 0 {
				e.add(r.option, r.field, "%s=%q is not a non-negative quantity", k, r.m[k])
			}
		}
	}
	validateReservedMemory(e, c)
}

// validateReservedMemory checks the types of --reserved-memory and that, per type, the NUMA total
// equals kube-reserved + system-reserved (+ the hard eviction threshold for memory), with the
// kubelet's memory manager's words; a percentage threshold waits for the machine's capacity (the
// memory manager checks again at start with node allocatable's own reservation).
func validateReservedMemory(e *errs, c *v1beta1.OrchletConfiguration) {
	const opt, field = "reserved-memory", "reservedMemory"
	if len(c.ReservedMemory) == 0 {
		return
	}
	totals := map[corev1.ResourceName]*resource.Quantity{}
	for _, r := range c.ReservedMemory {
		for name, q := range r.Limits {
			if name != corev1.ResourceMemory && !strings.HasPrefix(string(name), corev1.ResourceHugePagesPrefix) {
				e.add(opt, field, "NUMA node %d: unsupported memory type %q: must be memory or hugepages-<size>", r.NumaNode, name)
				continue
			}
			if totals[name] == nil {
				totals[name] = resource.NewQuantity(0, resource.BinarySI)
			}
			totals[name].Add(q)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(totals)) {
		want := resource.NewQuantity(0, resource.BinarySI)
		for _, m := range []map[string]string{c.KubeReserved, c.SystemReserved} {
			if q, err := resource.ParseQuantity(m[string(name)]); err == nil {
				want.Add(q)
			}
		}
		if name == corev1.ResourceMemory {
			// Kubernetes' hard thresholds hold when --eviction-hard is not given at all.
			hard := c.EvictionHard
			if len(hard) == 0 {
				hard = eviction.DefaultHard
			}
			if strings.HasSuffix(hard["memory.available"], "%") {
				continue // a share of the capacity: the memory manager checks it at start
			}
			if q, err := resource.ParseQuantity(hard["memory.available"]); err == nil {
				want.Add(q)
			}
		}
		if totals[name].Cmp(*want) != 0 {
			e.add(opt, field, "the total amount %q of type %q is not equal to the value %q determined by Node Allocatable feature (--kube-reserved + --system-reserved%s)",
				totals[name].String(), name, want.String(), map[bool]string{true: " + the memory.available hard eviction threshold", false: ""}[name == corev1.ResourceMemory])
		}
	}
}

// validateEviction refuses, each on its own, what Kubernetes' eviction.ParseThresholdConfig refuses:
// an unknown signal, a threshold that is not a positive quantity or a percentage in [0%, 100%], a
// minimum reclaim that is not a non-negative quantity or a positive percentage, a grace period that
// is not a non-negative duration, and a soft threshold without a grace period.
func validateEviction(e *errs, c *v1beta1.OrchletConfiguration) {
	for _, t := range []struct {
		option, field string
		m             map[string]string
	}{{"eviction-hard", "evictionHard", c.EvictionHard}, {"eviction-soft", "evictionSoft", c.EvictionSoft}} {
		for _, signal := range slices.Sorted(maps.Keys(t.m)) {
			if _, err := eviction.ParseThresholdStatement(eviction.Signal(signal), t.m[signal]); err != nil {
				e.add(t.option, t.field, "%v", err)
			}
		}
	}
	for _, signal := range slices.Sorted(maps.Keys(c.EvictionMinimumReclaim)) {
		if _, err := eviction.ParseMinimumReclaim(eviction.Signal(signal), c.EvictionMinimumReclaim[signal]); err != nil {
			e.add("eviction-minimum-reclaim", "evictionMinimumReclaim", "%v", err)
		}
	}
	for _, signal := range slices.Sorted(maps.Keys(c.EvictionSoftGracePeriod)) {
		if !slices.Contains(eviction.Signals, eviction.Signal(signal)) {
			e.add("eviction-soft-grace-period", "evictionSoftGracePeriod", "unsupported eviction signal %q", signal)
			continue
		}
		if d, err := time.ParseDuration(c.EvictionSoftGracePeriod[signal]); err != nil || d < 0 {
			e.add("eviction-soft-grace-period", "evictionSoftGracePeriod", "%s: %q is not a non-negative duration", signal, c.EvictionSoftGracePeriod[signal])
		}
	}
	for _, signal := range slices.Sorted(maps.Keys(c.EvictionSoft)) {
		if _, ok := c.EvictionSoftGracePeriod[signal]; !ok && slices.Contains(eviction.Signals, eviction.Signal(signal)) {
			e.add("eviction-soft", "evictionSoft", "grace period must be specified for the soft eviction threshold %s in --eviction-soft-grace-period (evictionSoftGracePeriod)", signal)
		}
	}
}

func validateGated(e *errs, c *v1beta1.OrchletConfiguration, g *featuregates.Gates) {
	if len(c.QOSReserved) > 0 && !g.Enabled(featuregates.QOSReserved) {
		e.add("qos-reserved", "qosReserved", "needs feature gate %s", featuregates.QOSReserved)
	}
	for _, k := range slices.Sorted(maps.Keys(c.QOSReserved)) {
		if k != "memory" {
			e.add("qos-reserved", "qosReserved", "unsupported resource %q: only \"memory\"", k)
			continue
		}
		var pct int
		if _, err := fmt.Sscanf(c.QOSReserved[k], "%d%%", &pct); err != nil || !strings.HasSuffix(c.QOSReserved[k], "%") || pct < 0 || pct > 100 {
			e.add("qos-reserved", "qosReserved", "memory=%q must be a percentage in [0%%, 100%%]", c.QOSReserved[k])
		}
	}
	if c.Logging.Options.Text.SplitStream && !g.Enabled(featuregates.LoggingAlphaOptions) {
		e.add("log-text-split-stream", "logging.options.text.splitStream", "needs feature gate %s", featuregates.LoggingAlphaOptions)
	}
	if c.Logging.Options.Text.InfoBufferSize.Value() != 0 && !g.Enabled(featuregates.LoggingAlphaOptions) {
		e.add("log-text-info-buffer-size", "logging.options.text.infoBufferSize", "needs feature gate %s", featuregates.LoggingAlphaOptions)
	}
	if c.ServerTLSBootstrap && !g.Enabled(featuregates.RotateOrchletServerCertificate) {
		e.add("rotate-server-certificates", "serverTLSBootstrap", "needs feature gate %s", featuregates.RotateOrchletServerCertificate)
	}
	// The kubelet refuses these when its CPU manager starts; what depends on the machine
	// (align-by-socket's) is refused when this agent's starts.
	if err := cpumanager.CheckPolicyOptions(c.CPUManagerPolicy, c.CPUManagerPolicyOptions, g.Enabled); err != nil {
		e.add("cpu-manager-policy-options", "cpuManagerPolicyOptions", "%v", err)
	}
}

func validateAddresses(e *errs, c *v1beta1.OrchletConfiguration, f *Flags) {
	if net.ParseIP(c.Address) == nil {
		e.add("address", "address", "%q is not an IP address", c.Address)
	}
	if net.ParseIP(c.HealthzBindAddress) == nil {
		e.add("healthz-bind-address", "healthzBindAddress", "%q is not an IP address", c.HealthzBindAddress)
	}
	for _, ip := range c.ClusterDNS {
		if net.ParseIP(ip) == nil {
			e.add("cluster-dns", "clusterDNS", "%q is not an IP address", ip)
		}
	}
	if c.PodCIDR != "" {
		if _, _, err := net.ParseCIDR(c.PodCIDR); err != nil {
			e.add("pod-cidr", "podCIDR", "%q is not a CIDR", c.PodCIDR)
		}
	}
	if f.NodeIP != "" {
		ips := strings.Split(f.NodeIP, ",")
		if len(ips) > 2 {
			e.add("node-ip", "", "at most two addresses (one per family), got %d", len(ips))
		}
		for _, ip := range ips {
			if net.ParseIP(strings.TrimSpace(ip)) == nil {
				e.add("node-ip", "", "%q is not an IP address", ip)
			}
		}
	}
}

func allowedNodeLabels() []string { return orchletapis.Labels() }

func validateNodeLabels(e *errs, labels map[string]string) {
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		for _, msg := range validation.IsQualifiedName(k) {
			e.add("node-labels", "", "key %q: %s", k, msg)
		}
		for _, msg := range validation.IsValidLabelValue(labels[k]) {
			e.add("node-labels", "", "value %q of %q: %s", labels[k], k, msg)
		}
		if orchletapis.IsOrchLabel(k) && !orchletapis.IsOrchletLabel(k) {
			e.add("node-labels", "", "key %q is in the orch.io namespace: it must begin with %s or be one of %s",
				k, strings.Join(orchletapis.LabelNamespaces(), " or "), strings.Join(orchletapis.Labels(), ", "))
		}
	}
}

var taintEffects = []string{string(corev1.TaintEffectNoSchedule), string(corev1.TaintEffectPreferNoSchedule), string(corev1.TaintEffectNoExecute)}

func validateTaints(e *errs, taints []corev1.Taint) {
	for _, t := range taints {
		for _, msg := range validation.IsQualifiedName(t.Key) {
			e.add("register-with-taints", "registerWithTaints", "key %q: %s", t.Key, msg)
		}
		for _, msg := range validation.IsValidLabelValue(t.Value) {
			e.add("register-with-taints", "registerWithTaints", "value %q of %q: %s", t.Value, t.Key, msg)
		}
		if !slices.Contains(taintEffects, string(t.Effect)) {
			e.add("register-with-taints", "registerWithTaints", "taint %q: unsupported effect %q: must be one of %s", t.Key, t.Effect, quoteAll(taintEffects))
		}
	}
}
