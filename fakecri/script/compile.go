package script

import (
	"errors"
	"fmt"
	"math/rand"
	"net/netip"
	"path"
	"regexp"
	"strings"

	"google.golang.org/grpc/codes"
)

// The script's compiled form: checked, defaulted and ready to match, the form the runtime reads.

const (
	defaultRuntimeName  = "fakecri"
	defaultSandboxImage = "registry.k8s.io/pause:3.10"
	defaultPodCIDR      = "10.88.0.0/16"
	gi                  = 1 << 30
	mi                  = 1 << 20
	ki                  = 1 << 10
)

// FSConfig is a filesystem as the script sets it up: its size and what is used besides what the
// runtime accounts for.
type FSConfig struct {
	Mountpoint string
	Capacity   uint64
	Used       uint64
	Inodes     uint64
	InodesUsed uint64
}

// Compiled is a Script checked and made ready to match, every default filled in. The rules'
// counters (pulls, fault firings) start at zero with each compilation and are the runtime's to
// keep, under its own locks.
type Compiled struct {
	Source         *Script
	RuntimeName    string
	RuntimeVersion string // as the script gives it: empty leaves the runtime's own
	RuntimeReady   Condition
	NetworkReady   Condition
	Cgroupfs       bool
	PodCIDR        netip.Prefix
	SandboxImage   string
	// Handlers are the runtime handlers, the default "" first.
	Handlers         []string
	ForceRemove      bool
	ImageFs          FSConfig
	RootFs           FSConfig
	ContainersOnRoot bool
	Preload          []string
	DefaultUsage     *UsageCurves
	SandboxUsage     *UsageCurves

	Images     []*CompiledImageRule
	Containers []*CompiledContainerRule
	Exec       []*CompiledExecRule
	// Faults holds, for each of Methods by its index, the fault rules whose method matches it; nil
	// when the script has none (the runtime's every call reads it: an empty table was a cache line
	// of its own to miss at every call, and a kilobyte a node).
	Faults [][]*CompiledFaultRule
	Files  []*CompiledFileRule
	Ports  []*CompiledPortRule
}

// CompiledImageRule is an ImageRule ready to match.
type CompiledImageRule struct {
	ImageRule
	Pattern  Glob
	PullCode codes.Code
	// Pulls counts pull attempts per image name (the runtime's to count, under its lock).
	Pulls map[string]int
}

// Matcher is a ContainerMatch compiled: empty globs and nil maps match anything.
type Matcher struct {
	Image, Name, Pod, Namespace Glob
	PodLabels, Labels           map[string]Glob
	MinAttempt, MaxAttempt      *uint32
}

// UsageCurves is a Usage compiled; a nil curve reads 0.
type UsageCurves struct {
	Memory, CPU, Disk, Inodes, PIDs *Piecewise
	Volumes                         map[string]*Piecewise
}

// CompiledContainerRule is a ContainerRule ready to match.
type CompiledContainerRule struct {
	ContainerRule
	Matcher Matcher
	Curves  *UsageCurves
}

// CompiledExecRule is an ExecRule ready to match.
type CompiledExecRule struct {
	ExecRule
	Matcher Matcher
	Cmd     Glob
}

// CompiledFaultRule is a FaultRule ready to match, with its seeded chance and its counters (the
// runtime's to count, under its lock).
type CompiledFaultRule struct {
	FaultRule
	Index       int // in the script's faults
	RequestGlob Glob
	Code        codes.Code
	Seen, Fired int
	Rand        *rand.Rand
}

// CompiledFileRule is a FileRule ready to match, its path cleaned.
type CompiledFileRule struct {
	FileRule
	Matcher Matcher
}

// CompiledPortRule is a PortRule ready to match.
type CompiledPortRule struct {
	PortRule
	Matcher Matcher
}

func compileMatcher(m ContainerMatch) Matcher {
	c := Matcher{
		Image: CompileGlob(m.Image), Name: CompileGlob(m.Name),
		Pod: CompileGlob(m.Pod), Namespace: CompileGlob(m.Namespace),
		MinAttempt: m.MinAttempt, MaxAttempt: m.MaxAttempt,
	}
	if len(m.PodLabels) > 0 {
		c.PodLabels = map[string]Glob{}
		for k, v := range m.PodLabels {
			c.PodLabels[k] = CompileGlob(v)
		}
	}
	if len(m.Labels) > 0 {
		c.Labels = map[string]Glob{}
		for k, v := range m.Labels {
			c.Labels[k] = CompileGlob(v)
		}
	}
	return c
}

