package options

import (
	"k8s.io/component-base/featuregate"
	logsapi "k8s.io/component-base/logs/api/v1"

	"orch.io/orch/components/featuregates"
)

// ApplyLogging sets up klog from the effective logging configuration: verbosity, vmodule, flush
// frequency and, with LoggingAlphaOptions, split text streams. component-base's logs package does the
// work; it reads its gates from a gate set mirroring ours. It can be applied once per process.
func (o *Options) ApplyLogging() error {
	fg := featuregate.NewFeatureGate()
	if err := logsapi.AddFeatureGates(fg); err != nil {
		return err
	}
	if err := fg.SetFromMap(map[string]bool{
		featuregates.LoggingAlphaOptions: o.Gates.Enabled(featuregates.LoggingAlphaOptions),
		featuregates.LoggingBetaOptions:  o.Gates.Enabled(featuregates.LoggingBetaOptions),
		featuregates.ContextualLogging:   o.Gates.Enabled(featuregates.ContextualLogging),
	}); err != nil {
		return err
	}
	return logsapi.ValidateAndApplyAsField(&o.Config.Logging, fg, nil)
}
