package record

import (
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	"orch.io/orch/fakecri/script"
	"sigs.k8s.io/yaml"
)

// Script is the fakecri script that plays the recording back: the runtime's name, version and
// cgroup driver; the images present at the start (preloaded) and each image's size and pull time;
// and, per pod, container and attempt, the usage curves fitted from the samples and the exit the
// container made by itself (one the agent asked for by StopContainer is not scripted: a replay's
// agent asks again). The attempts after the last one recorded behave as the last one did.
func (r *Recorder) Script() *script.Script {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := &script.Script{Node: script.NodeScript{
		RuntimeName:    r.version.GetRuntimeName(),
		RuntimeVersion: r.version.GetRuntimeVersion(),
		CgroupDriver:   r.cgroup,
		PreloadImages:  append([]string(nil), r.preloaded...),
	}}
	for _, name := range r.imageOrder {
		im := r.images[name]
		rule := script.ImageRule{Match: name}
		if im.size > 0 {
			q := bytesQ(float64(im.size))
			rule.Size = &q
		}
		if len(im.pulls) > 0 {
			var sum time.Duration
			for _, d := range im.pulls {
				sum += d
			}
			rule.PullDuration = script.Duration((sum / time.Duration(len(im.pulls))).Round(time.Millisecond))
		}
		s.Images = append(s.Images, rule)
	}

	type key struct{ ns, pod, name string }
	attempts := map[key][]*recContainer{}
	var keys []key
	for _, c := range r.containers {
		if sb := r.sandboxes[c.sandbox]; sb == nil || c.meta == nil || c.started.IsZero() {
			continue // created before the recording, or never started
		}
		sb := r.sandboxes[c.sandbox]
		k := key{sb.meta.GetNamespace(), sb.meta.GetName(), c.meta.GetName()}
		if attempts[k] == nil {
			keys = append(keys, k)
		}
		attempts[k] = append(attempts[k], c)
	}
	sort.Slice(keys, func(i, j int) bool {
		a, b := keys[i], keys[j]
		return a.ns+"/"+a.pod+"/"+a.name < b.ns+"/"+b.pod+"/"+b.name
	})
	for _, k := range keys {
		cs := attempts[k]
		sort.Slice(cs, func(i, j int) bool { return cs[i].meta.GetAttempt() < cs[j].meta.GetAttempt() })
		for i, c := range cs {
			a := c.meta.GetAttempt()
			m := script.ContainerMatch{Namespace: k.ns, Pod: k.pod, Name: k.name, MinAttempt: &a}
			if i < len(cs)-1 {
				m.MaxAttempt = &a
			}
			rule := script.ContainerRule{Match: m, Usage: c.usage()}
			if c.finished.IsZero() {
				r.readLogs(c) // still running: its lines so far
			}
			rule.Logs = c.log.spec(c.started)
			if !c.finished.IsZero() && !c.stopAsked {
				after := script.Duration(c.finished.Sub(c.started).Round(time.Millisecond))
				if c.reason == "OOMKilled" {
					rule.OOMKillAfter = &after
				} else {
					rule.Exit = &script.ExitSpec{After: after, Code: c.exitCode}
					if c.reason != "" && c.reason != "Completed" && c.reason != "Error" {
						rule.Exit.Reason = c.reason
					}
				}
			}
			s.Containers = append(s.Containers, rule)
		}
	}
	return s
}

// logTail is a container's log file read so far (the CRI's format: "<time> <stream> <F|P> <text>"):
// each read takes the complete lines added since the last one, and a partial line (P) is joined
// to the next of its stream.
type logTail struct {
	offset  int64
	lines   map[string][]string
	lastAt  map[string]time.Time
	partial map[string]string
}