func compileUsage(u *Usage, field string) (*UsageCurves, error) {
	if u == nil {
		return nil, nil
	}
	var err error
	c := &UsageCurves{}
	if c.Memory, err = compileCurve(u.Memory, field+".memory"); err != nil {
		return nil, err
	}
	if c.CPU, err = compileCurve(u.CPU, field+".cpu"); err != nil {
		return nil, err
	}
	if c.Disk, err = compileCurve(u.Disk, field+".disk"); err != nil {
		return nil, err
	}
	if c.Inodes, err = compileCurve(u.Inodes, field+".inodes"); err != nil {
		return nil, err
	}
	if c.PIDs, err = compileCurve(u.PIDs, field+".pids"); err != nil {
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
		if c.Volumes == nil {
			c.Volumes = map[string]*Piecewise{}
		}
		c.Volumes[path] = cc
	}
	return c, nil
}

// Fill returns u with the curves it lacks taken from d.
func (u *UsageCurves) Fill(d *UsageCurves) *UsageCurves {
	if u == nil {
		return d
	}
	if d == nil {
		return u
	}
	out := *u
	if out.Memory == nil {
		out.Memory = d.Memory
	}
	if out.CPU == nil {
		out.CPU = d.CPU
	}
	if out.Disk == nil {
		out.Disk = d.Disk
	}
	if out.Inodes == nil {
		out.Inodes = d.Inodes
	}
	if out.PIDs == nil {
		out.PIDs = d.PIDs
	}
	if out.Volumes == nil {
		out.Volumes = d.Volumes
	}
	return &out
}

func constCurve(v float64) *Piecewise { return &Piecewise{pts: []curvePoint{{v: v}}} }

// builtinDefaultUsage is "modest": 8Mi of memory, 5 millicores, 32Ki and
// 12 inodes written, one process.
var builtinDefaultUsage = &UsageCurves{
	Memory: constCurve(8 * mi), CPU: constCurve(0.005), Disk: constCurve(32 * ki),
	Inodes: constCurve(12), PIDs: constCurve(1),
}

var builtinSandboxUsage = &UsageCurves{
	Memory: constCurve(300 * ki), CPU: constCurve(0.0001), Disk: constCurve(0),
	Inodes: constCurve(0), PIDs: constCurve(1),
}

func fsFrom(f *Filesystem, def FSConfig, field string) (FSConfig, error) {
	out := def
	if f == nil {
		return out, nil
	}
	if f.Mountpoint != "" {
		out.Mountpoint = f.Mountpoint
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
		out.Used = 0
	}
	if f.Inodes != nil && f.InodesUsed == nil {
		out.InodesUsed = 0
	}
	if err := errors.Join(get(f.Capacity, &out.Capacity, "capacity"), get(f.Used, &out.Used, "used"),
		get(f.Inodes, &out.Inodes, "inodes"), get(f.InodesUsed, &out.InodesUsed, "inodesUsed")); err != nil {
		return out, err
	}
	if out.Capacity == 0 || out.Inodes == 0 {
		return out, fmt.Errorf("%s: capacity and inodes must be positive", field)
	}
	if out.Used > out.Capacity || out.InodesUsed > out.Inodes {
		return out, fmt.Errorf("%s: used exceeds capacity", field)
	}
	return out, nil
}

var hex64 = regexp.MustCompile(`^[0-9a-f]{64}$`)

// ValidDigest tells a digest of the form sha256:<64 hex>.
func ValidDigest(d string) bool {
	return strings.HasPrefix(d, "sha256:") && hex64.MatchString(d[7:])
}

