package script

import (
	"fmt"
	"os"
	"strings"

	"sigs.k8s.io/yaml"
)

// Script makes the pretence controllable. The zero Script is a healthy
// runtime with a reachable registry: every pull succeeds, containers run
// until stopped and use little. See README.md for the YAML form.
type Script struct {
	// Seed seeds the fault probabilities; 0 uses the runtime's seed.
	Seed       int64           `json:"seed,omitempty"`
	Node       NodeScript      `json:"node,omitzero"`
	Images     []ImageRule     `json:"images,omitempty"`
	Containers []ContainerRule `json:"containers,omitempty"`
	Exec       []ExecRule      `json:"exec,omitempty"`
	Faults     []FaultRule     `json:"faults,omitempty"`
	// Files and Ports are what streamed execs and port-forwarding reach.
	Files []FileRule `json:"files,omitempty"`
	Ports []PortRule `json:"ports,omitempty"`
}

// NodeScript holds node-wide settings.
type NodeScript struct {
	// RuntimeName and RuntimeVersion are what Version reports
	// (default "fakecri" and this package's Version).
	RuntimeName    string `json:"runtimeName,omitempty"`
	RuntimeVersion string `json:"runtimeVersion,omitempty"`
	// RuntimeReady and NetworkReady are the Status conditions (default ready).
	RuntimeReady *Condition `json:"runtimeReady,omitempty"`
	NetworkReady *Condition `json:"networkReady,omitempty"`
	// CgroupDriver is what RuntimeConfig answers: "systemd" (default) or "cgroupfs".
	CgroupDriver string `json:"cgroupDriver,omitempty"`
	// PodCIDR is where sandbox IPs come from until UpdateRuntimeConfig sets
	// one (default 10.88.0.0/16).
	PodCIDR string `json:"podCIDR,omitempty"`
	// SandboxImage is the pause image a sandbox uses; it appears (pinned)
	// among the images at the first RunPodSandbox (default registry.k8s.io/pause:3.10).
	SandboxImage string `json:"sandboxImage,omitempty"`
	// RuntimeHandlers are the handlers besides the default "" (default ["runc"]).
	RuntimeHandlers []string `json:"runtimeHandlers,omitempty"`
	// ForceRemove (default true) makes RemoveContainer and RemovePodSandbox
	// stop what is still running first, as the CRI text asks; false makes
	// them refuse, as older runtimes (and docker) do.
	ForceRemove *bool `json:"forceRemove,omitempty"`
	// ImageFs and RootFs describe the two filesystems; images always go on
	// ImageFs, container writable layers on the one ContainerFs names.
	ImageFs     *Filesystem `json:"imageFs,omitempty"`
	RootFs      *Filesystem `json:"rootFs,omitempty"`
	ContainerFs string      `json:"containerFs,omitempty"` // "imagefs" (default) or "rootfs"
	// PreloadImages are present from the start, as if pulled earlier.
	PreloadImages []string `json:"preloadImages,omitempty"`
	// DefaultUsage applies to containers whose rule sets no usage (or that no rule matches).
	DefaultUsage *Usage `json:"defaultUsage,omitempty"`
	// SandboxUsage is the sandbox's own (pause) usage.
	SandboxUsage *Usage `json:"sandboxUsage,omitempty"`
}

// Condition is a runtime condition.
type Condition struct {
	Status  bool   `json:"status"`
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
}

// Filesystem describes a node filesystem. Used and InodesUsed are what
// is used besides what fakecri accounts for (images, writable layers).
type Filesystem struct {
	Mountpoint string    `json:"mountpoint,omitempty"`
	Capacity   *Quantity `json:"capacity,omitempty"`
	Used       *Quantity `json:"used,omitempty"`
	Inodes     *Quantity `json:"inodes,omitempty"`
	InodesUsed *Quantity `json:"inodesUsed,omitempty"`
}

