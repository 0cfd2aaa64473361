package options

import (
	"bytes"
	"errors"
	"fmt"
	"maps"

	"github.com/spf13/pflag"
	apiversion "k8s.io/apimachinery/pkg/version"
	cliflag "k8s.io/component-base/cli/flag"

	"orch.io/orch/components/apis/orchlet/v1beta1"
	"orch.io/orch/components/featuregates"
)

// Parse turns the command line (without the program name) into validated options. build is the
// version the binary reports. A help or version request returns an Action other than ActionRun and
// skips loading and validation. Every error names the option (or file) and the rule it broke; a
// configuration with several mistakes reports them all.
func Parse(args []string, build apiversion.Info) (*Options, error) {
	o, sets, fs, err := parseOnto(args, build, v1beta1.NewDefault())
	if err != nil {
		return nil, err
	}
	if sets.help {
		return &Options{Action: ActionHelp, Output: Usage(), Version: o.Version}, nil
	}
	if sets.version.printing != "" {
		return &Options{Action: ActionVersion, Output: versionText(o.Version, sets.version.printing), Version: o.Version}, nil
	}
	fileSet := map[string]bool{}
	if o.Flags.ConfigFile != "" || o.Flags.ConfigDir != "" {
		cfg := v1beta1.NewDefault()
		if fileSet, err = loadFiles(cfg, o.Flags.ConfigFile, o.Flags.ConfigDir); err != nil {
			return nil, err
		}
		// The command line is parsed again over the loaded files so that what it sets wins.
		if o, sets, fs, err = parseOnto(args, build, cfg); err != nil {
			return nil, err
		}
	}
	fs.Visit(func(fl *pflag.Flag) {
		if note, ok := sets.deprecated[fl.Name]; ok {
			o.Warnings = append(o.Warnings, fmt.Sprintf("Flag --%s has been deprecated, %s", fl.Name, note))
		}
	})
	applyZeroMeans(o.Config)
	// SPEC.md: the CPU manager's reconcile period, when not supplied, is the node status update frequency.
	if !fs.Changed("cpu-manager-reconcile-period") && !fileSet["cpuManagerReconcilePeriod"] {
		o.Config.CPUManagerReconcilePeriod = o.Config.NodeStatusUpdateFrequency
	}
	// Unknown gates are refused, and the rest are still checked with the gates that are known.
	var gateErr error
	if err := featuregates.Validate(o.Config.FeatureGates); err != nil {
		gateErr = fmt.Errorf("--feature-gates (featureGates): %w", err)
	}
	known := featuregates.Known()
	valid := maps.Clone(o.Config.FeatureGates)
	maps.DeleteFunc(valid, func(name string, _ bool) bool { _, ok := known[name]; return !ok })
	if o.Gates, err = featuregates.New(valid); err != nil {
		return nil, err
	}
	if err := errors.Join(gateErr, Validate(o)); err != nil {
		return nil, err
	}
	return o, nil
}

// parseOnto parses args with every option bound to fresh flags and to cfg.
func parseOnto(args []string, build apiversion.Info, cfg *v1beta1.OrchletConfiguration) (*Options, *flagSets, *pflag.FlagSet, error) {
	o := &Options{Flags: defaultFlags(), Config: cfg, Version: build}
	sets := newFlagSets(&o.Flags, o.Config, &versionValue{build: &o.Version})
	fs := sets.all()
	fs.SetOutput(&bytes.Buffer{}) // errors are returned, not printed by pflag
	fs.Usage = func() {}
	if err := fs.Parse(args); err != nil {
		return nil, nil, nil, err
	}
	if fs.NArg() > 0 {
		return nil, nil, nil, fmt.Errorf("unexpected argument %q: the orchlet takes options only", fs.Arg(0))
	}
	return o, sets, fs, nil
}

// applyZeroMeans gives the rate limits whose 0 stands for a value that value, as SPEC.md states.
func applyZeroMeans(c *v1beta1.OrchletConfiguration) {
	zeroMeans := []struct {
		field *int32
		value int32
	}{
		{&c.EventRecordQPS, 5},
		{&c.EventBurst, 10},
		{&c.KubeAPIQPS, 50},
		{&c.KubeAPIBurst, 100},
	}
	for _, z := range zeroMeans {
		if *z.field == 0 {
			*z.field = z.value
		}
	}
}

// Usage is the help text: every option, grouped, with its default and deprecation note, and every
// feature gate with its stage and default.
func Usage() string {
	f := defaultFlags()
	sets := newFlagSets(&f, v1beta1.NewDefault(), &versionValue{build: &apiversion.Info{}})
	var b bytes.Buffer
	b.WriteString("The orchlet is the node agent: it runs the pods of its node from the API server, a manifest\ndirectory and a manifest URL, through a CRI container runtime.\n\nUsage:\n  orchlet [flags]\n")
	cliflag.PrintSections(&b, sets.named, 0)
	return b.String()
}