func (t *logTail) read(path string) {
	f, err := os.Open(path)
	if err != nil {
		return // not written yet, or removed: what was read stays
	}
	defer f.Close()
	if _, err := f.Seek(t.offset, io.SeekStart); err != nil {
		return
	}
	data, err := io.ReadAll(f)
	if err != nil {
		return
	}
	end := strings.LastIndexByte(string(data), '\n')
	if end < 0 {
		return
	}
	t.offset += int64(end + 1)
	if t.lines == nil {
		t.lines, t.lastAt, t.partial = map[string][]string{}, map[string]time.Time{}, map[string]string{}
	}
	for _, l := range strings.Split(string(data[:end]), "\n") {
		f := strings.SplitN(l, " ", 4)
		if len(f) < 3 {
			continue
		}
		at, err := time.Parse(time.RFC3339Nano, f[0])
		if err != nil {
			continue
		}
		text, stream := "", f[1]
		if len(f) == 4 {
			text = f[3]
		}
		if f[2] == "P" {
			t.partial[stream] += text
			continue
		}
		t.lines[stream] = append(t.lines[stream], t.partial[stream]+text)
		t.partial[stream] = ""
		t.lastAt[stream] = at
	}
}

// spec plays the lines back at their mean pace since the container's start, once each. The lines
// of the stream that wrote more are kept (a script's log has one stream). Nil with no line.
func (t *logTail) spec(started time.Time) *script.LogSpec {
	stream := "stdout"
	if len(t.lines["stderr"]) > len(t.lines["stdout"]) {
		stream = "stderr"
	}
	kept := t.lines[stream]
	if len(kept) == 0 {
		return nil
	}
	every := t.lastAt[stream].Sub(started) / time.Duration(len(kept))
	if every < time.Millisecond {
		every = time.Millisecond // the script needs a positive pace
	}
	spec := &script.LogSpec{Lines: append([]string(nil), kept...), Every: script.Duration(every.Round(time.Millisecond)), Count: len(kept)}
	if stream == "stderr" {
		spec.Stream = stream
	}
	return spec
}

// usage fits the container's samples: memory (working set), CPU, writable layer bytes and inodes.
func (c *recContainer) usage() *script.Usage {
	var mem, cpu, disk, inodes []point
	for _, s := range c.samples {
		t := s.at.Seconds()
		mem = append(mem, point{t, s.memory})
		disk = append(disk, point{t, s.disk})
		inodes = append(inodes, point{t, s.inodes})
		if s.hasCPU {
			cpu = append(cpu, point{t, s.cpuRate})
		}
	}
	u := &script.Usage{Memory: fitCurve(mem, bytesQ), CPU: fitCurve(cpu, coresQ), Disk: fitCurve(disk, bytesQ), Inodes: fitCurve(inodes, countQ)}
	if u.Memory == nil && u.CPU == nil && u.Disk == nil && u.Inodes == nil {
		return nil
	}
	return u
}

type point struct{ t, v float64 }

// fitCurve turns samples into a curve: a constant when they hardly move (within 2% of the largest),
// a ramp when a straight line is within 2% of the largest at every sample (growing on past the last
// sample, as a leak does, or holding where it ended when it falls), else steps at each sample
// that moved by more than 2%.
func fitCurve(pts []point, q func(float64) script.Quantity) *script.Curve {
	if len(pts) == 0 {
		return nil
	}
	lo, hi, sum := math.Inf(1), math.Inf(-1), 0.0
	for _, p := range pts {
		lo, hi, sum = math.Min(lo, p.v), math.Max(hi, p.v), sum+p.v
	}
	tol := 0.02 * math.Max(math.Abs(hi), math.Abs(lo))
	if hi-lo <= tol {
		return script.ConstantCurve(q(sum / float64(len(pts))))
	}
	if len(pts) >= 3 {
		a, b := leastSquares(pts)
		worst := 0.0
		for _, p := range pts {
			worst = math.Max(worst, math.Abs(a+b*p.t-p.v))
		}
		if worst <= tol {
			from := math.Max(0, a)
			if b > 0 {
				per := q(b)
				return &script.Curve{Ramp: &script.Ramp{From: q(from), PerSecond: &per}}
			}
			last := pts[len(pts)-1]
			to := q(math.Max(0, a+b*last.t))
			return &script.Curve{Ramp: &script.Ramp{From: q(from), To: &to, Over: offset(last.t)}}
		}
	}
	steps := []script.Step{{At: 0, Value: q(pts[0].v)}}
	prev := pts[0].v
	for _, p := range pts[1:] {
		if math.Abs(p.v-prev) > tol {
			steps = append(steps, script.Step{At: offset(p.t), Value: q(p.v)})
			prev = p.v
		}
	}
	return &script.Curve{Steps: steps}
}