// ImageRule scripts pulls of the images Match names.
type ImageRule struct {
	// Match is a glob over the image name as given, its normalized form
	// (docker.io/library/nginx:latest) and its id.
	Match string `json:"match"`
	// Size of the image (default derived from the name: 2Mi to 200Mi).
	Size *Quantity `json:"size,omitempty"`
	// Digest pins the manifest digest (default derived from the name);
	// two names with one digest are one image with two tags.
	Digest string `json:"digest,omitempty"`
	// PullDuration is how long a pull takes on the clock.
	PullDuration Duration `json:"pullDuration,omitempty"`
	// PullError makes pulls fail (after PullDuration).
	PullError *PullError `json:"pullError,omitempty"`
	// Pinned marks the image pinned.
	Pinned bool `json:"pinned,omitempty"`
	// Auth, when set, is required of the pull.
	Auth *Auth `json:"auth,omitempty"`
	// UID or Username is the image's user.
	UID      *int64 `json:"uid,omitempty"`
	Username string `json:"username,omitempty"`
}

// PullError is a pull failure.
type PullError struct {
	// Code is a gRPC code name (default Unknown, as containerd answers).
	Code    string `json:"code,omitempty"`
	Message string `json:"message,omitempty"`
	// Times fails only the first Times pulls of each matching image (0: all).
	Times int `json:"times,omitempty"`
}

// Auth is a registry credential.
type Auth struct {
	Username string `json:"username"`
	Password string `json:"password"`
}

// ContainerMatch selects containers. Every field given must match; string
// fields are globs.
type ContainerMatch struct {
	// Image matches the image as the container was created with, as the user
	// specified it, its normalized tags, or its id.
	Image string `json:"image,omitempty"`
	// Name matches the container's metadata name.
	Name string `json:"name,omitempty"`
	// Pod and Namespace match the sandbox's metadata.
	Pod       string `json:"pod,omitempty"`
	Namespace string `json:"namespace,omitempty"`
	// PodLabels and Labels match the sandbox's and container's labels (values are globs).
	PodLabels map[string]string `json:"podLabels,omitempty"`
	Labels    map[string]string `json:"labels,omitempty"`
	// MinAttempt and MaxAttempt bound the container's attempt number.
	MinAttempt *uint32 `json:"minAttempt,omitempty"`
	MaxAttempt *uint32 `json:"maxAttempt,omitempty"`
}

// ContainerRule scripts the containers Match selects; the first matching
// rule applies, when the container starts.
type ContainerRule struct {
	Match ContainerMatch `json:"match"`
	// Exit ends the container on its own.
	Exit *ExitSpec `json:"exit,omitempty"`
	// StartError makes StartContainer fail with this message; the container
	// is then Exited with code 128 and reason StartError.
	StartError string `json:"startError,omitempty"`
	// OOMKillAfter OOM-kills the container this long after it starts
	// (exit 137, reason OOMKilled). Independently, a container whose memory
	// reaches its memory limit is OOM-killed then.
	OOMKillAfter *Duration `json:"oomKillAfter,omitempty"`
	// Stop says how the container answers SIGTERM.
	Stop *StopSpec `json:"stop,omitempty"`
	// Usage over time since start.
	Usage *Usage `json:"usage,omitempty"`
	// Logs are lines the container writes to its log file while it runs.
	Logs *LogSpec `json:"logs,omitempty"`
}

// ExitSpec is a container ending by itself.
type ExitSpec struct {
	After   Duration `json:"after"`
	Code    int32    `json:"code"`
	Reason  string   `json:"reason,omitempty"` // default Completed (code 0) or Error
	Message string   `json:"message,omitempty"`
}

// StopSpec is how a container reacts to SIGTERM: it exits Delay later with
// ExitCode, unless the grace period runs out first (then it is killed, 137).
type StopSpec struct {
	Delay    Duration `json:"delay,omitempty"`
	ExitCode int32    `json:"exitCode,omitempty"`
}

// Usage is resource use over time since the container started.
type Usage struct {
	Memory *Curve `json:"memory,omitempty"` // bytes (working set)
	CPU    *Curve `json:"cpu,omitempty"`    // cores
	Disk   *Curve `json:"disk,omitempty"`   // writable layer bytes
	Inodes *Curve `json:"inodes,omitempty"` // writable layer inodes
	PIDs   *Curve `json:"pids,omitempty"`   // processes
	// Volumes are bytes written under a mount, by the container path it is mounted at
	// ("/cache"): they land in the mount's host directory (an emptyDir, say), where a node agent
	// measuring it sees them (VolumeUsage), and stay there after the container exits.
	Volumes map[string]*Curve `json:"volumes,omitempty"`
}