// Compile checks s (nil: the healthy default) and makes it ready to match; seed seeds the fault
// probabilities unless the script gives its own.
func Compile(s *Script, seed int64) (*Compiled, error) {
	if s == nil {
		s = &Script{}
	}
	n := s.Node
	c := &Compiled{
		Source:         s,
		RuntimeName:    or(n.RuntimeName, defaultRuntimeName),
		RuntimeVersion: n.RuntimeVersion,
		RuntimeReady:   Condition{Status: true},
		NetworkReady:   Condition{Status: true},
		SandboxImage:   or(n.SandboxImage, defaultSandboxImage),
		ForceRemove:    n.ForceRemove == nil || *n.ForceRemove,
		Preload:        n.PreloadImages,
	}
	if n.RuntimeReady != nil {
		c.RuntimeReady = *n.RuntimeReady
	}
	if n.NetworkReady != nil {
		c.NetworkReady = *n.NetworkReady
	}
	switch strings.ToLower(n.CgroupDriver) {
	case "", "systemd":
	case "cgroupfs":
		c.Cgroupfs = true
	default:
		return nil, fmt.Errorf("node.cgroupDriver: %q is neither systemd nor cgroupfs", n.CgroupDriver)
	}
	p, err := netip.ParsePrefix(or(n.PodCIDR, defaultPodCIDR))
	if err != nil || !p.Addr().Is4() || p.Bits() > 30 {
		return nil, fmt.Errorf("node.podCIDR: %q is not an IPv4 CIDR of /30 or wider", n.PodCIDR)
	}
	c.PodCIDR = p.Masked()
	c.Handlers = []string{""}
	hs := n.RuntimeHandlers
	if hs == nil {
		hs = []string{"runc"}
	}
	for _, h := range hs {
		if h != "" {
			c.Handlers = append(c.Handlers, h)
		}
	}
	if c.ImageFs, err = fsFrom(n.ImageFs, FSConfig{
		Mountpoint: "/var/lib/containerd/io.containerd.snapshotter.v1.overlayfs",
		Capacity:   100 * gi, Inodes: 6553600,
	}, "node.imageFs"); err != nil {
		return nil, err
	}
	if c.RootFs, err = fsFrom(n.RootFs, FSConfig{
		Mountpoint: "/", Capacity: 100 * gi, Used: 8 * gi, Inodes: 6553600, InodesUsed: 180000,
	}, "node.rootFs"); err != nil {
		return nil, err
	}
	switch strings.ToLower(n.ContainerFs) {
	case "", "imagefs":
	case "rootfs":
		c.ContainersOnRoot = true
	default:
		return nil, fmt.Errorf("node.containerFs: %q is neither imagefs nor rootfs", n.ContainerFs)
	}
	du, err := compileUsage(n.DefaultUsage, "node.defaultUsage")
	if err != nil {
		return nil, err
	}
	c.DefaultUsage = du.Fill(builtinDefaultUsage)
	su, err := compileUsage(n.SandboxUsage, "node.sandboxUsage")
	if err != nil {
		return nil, err
	}
	c.SandboxUsage = su.Fill(builtinSandboxUsage)

	for i, r := range s.Images {
		if r.Match == "" {
			return nil, fmt.Errorf("images[%d]: match is required", i)
		}
		rc := &CompiledImageRule{ImageRule: r, Pattern: CompileGlob(r.Match), Pulls: map[string]int{}, PullCode: codes.Unknown}
		if r.Size != nil && r.Size.v <= 0 {
			return nil, fmt.Errorf("images[%d].size: must be positive", i)
		}
		if r.Digest != "" && !ValidDigest(r.Digest) {
			return nil, fmt.Errorf("images[%d].digest: %q is not sha256:<64 hex>", i, r.Digest)
		}
		if r.PullDuration < 0 {
			return nil, fmt.Errorf("images[%d].pullDuration: negative", i)
		}
		if r.PullError != nil && r.PullError.Code != "" {
			if rc.PullCode, err = ParseCode(r.PullError.Code); err != nil || rc.PullCode == codes.OK {
				return nil, fmt.Errorf("images[%d].pullError.code: %q is not an error code", i, r.PullError.Code)
			}
		}
		c.Images = append(c.Images, rc)
	}
	for i, r := range s.Containers {
		rc := &CompiledContainerRule{ContainerRule: r, Matcher: compileMatcher(r.Match)}
		if rc.Curves, err = compileUsage(r.Usage, fmt.Sprintf("containers[%d].usage", i)); err != nil {
			return nil, err
		}
		if err := compileLogs(r.Logs, fmt.Sprintf("containers[%d].logs", i)); err != nil {
			return nil, err
		}
		if r.Exit != nil && r.Exit.After < 0 || r.OOMKillAfter != nil && *r.OOMKillAfter < 0 ||
			r.Stop != nil && r.Stop.Delay < 0 {
			return nil, fmt.Errorf("containers[%d]: negative duration", i)
		}
		c.Containers = append(c.Containers, rc)
	}
	if err := compileStreams(s, c); err != nil {
		return nil, err
	}
	for i, r := range s.Exec {
		if r.Delay < 0 || r.From < 0 || r.Until < 0 {
			return nil, fmt.Errorf("exec[%d]: negative duration", i)
		}
		c.Exec = append(c.Exec, &CompiledExecRule{ExecRule: r, Matcher: compileMatcher(r.Match), Cmd: CompileGlob(r.Command)})
	}
	if s.Seed != 0 {
		seed = s.Seed
	}
	if len(s.Faults) > 0 {
		c.Faults = make([][]*CompiledFaultRule, len(Methods))
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
		fc := &CompiledFaultRule{FaultRule: r, Index: i, RequestGlob: CompileGlob(r.Request),
			Rand: rand.New(rand.NewSource(seed + int64(i)*7919))}
		if r.Error != nil {
			if fc.Code, err = ParseCode(r.Error.Code); err != nil || fc.Code == codes.OK {
				return nil, fmt.Errorf("faults[%d].error.code: %q is not an error code", i, r.Error.Code)
			}
		}
		mg := CompileGlob(r.Method)
		matched := false
		for m, name := range Methods {
			if mg.Match(name) {
				c.Faults[m] = append(c.Faults[m], fc)
				matched = true
			}
		}
		if !matched {
			return nil, fmt.Errorf("faults[%d].method: %q matches no CRI method", i, r.Method)
		}
	}
	return c, nil
}

