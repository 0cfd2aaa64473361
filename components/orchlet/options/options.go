package options

import (
	"time"

	apiversion "k8s.io/apimachinery/pkg/version"

	"orch.io/orch/components/apis/orchlet/v1beta1"
	"orch.io/orch/components/featuregates"
)

// Flags are the options that live only on the command line: SPEC.md does not mark them as settable
// through `--config`.
type Flags struct {
	BootstrapKubeconfig                   string
	CertDir                               string
	CloudProvider                         string
	ConfigFile                            string
	ConfigDir                             string
	ExitOnLockContention                  bool
	ExperimentalAllocatableIgnoreEviction bool
	ExperimentalMounterPath               string
	FailCgroupV1                          bool
	HostnameOverride                      string
	ImageCredentialProviderBinDir         string
	ImageCredentialProviderConfig         string
	Orchconfig                            string
	LockFile                              string
	MaximumDeadContainers                 int32
	MaximumDeadContainersPerContainer     int32
	MinimumContainerTTLDuration           time.Duration
	NodeIP                                string
	NodeLabels                            map[string]string
	PodInfraContainerImage                string
	ProviderID                            string
	RootDir                               string
	RuntimeCgroups                        string
	SeccompDefault                        bool
}

// Action says what the command line asked for.
type Action int

const (
	// ActionRun starts the agent.
	ActionRun Action = iota
	// ActionHelp prints Output (the help text) and exits 0.
	ActionHelp
	// ActionVersion prints Output (the version) and exits 0.
	ActionVersion
)

// Options is the outcome of Parse.
type Options struct {
	Action Action
	// Output is the text to print for ActionHelp and ActionVersion.
	Output string
	Flags  Flags
	// Config is the effective configuration: defaults, file, drop-ins and command line merged, with the
	// 0-means rules applied.
	Config *v1beta1.OrchletConfiguration
	// Gates are the effective feature gates.
	Gates *featuregates.Gates
	// Version is the build version, with a `--version=vX.Y.Z` override applied.
	Version apiversion.Info
	// Warnings are one line per deprecated option that was used, to be printed before starting.
	Warnings []string
}

func defaultFlags() Flags {
	return Flags{
		CertDir:                           "/var/lib/orchlet/pki",
		MaximumDeadContainers:             -1,
		MaximumDeadContainersPerContainer: 1,
		RootDir:                           "/var/lib/orchlet",
	}
}
