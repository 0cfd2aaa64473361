package eviction

import (
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

// HardMemoryThreshold is the hard memory.available threshold in bytes out of capacity (0 when
// none), which node allocatable sets aside unless --experimental-allocatable-ignore-eviction.
func HardMemoryThreshold(c *v1beta1.OrchletConfiguration, capacity int64) (int64, error) {
	cfg, err := ConfigFrom(c)
	if err != nil {
		return 0, err
	}
	for _, t := range cfg.Thresholds {
		if t.Signal == SignalMemoryAvailable && t.Hard() {
			return t.Value.quantity(bytesQ(uint64(capacity))).Value(), nil
		}
	}
	return 0, nil
}
