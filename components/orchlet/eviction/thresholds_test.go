package eviction

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"orch.io/orch/components/apis/orchlet/v1beta1"
)

func thresholdStrings(ts []Threshold) string {
	var s []string
	for _, t := range ts {
		x := t.String()
		if t.MinReclaim != nil {
			x += " reclaim " + t.MinReclaim.String()
		}
		s = append(s, x)
	}
	return strings.Join(s, "; ")
}

func TestConfigFrom(t *testing.T) {
	for _, tc := range []struct {
		name string
		set  func(c *v1beta1.OrchletConfiguration)
		want string
	}{
		{"defaults when evictionHard is not given", func(c *v1beta1.OrchletConfiguration) {},
			"imagefs.available<15%; memory.available<100Mi; nodefs.available<10%; nodefs.inodesFree<5%; allocatableMemory.available<100Mi"},
		{"a partial setting does not re-add the defaults", func(c *v1beta1.OrchletConfiguration) { c.EvictionHard = map[string]string{"memory.available": "1Gi"} },
			"memory.available<1Gi; allocatableMemory.available<1Gi"},
		{"an empty setting means no hard threshold", func(c *v1beta1.OrchletConfiguration) { c.EvictionHard = map[string]string{} }, ""},
		{"no allocatable threshold without pods enforcement", func(c *v1beta1.OrchletConfiguration) {
			c.EvictionHard = map[string]string{"memory.available": "1Gi"}
			c.EnforceNodeAllocatable = []string{"none"}
		}, "memory.available<1Gi"},
		{"0% and 100% mean no threshold", func(c *v1beta1.OrchletConfiguration) {
			c.EvictionHard = map[string]string{"nodefs.available": "0%", "imagefs.available": "100%", "pid.available": "10%"}
		}, "pid.available<10%"},
		{"soft with grace and minimum reclaim", func(c *v1beta1.OrchletConfiguration) {
			c.EvictionHard = map[string]string{"memory.available": "100Mi"}
			c.EnforceNodeAllocatable = nil
			c.EvictionSoft = map[string]string{"memory.available": "300Mi"}
			c.EvictionSoftGracePeriod = map[string]string{"memory.available": "1m30s"}
			c.EvictionMinimumReclaim = map[string]string{"memory.available": "50Mi"}
		}, "memory.available<100Mi reclaim 50Mi; memory.available<300Mi for 1m30s reclaim 50Mi"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := v1beta1.NewDefault()
			tc.set(c)
			cfg, err := ConfigFrom(c)
			if err != nil {
				t.Fatal(err)
			}
			if got := thresholdStrings(cfg.Thresholds); got != tc.want {
				t.Errorf("thresholds = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestConfigFromRefuses(t *testing.T) {
	for _, tc := range []struct {
		name string
		set  func(c *v1beta1.OrchletConfiguration)
		want string
	}{
		{"soft without grace period", func(c *v1beta1.OrchletConfiguration) { c.EvictionSoft = map[string]string{"memory.available": "1Gi"} },
			"--eviction-soft (evictionSoft): grace period must be specified for the soft eviction threshold memory.available"},
		{"unknown signal", func(c *v1beta1.OrchletConfiguration) { c.EvictionHard = map[string]string{"disk.available": "1Gi"} },
			"--eviction-hard (evictionHard): unsupported eviction signal disk.available"},
		{"zero quantity", func(c *v1beta1.OrchletConfiguration) { c.EvictionHard = map[string]string{"memory.available": "0"} },
			"--eviction-hard (evictionHard): eviction threshold memory.available must be positive: 0"},
		{"percentage over 100", func(c *v1beta1.OrchletConfiguration) { c.EvictionSoft = map[string]string{"nodefs.available": "101%"} },
			"--eviction-soft (evictionSoft): eviction percentage threshold nodefs.available must be <= 100%: 101%"},
		{"negative grace", func(c *v1beta1.OrchletConfiguration) {
			c.EvictionSoft = map[string]string{"memory.available": "1Gi"}
			c.EvictionSoftGracePeriod = map[string]string{"memory.available": "-1s"}
		}, "--eviction-soft-grace-period (evictionSoftGracePeriod): invalid eviction grace period specified: -1s, must be a positive value"},
		{"negative minimum reclaim", func(c *v1beta1.OrchletConfiguration) {
			c.EvictionMinimumReclaim = map[string]string{"memory.available": "-1Mi"}
		},
			"--eviction-minimum-reclaim (evictionMinimumReclaim): negative eviction minimum reclaim specified for memory.available"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := v1beta1.NewDefault()
			tc.set(c)
			_, err := ConfigFrom(c)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

func TestConfigFromCarriesPeriods(t *testing.T) {
	c := v1beta1.NewDefault()
	c.EvictionPressureTransitionPeriod.Duration = 30 * time.Second
	c.EvictionMaxPodGracePeriod = 7
	c.LocalStorageCapacityIsolation = false
	cfg, err := ConfigFrom(c)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.PressureTransitionPeriod != 30*time.Second || cfg.MaxPodGracePeriodSeconds != 7 || cfg.LocalStorageCapacityIsolation {
		t.Fatalf("config = %+v", cfg)
	}
}

func TestHardReservation(t *testing.T) {
	c := v1beta1.NewDefault()
	c.EvictionHard = map[string]string{"memory.available": "10%", "nodefs.available": "1Gi", "imagefs.available": "15%"}
	capacity := corev1.ResourceList{corev1.ResourceMemory: *resource.NewQuantity(1000<<20, resource.BinarySI), corev1.ResourceEphemeralStorage: resource.MustParse("100Gi")}
	// As Kubernetes' GetThresholdQuantity computes it: capacity x the float32 fraction, truncated.
	got, err := HardReservation(c, capacity)
	tenth := float32(0.1)
	memory, storage := got[corev1.ResourceMemory], got[corev1.ResourceEphemeralStorage]
	if want := int64(float64(1000<<20) * float64(tenth)); err != nil || memory.Value() != want || storage.Value() != 1<<30 || len(got) != 2 {
		t.Fatalf("HardReservation = %v, %v; want memory %d and 1Gi of ephemeral storage only", got, err, want)
	}
	c.EvictionHard = map[string]string{}
	if got, _ := HardReservation(c, capacity); len(got) != 0 {
		t.Fatalf("with no threshold = %v, want none", got)
	}
}