func compileLogs(l *LogSpec, field string) error {
	switch {
	case l == nil:
		return nil
	case len(l.Lines) == 0:
		return fmt.Errorf("%s.lines: at least one line is required", field)
	case l.Every <= 0:
		return fmt.Errorf("%s.every: must be positive", field)
	case l.Stream != "" && l.Stream != "stdout" && l.Stream != "stderr":
		return fmt.Errorf("%s.stream: %q is neither stdout nor stderr", field, l.Stream)
	case l.Count < 0:
		return fmt.Errorf("%s.count: negative", field)
	}
	return nil
}

func compileStreams(s *Script, c *Compiled) error {
	for i, f := range s.Files {
		if !path.IsAbs(f.Path) {
			return fmt.Errorf("files[%d].path: %q is not absolute", i, f.Path)
		}
		f.Path = path.Clean(f.Path)
		c.Files = append(c.Files, &CompiledFileRule{FileRule: f, Matcher: compileMatcher(f.Match)})
	}
	for i, p := range s.Ports {
		m := p.Match
		switch {
		case m.Image != "" || m.Name != "" || len(m.Labels) > 0 || m.MinAttempt != nil || m.MaxAttempt != nil:
			return fmt.Errorf("ports[%d].match: a pod is matched by pod, namespace and podLabels only", i)
		case p.Port < 1 || p.Port > 65535:
			return fmt.Errorf("ports[%d].port: %d is not a port number", i, p.Port)
		case p.Echo == (p.HTTP != nil):
			return fmt.Errorf("ports[%d]: give exactly one of echo and http", i)
		case p.HTTP != nil && p.HTTP.Status != 0 && (p.HTTP.Status < 100 || p.HTTP.Status > 999):
			return fmt.Errorf("ports[%d].http.status: %d is not an HTTP status", i, p.HTTP.Status)
		}
		c.Ports = append(c.Ports, &CompiledPortRule{PortRule: p, Matcher: compileMatcher(m)})
	}
	return nil
}

// ImageRule is the first image rule matching one of names.
func (c *Compiled) ImageRule(names ...string) *CompiledImageRule {
	for _, r := range c.Images {
		for _, n := range names {
			if n != "" && r.Pattern.Match(n) {
				return r
			}
		}
	}
	return nil
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
