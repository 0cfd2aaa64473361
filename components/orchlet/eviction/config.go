package eviction

import (
	corev1 "k8s.io/api/core/v1"

	"orch.io/orch/components/apis/orchlet/v1beta1"
)

// ConfigFrom reads the eviction settings of the orchlet configuration: --eviction-hard (Kubernetes'
// defaults when it is not given at all), --eviction-soft with --eviction-soft-grace-period,
// --eviction-minimum-reclaim, --eviction-pressure-transition-period,
// --eviction-max-pod-grace-period, --local-storage-capacity-isolation and
// --kernel-memcg-notification.
func ConfigFrom(c *v1beta1.OrchletConfiguration) (Config, error) {
	hard := c.EvictionHard
	if hard == nil {
		hard = DefaultHard
	}
	ts, err := ParseThresholdConfig(c.EnforceNodeAllocatable, hard, c.EvictionSoft, c.EvictionSoftGracePeriod, c.EvictionMinimumReclaim)
	if err != nil {
		return Config{}, err
	}
	return Config{
		Thresholds:                    ts,
		PressureTransitionPeriod:      c.EvictionPressureTransitionPeriod.Duration,
		MaxPodGracePeriodSeconds:      int64(c.EvictionMaxPodGracePeriod),
		LocalStorageCapacityIsolation: c.LocalStorageCapacityIsolation,
		KernelMemcgNotification:       c.KernelMemcgNotification,
	}, nil
}

// HardReservation is the kubelet's hardEvictionReservation: what the hard memory.available and
// nodefs.available thresholds set aside of the node's memory and ephemeral storage capacity,
// which node allocatable holds back unless --experimental-allocatable-ignore-eviction.
func HardReservation(c *v1beta1.OrchletConfiguration, capacity corev1.ResourceList) (corev1.ResourceList, error) {
	cfg, err := ConfigFrom(c)
	if err != nil {
		return nil, err
	}
	out := corev1.ResourceList{}
	for _, t := range cfg.Thresholds {
		if !t.Hard() {
			continue
		}
		var name corev1.ResourceName
		switch t.Signal {
		case SignalMemoryAvailable:
			name = corev1.ResourceMemory
		case SignalNodeFsAvailable:
			name = corev1.ResourceEphemeralStorage
		default:
			continue
		}
		c := capacity[name]
		out[name] = *t.Value.quantity(&c)
	}
	return out, nil
}