// leastSquares fits v = a + b t.
func leastSquares(pts []point) (a, b float64) {
	n := float64(len(pts))
	var st, sv, stt, stv float64
	for _, p := range pts {
		st, sv, stt, stv = st+p.t, sv+p.v, stt+p.t*p.t, stv+p.t*p.v
	}
	den := n*stt - st*st
	if den == 0 {
		return sv / n, 0
	}
	b = (n*stv - st*sv) / den
	return (sv - b*st) / n, b
}

// offset is a sample's time, seconds since the recording began, as a script's offset: rounded up
// to the nanosecond as the curves read time, then to the millisecond.
func offset(s float64) script.Duration {
	return script.Duration(time.Duration(math.Ceil(max(s, 0) * float64(time.Second))).Round(time.Millisecond))
}

func bytesQ(v float64) script.Quantity {
	return mustQ(resource.NewQuantity(int64(math.Round(v)), resource.BinarySI).String())
}

func coresQ(v float64) script.Quantity {
	return mustQ(resource.NewMilliQuantity(int64(math.Round(v*1000)), resource.DecimalSI).String())
}

func countQ(v float64) script.Quantity { return mustQ(fmt.Sprint(int64(math.Round(v)))) }

func mustQ(s string) script.Quantity {
	q, err := script.ParseQuantity(s)
	if err != nil {
		panic(err) // the formats above are quantities
	}
	return q
}

// Recording says what WriteRecording puts in the scenario skeleton beside the script.
type Recording struct {
	// Node is the recorded node's name (orchlet's --hostname-override): the replay's pods then
	// have the recorded pods' names (a static pod's name ends in the node's).
	Node string
	// Args are the recorded orchlet's options, replayed as they were (with --pod-manifest-path
	// added when Manifests is given and they have none).
	Args []string
	// Manifests is the recorded orchlet's --pod-manifest-path: its files become the skeleton's
	// static pods, verbatim (the CRI carries no pod spec to rebuild them from).
	Manifests string
	// APIPods are the pods (YAML, each with its spec.nodeName) the node ran from the API server:
	// the replay's node is an API-mode node and they are created at its start.
	APIPods []string
	// HostMemory and SystemMemory are the machine's memory and what ran outside pods when the
	// recording began, in bytes (0: the simulator's defaults).
	HostMemory, SystemMemory uint64
	// Upstream names the recorded runtime's endpoint, for the skeleton's comment.
	Upstream string
}

