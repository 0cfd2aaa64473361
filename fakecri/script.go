package fakecri

import (
	"errors"
	"fmt"
	"math/rand"
	"net/netip"
	"os"
	"strings"

	"google.golang.org/grpc/codes"
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
	// Files and Ports are what streamed execs and port-forwarding reach (see streams.go).
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
// small built-in command set (see streams.go).
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

// ParseScript reads a script from YAML or JSON, rejecting unknown fields.
func ParseScript(data []byte) (*Script, error) {
	s := &Script{}
	if len(strings.TrimSpace(string(data))) == 0 {
		return s, nil
	}
	if err := yaml.UnmarshalStrict(data, s); err != nil {
		return nil, fmt.Errorf("script: %w", err)
	}
	if _, err := compileScript(s, 0); err != nil {
		return nil, err
	}
	return s, nil
}

// LoadScript reads a script file.
func LoadScript(path string) (*Script, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	s, err := ParseScript(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}

// YAML renders the script.
func (s *Script) YAML() ([]byte, error) { return yaml.Marshal(s) }

// ---- compiled form ----

const (
	defaultRuntimeName  = "fakecri"
	defaultSandboxImage = "registry.k8s.io/pause:3.10"
	defaultPodCIDR      = "10.88.0.0/16"
	gi                  = 1 << 30
	mi                  = 1 << 20
	ki                  = 1 << 10
)

type fsConfig struct {
	mountpoint string
	capacity   uint64
	used       uint64
	inodes     uint64
	inodesUsed uint64
}

type compiled struct {
	src              *Script
	runtimeName      string
	runtimeVersion   string
	runtimeReady     Condition
	networkReady     Condition
	cgroupfs         bool
	podCIDR          netip.Prefix
	sandboxImage     string
	handlers         []string
	forceRemove      bool
	imageFs          fsConfig
	rootFs           fsConfig
	containersOnRoot bool
	preload          []string
	defaultUsage     *usageCurves
	sandboxUsage     *usageCurves

	images     []*imageRuleC
	containers []*containerRuleC
	exec       []*execRuleC
	faults     [numMethods][]*faultRuleC
	files      []*fileRuleC
	ports      []*portRuleC
}

type imageRuleC struct {
	ImageRule
	g        glob
	pullCode codes.Code
	// pulls counts pull attempts per image name (guarded by Runtime.mu).
	pulls map[string]int
}

type matcherC struct {
	image, name, pod, namespace glob
	podLabels, labels           map[string]glob
	minAttempt, maxAttempt      *uint32
}

type usageCurves struct {
	memory, cpu, disk, inodes, pids *compiledCurve
	volumes                         map[string]*compiledCurve
}

type containerRuleC struct {
	ContainerRule
	m     matcherC
	usage *usageCurves
}

type execRuleC struct {
	ExecRule
	m   matcherC
	cmd glob
}

type faultRuleC struct {
	FaultRule
	index   int
	request glob
	code    codes.Code
	// guarded by Runtime.faultMu
	seen  int
	fired int
	rng   *rand.Rand
}

func compileMatcher(m ContainerMatch) matcherC {
	c := matcherC{
		image: compileGlob(m.Image), name: compileGlob(m.Name),
		pod: compileGlob(m.Pod), namespace: compileGlob(m.Namespace),
		minAttempt: m.MinAttempt, maxAttempt: m.MaxAttempt,
	}
	if len(m.PodLabels) > 0 {
		c.podLabels = map[string]glob{}
		for k, v := range m.PodLabels {
			c.podLabels[k] = compileGlob(v)
		}
	}
	if len(m.Labels) > 0 {
		c.labels = map[string]glob{}
		for k, v := range m.Labels {
			c.labels[k] = compileGlob(v)
		}
	}
	return c
}

func compileUsage(u *Usage, field string) (*usageCurves, error) {
	if u == nil {
		return nil, nil
	}
	var err error
	c := &usageCurves{}
	if c.memory, err = compileCurve(u.Memory, field+".memory"); err != nil {
		return nil, err
	}
	if c.cpu, err = compileCurve(u.CPU, field+".cpu"); err != nil {
		return nil, err
	}
	if c.disk, err = compileCurve(u.Disk, field+".disk"); err != nil {
		return nil, err
	}
	if c.inodes, err = compileCurve(u.Inodes, field+".inodes"); err != nil {
		return nil, err
	}
	if c.pids, err = compileCurve(u.PIDs, field+".pids"); err != nil {
		return nil, err
	}
	for path, curve := range u.Volumes {
		if !strings.HasPrefix(path, "/") {
			return nil, fmt.Errorf("%s.volumes: %q is not an absolute container path", field, path)
		}
		cc, err := compileCurve(curve, field+".volumes["+path+"]")
		if err != nil {
			return nil, err
		}
		if c.volumes == nil {
			c.volumes = map[string]*compiledCurve{}
		}
		c.volumes[path] = cc
	}
	return c, nil
}

// fill returns u with the curves it lacks taken from d.
func (u *usageCurves) fill(d *usageCurves) *usageCurves {
	if u == nil {
		return d
	}
	if d == nil {
		return u
	}
	out := *u
	if out.memory == nil {
		out.memory = d.memory
	}
	if out.cpu == nil {
		out.cpu = d.cpu
	}
	if out.disk == nil {
		out.disk = d.disk
	}
	if out.inodes == nil {
		out.inodes = d.inodes
	}
	if out.pids == nil {
		out.pids = d.pids
	}
	if out.volumes == nil {
		out.volumes = d.volumes
	}
	return &out
}

func constCurve(v float64) *compiledCurve { return &compiledCurve{pts: []curvePoint{{v: v}}} }

// builtinDefaultUsage is "modest": 8Mi of memory, 5 millicores, 32Ki and
// 12 inodes written, one process.
var builtinDefaultUsage = &usageCurves{
	memory: constCurve(8 * mi), cpu: constCurve(0.005), disk: constCurve(32 * ki),
	inodes: constCurve(12), pids: constCurve(1),
}

var builtinSandboxUsage = &usageCurves{
	memory: constCurve(300 * ki), cpu: constCurve(0.0001), disk: constCurve(0),
	inodes: constCurve(0), pids: constCurve(1),
}

func fsFrom(f *Filesystem, def fsConfig, field string) (fsConfig, error) {
	out := def
	if f == nil {
		return out, nil
	}
	if f.Mountpoint != "" {
		out.mountpoint = f.Mountpoint
	}
	get := func(q *Quantity, dst *uint64, name string) error {
		if q == nil {
			return nil
		}
		if q.v < 0 {
			return fmt.Errorf("%s.%s: negative", field, name)
		}
		*dst = uint64(q.v)
		return nil
	}
	// a capacity given without its use starts empty
	if f.Capacity != nil && f.Used == nil {
		out.used = 0
	}
	if f.Inodes != nil && f.InodesUsed == nil {
		out.inodesUsed = 0
	}
	if err := errors.Join(get(f.Capacity, &out.capacity, "capacity"), get(f.Used, &out.used, "used"),
		get(f.Inodes, &out.inodes, "inodes"), get(f.InodesUsed, &out.inodesUsed, "inodesUsed")); err != nil {
		return out, err
	}
	if out.capacity == 0 || out.inodes == 0 {
		return out, fmt.Errorf("%s: capacity and inodes must be positive", field)
	}
	if out.used > out.capacity || out.inodesUsed > out.inodes {
		return out, fmt.Errorf("%s: used exceeds capacity", field)
	}
	return out, nil
}

func compileScript(s *Script, seed int64) (*compiled, error) {
	if s == nil {
		s = &Script{}
	}
	n := s.Node
	c := &compiled{
		src:            s,
		runtimeName:    or(n.RuntimeName, defaultRuntimeName),
		runtimeVersion: or(n.RuntimeVersion, Version),
		runtimeReady:   Condition{Status: true},
		networkReady:   Condition{Status: true},
		sandboxImage:   or(n.SandboxImage, defaultSandboxImage),
		forceRemove:    n.ForceRemove == nil || *n.ForceRemove,
		preload:        n.PreloadImages,
	}
	if n.RuntimeReady != nil {
		c.runtimeReady = *n.RuntimeReady
	}
	if n.NetworkReady != nil {
		c.networkReady = *n.NetworkReady
	}
	switch strings.ToLower(n.CgroupDriver) {
	case "", "systemd":
	case "cgroupfs":
		c.cgroupfs = true
	default:
		return nil, fmt.Errorf("node.cgroupDriver: %q is neither systemd nor cgroupfs", n.CgroupDriver)
	}
	p, err := netip.ParsePrefix(or(n.PodCIDR, defaultPodCIDR))
	if err != nil || !p.Addr().Is4() || p.Bits() > 30 {
		return nil, fmt.Errorf("node.podCIDR: %q is not an IPv4 CIDR of /30 or wider", n.PodCIDR)
	}
	c.podCIDR = p.Masked()
	c.handlers = []string{""}
	hs := n.RuntimeHandlers
	if hs == nil {
		hs = []string{"runc"}
	}
	for _, h := range hs {
		if h != "" {
			c.handlers = append(c.handlers, h)
		}
	}
	if c.imageFs, err = fsFrom(n.ImageFs, fsConfig{
		mountpoint: "/var/lib/containerd/io.containerd.snapshotter.v1.overlayfs",
		capacity:   100 * gi, inodes: 6553600,
	}, "node.imageFs"); err != nil {
		return nil, err
	}
	if c.rootFs, err = fsFrom(n.RootFs, fsConfig{
		mountpoint: "/", capacity: 100 * gi, used: 8 * gi, inodes: 6553600, inodesUsed: 180000,
	}, "node.rootFs"); err != nil {
		return nil, err
	}
	switch strings.ToLower(n.ContainerFs) {
	case "", "imagefs":
	case "rootfs":
		c.containersOnRoot = true
	default:
		return nil, fmt.Errorf("node.containerFs: %q is neither imagefs nor rootfs", n.ContainerFs)
	}
	du, err := compileUsage(n.DefaultUsage, "node.defaultUsage")
	if err != nil {
		return nil, err
	}
	c.defaultUsage = du.fill(builtinDefaultUsage)
	su, err := compileUsage(n.SandboxUsage, "node.sandboxUsage")
	if err != nil {
		return nil, err
	}
	c.sandboxUsage = su.fill(builtinSandboxUsage)

	for i, r := range s.Images {
		if r.Match == "" {
			return nil, fmt.Errorf("images[%d]: match is required", i)
		}
		rc := &imageRuleC{ImageRule: r, g: compileGlob(r.Match), pulls: map[string]int{}, pullCode: codes.Unknown}
		if r.Size != nil && r.Size.v <= 0 {
			return nil, fmt.Errorf("images[%d].size: must be positive", i)
		}
		if r.Digest != "" && !validDigest(r.Digest) {
			return nil, fmt.Errorf("images[%d].digest: %q is not sha256:<64 hex>", i, r.Digest)
		}
		if r.PullDuration < 0 {
			return nil, fmt.Errorf("images[%d].pullDuration: negative", i)
		}
		if r.PullError != nil && r.PullError.Code != "" {
			if rc.pullCode, err = ParseCode(r.PullError.Code); err != nil || rc.pullCode == codes.OK {
				return nil, fmt.Errorf("images[%d].pullError.code: %q is not an error code", i, r.PullError.Code)
			}
		}
		c.images = append(c.images, rc)
	}
	for i, r := range s.Containers {
		rc := &containerRuleC{ContainerRule: r, m: compileMatcher(r.Match)}
		if rc.usage, err = compileUsage(r.Usage, fmt.Sprintf("containers[%d].usage", i)); err != nil {
			return nil, err
		}
		if err := compileLogs(r.Logs, fmt.Sprintf("containers[%d].logs", i)); err != nil {
			return nil, err
		}
		if r.Exit != nil && r.Exit.After < 0 || r.OOMKillAfter != nil && *r.OOMKillAfter < 0 ||
			r.Stop != nil && r.Stop.Delay < 0 {
			return nil, fmt.Errorf("containers[%d]: negative duration", i)
		}
		c.containers = append(c.containers, rc)
	}
	if err := compileStreams(s, c); err != nil {
		return nil, err
	}
	for i, r := range s.Exec {
		if r.Delay < 0 || r.From < 0 || r.Until < 0 {
			return nil, fmt.Errorf("exec[%d]: negative duration", i)
		}
		c.exec = append(c.exec, &execRuleC{ExecRule: r, m: compileMatcher(r.Match), cmd: compileGlob(r.Command)})
	}
	if s.Seed != 0 {
		seed = s.Seed
	}
	for i, r := range s.Faults {
		if r.Method == "" {
			return nil, fmt.Errorf("faults[%d]: method is required (use \"*\" for all)", i)
		}
		if r.Probability < 0 || r.Probability > 1 {
			return nil, fmt.Errorf("faults[%d].probability: must be within [0, 1]", i)
		}
		if r.Latency < 0 || r.AfterCalls < 0 || r.Times < 0 {
			return nil, fmt.Errorf("faults[%d]: negative latency, afterCalls or times", i)
		}
		if r.Error != nil && r.Hang {
			return nil, fmt.Errorf("faults[%d]: give error or hang, not both", i)
		}
		fc := &faultRuleC{FaultRule: r, index: i, request: compileGlob(r.Request),
			rng: rand.New(rand.NewSource(seed + int64(i)*7919))}
		if r.Error != nil {
			if fc.code, err = ParseCode(r.Error.Code); err != nil || fc.code == codes.OK {
				return nil, fmt.Errorf("faults[%d].error.code: %q is not an error code", i, r.Error.Code)
			}
		}
		mg := compileGlob(r.Method)
		matched := false
		for m := method(0); m < numMethods; m++ {
			if mg.match(methodNames[m]) {
				c.faults[m] = append(c.faults[m], fc)
				matched = true
			}
		}
		if !matched {
			return nil, fmt.Errorf("faults[%d].method: %q matches no CRI method", i, r.Method)
		}
	}
	return c, nil
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