// ExecRule answers ExecSync and streamed execs. The first matching rule applies; with none,
// ExecSync succeeds with no output (echo prints its arguments) and a streamed exec runs the
// small built-in command set (fakecri/shell).
type ExecRule struct {
	Match ContainerMatch `json:"match,omitempty"`
	// Command is a glob over the command joined by spaces.
	Command string `json:"command,omitempty"`
	// From and Until bound the rule to a window since the container started
	// (Until 0: no end).
	From  Duration `json:"from,omitempty"`
	Until Duration `json:"until,omitempty"`
	// The result.
	Stdout   string   `json:"stdout,omitempty"`
	Stderr   string   `json:"stderr,omitempty"`
	ExitCode int32    `json:"exitCode,omitempty"`
	Delay    Duration `json:"delay,omitempty"`
}

// FaultRule injects faults into calls. Every matching rule adds its
// latency; the first matching rule that fires an error or a hang decides.
type FaultRule struct {
	// Method is a glob over the RPC name (Status, PullImage, *).
	Method string `json:"method"`
	// Request is a glob over the request summary the call log shows.
	Request string `json:"request,omitempty"`
	// Latency is added before the call is served.
	Latency Duration `json:"latency,omitempty"`
	// Error fails the call with this status; Hang holds it until the
	// caller's deadline (or cancellation).
	Error *FaultError `json:"error,omitempty"`
	Hang  bool        `json:"hang,omitempty"`
	// AfterCalls lets this many matching calls through before firing.
	AfterCalls int `json:"afterCalls,omitempty"`
	// Times fires at most this many times (0: no limit).
	Times int `json:"times,omitempty"`
	// Probability fires with this chance (seeded); 0 means always.
	Probability float64 `json:"probability,omitempty"`
}

// FaultError is an injected error.
type FaultError struct {
	Code    string `json:"code"`
	Message string `json:"message,omitempty"`
}

// Parse reads a script from YAML or JSON, rejecting unknown fields.
func Parse(data []byte) (*Script, error) {
	s := &Script{}
	if len(strings.TrimSpace(string(data))) == 0 {
		return s, nil
	}
	if err := yaml.UnmarshalStrict(data, s); err != nil {
		return nil, fmt.Errorf("script: %w", err)
	}
	if _, err := Compile(s, 0); err != nil {
		return nil, err
	}
	return s, nil
}

// Load reads a script file.
func Load(path string) (*Script, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	s, err := Parse(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}

// YAML renders the script.
func (s *Script) YAML() ([]byte, error) { return yaml.Marshal(s) }

// LogSpec makes a running container write lines to its log file (the sandbox's log directory
// joined with the container's log path) in the CRI log format, "<RFC 3339 nano time> <stream> F
// <line>", as containerd does. Lines are written as of the clock whenever the runtime is called, so
// a reader that calls the runtime first sees every line due.
type LogSpec struct {
	// Lines are written in turn, one each Every since the container started, starting over after
	// the last; "{n}" in a line is replaced by the line's number, counted from 1.
	Lines []string `json:"lines"`
	// Every is the time between lines; required.
	Every Duration `json:"every"`
	// Stream is "stdout" (default) or "stderr".
	Stream string `json:"stream,omitempty"`
	// Count stops after this many lines; 0 writes while the container runs.
	Count int `json:"count,omitempty"`
}

// FileRule is a file a streamed exec's cat and ls find in the containers Match selects.
type FileRule struct {
	Match ContainerMatch `json:"match,omitempty"`
	// Path is absolute.
	Path    string `json:"path"`
	Content string `json:"content"`
}

// PortRule answers port-forwarding to Port of the pods Match selects (its pod, namespace and
// podLabels; a pod has no image or container name). Exactly one of Echo and HTTP is given.
type PortRule struct {
	Match ContainerMatch `json:"match,omitempty"`
	Port  int32          `json:"port"`
	// Echo sends back every byte it gets.
	Echo bool `json:"echo,omitempty"`
	// HTTP answers every HTTP request on the connection with the same response.
	HTTP *HTTPAnswer `json:"http,omitempty"`
}

// HTTPAnswer is a fixed HTTP response.
type HTTPAnswer struct {
	// Status defaults to 200.
	Status  int               `json:"status,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
	Body    string            `json:"body,omitempty"`
}