// WriteRecording writes dir/fakecri.yaml, the script, and dir/scenario.yaml, a scenario replaying
// the recorded node for as long as the recording ran: `orchsim run dir/scenario.yaml` plays it, and
// `orchsim compare` tries other options on it.
func (r *Recorder) WriteRecording(dir string, o Recording) error {
	if o.Node == "" {
		return fmt.Errorf("record: the node's name is required (the orchlet's --hostname-override)")
	}
	sy, err := r.Script().YAML()
	if err != nil {
		return err
	}
	if _, err := script.Parse(sy); err != nil {
		return fmt.Errorf("record: the script written does not read back: %w", err)
	}
	type manifest struct{ name, content string }
	var manifests []manifest
	if o.Manifests != "" {
		ents, err := os.ReadDir(o.Manifests)
		if err != nil {
			return fmt.Errorf("record: --manifests: %w", err)
		}
		for _, e := range ents {
			if e.IsDir() || strings.HasPrefix(e.Name(), ".") {
				continue
			}
			b, err := os.ReadFile(filepath.Join(o.Manifests, e.Name()))
			if err != nil {
				return fmt.Errorf("record: --manifests: %w", err)
			}
			manifests = append(manifests, manifest{e.Name(), string(b)})
		}
	}
	elapsed := r.Elapsed()
	duration := elapsed.Round(time.Second)
	if duration < elapsed {
		duration += time.Second
	}
	r.mu.Lock()
	var pods []string
	for _, sb := range r.sandboxes {
		pods = append(pods, sb.meta.GetNamespace()+"/"+sb.meta.GetName())
	}
	samples, pulled := r.samples, 0
	for _, im := range r.images {
		if len(im.pulls) > 0 {
			pulled++
		}
	}
	r.mu.Unlock()
	sort.Strings(pods)
	pods = slices.Compact(pods)

	var b strings.Builder
	fmt.Fprintf(&b, "# A node recorded by fakecri record from %s %s (%s), started %s, for %s, sampling the\n",
		r.version.GetRuntimeName(), r.version.GetRuntimeVersion(), o.Upstream, r.start.UTC().Format(time.RFC3339), elapsed.Round(time.Millisecond))
	fmt.Fprintf(&b, "# containers' stats every %s (%d rounds): the replay matches the recording to within that period.\n", r.period, samples)
	fmt.Fprintf(&b, "# Replay: orchsim run --update %s; other options: orchsim compare %s --with 'eviction-hard=...'\n",
		filepath.Join(dir, "scenario.yaml"), filepath.Join(dir, "scenario.yaml"))
	if len(manifests) == 0 && len(o.APIPods) == 0 && len(pods) > 0 {
		b.WriteString("# The CRI carries no pod spec: the recorded pods, to add under manifests (or give --manifests):\n")
		for _, p := range pods {
			fmt.Fprintf(&b, "#   %s\n", p)
		}
	}
	desc := fmt.Sprintf("Node %s as recorded on %s %s: %d pods, %d images pulled.", o.Node,
		r.version.GetRuntimeName(), r.version.GetRuntimeVersion(), len(pods), pulled)
	writeYAMLField(&b, "", "description", desc)
	fmt.Fprintf(&b, "duration: %s\n", duration)
	b.WriteString("nodes:\n")
	writeYAMLField(&b, "  - ", "name", o.Node)
	if len(o.APIPods) > 0 {
		b.WriteString("    api: true\n")
	}
	args := append([]string(nil), o.Args...)
	if len(manifests) > 0 && !slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "--pod-manifest-path") }) {
		args = append(args, "--pod-manifest-path="+o.Manifests) // where the replay's static pods are read from
	}
	if len(args) > 0 {
		writeYAMLField(&b, "    ", "args", args)
	}
	if o.HostMemory > 0 {
		host := map[string]string{"memory": bytesQ(float64(o.HostMemory)).String()}
		if o.SystemMemory > 0 {
			host["systemMemory"] = bytesQ(float64(o.SystemMemory)).String()
		}
		writeYAMLField(&b, "    ", "host", host)
	}
	if len(manifests) > 0 {
		b.WriteString("    manifests:\n")
		for _, m := range manifests {
			writeYAMLField(&b, "      - ", "name", m.name)
			b.WriteString("        content: |\n")
			for _, line := range strings.Split(strings.TrimRight(m.content, "\n"), "\n") {
				fmt.Fprintf(&b, "          %s\n", line)
			}
		}
	}
	b.WriteString("    fakecri:\n")
	for _, line := range strings.Split(strings.TrimRight(string(sy), "\n"), "\n") {
		fmt.Fprintf(&b, "      %s\n", line)
	}
	if len(o.APIPods) > 0 {
		b.WriteString("timeline:\n")
		for _, p := range o.APIPods {
			b.WriteString("  - at: 0s\n    createPod: |\n")
			for _, line := range strings.Split(strings.TrimRight(p, "\n"), "\n") {
				fmt.Fprintf(&b, "      %s\n", line)
			}
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := writeFileAtomic(filepath.Join(dir, "fakecri.yaml"), sy); err != nil {
		return err
	}
	return writeFileAtomic(filepath.Join(dir, "scenario.yaml"), []byte(b.String()))
}

// writeYAMLField writes key: value as YAML, the value's first line after prefix and the rest
// indented to match.
func writeYAMLField(b *strings.Builder, prefix, key string, v any) {
	out, err := yaml.Marshal(map[string]any{key: v})
	if err != nil {
		panic(err) // strings, lists and maps of strings marshal
	}
	pad := strings.Repeat(" ", len(prefix))
	for i, line := range strings.Split(strings.TrimRight(string(out), "\n"), "\n") {
		if i == 0 {
			b.WriteString(prefix + line + "\n")
		} else {
			b.WriteString(pad + line + "\n")
		}
	}
}

func writeFileAtomic(path string, data []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
