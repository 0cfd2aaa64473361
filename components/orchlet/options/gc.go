package options

import (
	"fmt"

	"orch.io/orch/components/featuregates"
)

// validateGC refuses what the garbage collectors cannot honour: the kubelet's ValidateKubeletConfiguration
// rules on imageMaximumGCAge (a file-only field), and NewContainerGC's on the minimum container age.
func validateGC(e *errs, o *Options) {
	c := o.Config
	maxAge, minAge := c.ImageMaximumGCAge.Duration, c.ImageMinimumGCAge.Duration
	if maxAge != 0 && !o.Gates.Enabled(featuregates.ImageMaximumGCAge) {
		*e = append(*e, fmt.Errorf("imageMaximumGCAge: needs feature gate %s", featuregates.ImageMaximumGCAge))
	}
	if maxAge < 0 {
		*e = append(*e, fmt.Errorf("imageMaximumGCAge: %v must not be negative", maxAge))
	}
	if maxAge > 0 && maxAge <= minAge {
		*e = append(*e, fmt.Errorf("imageMaximumGCAge: %v must be greater than --minimum-image-ttl-duration (imageMinimumGCAge) %v", maxAge, minAge))
	}
	if minAge < 0 {
		e.add("minimum-image-ttl-duration", "imageMinimumGCAge", "must not be negative, got %v", minAge)
	}
	if d := o.Flags.MinimumContainerTTLDuration; d < 0 {
		e.add("minimum-container-ttl-duration", "", "invalid minimum garbage collection age: %v", d)
	}
}
