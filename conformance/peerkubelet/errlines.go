package peerkubelet

import (
	"bufio"
	"io"
	"regexp"
	"strings"
)

// HostFault is an error line of the kubelet that the test host or the kubelet's own start-up causes,
// not the runtime: the kubelet logs it on containerd too. Reason says why.
type HostFault struct {
	Match  *regexp.Regexp
	Reason string
}

// HostFaults are the kubelet v1.34 error lines that are not fakecri's doing on this kind of host (a
// container, running as root without every capability, cgroup v1, no systemd). ContainerStatus
// answered NotFound is not here: whether it is fakecri's fault depends on the id (see StaleIDs).
var HostFaults = []HostFault{
	{regexp.MustCompile(`"Failed to set rlimit on max file handles" err="operation not permitted"`),
		"the host (a container) does not let root raise RLIMIT_NOFILE past its hard limit"},
	{regexp.MustCompile(`"Failed to ensure process in container with oom score" err="failed to find pid namespace of init process"`),
		"the host is a container: the kubelet cannot read the PID namespace of PID 1"},
	{regexp.MustCompile(`"Failed to read data from checkpoint" err="checkpoint is not found" checkpoint="kubelet_internal_checkpoint"`),
		"a fresh --root-dir: the CPU/memory managers' checkpoint is written on first start"},
	{regexp.MustCompile(`"Skipping pod synchronization" err="\[?container runtime status check may not have completed yet(, PLEG is not healthy: pleg has yet to be successful\])?"`),
		"start-up order: the sync loop's first round runs before the first relist and runtime status check"},
	{regexp.MustCompile(`"Image garbage collection failed once\. Stats initialization may not have completed yet" err="invalid capacity 0 on image filesystem"`),
		"the first image GC round runs at start, before cadvisor's first sample of the image filesystem's mountpoint; the test checks /stats/summary reports its capacity afterwards"},
	{regexp.MustCompile(`"eviction manager: failed to check if we have separate container filesystem\. Ignoring\." err="no imagefs label for configured runtime"`),
		"the kubelet's cadvisor knows an image filesystem label for CRI-O only (pkg/kubelet/cadvisor/helpers_linux.go): every other runtime, containerd too, gets this"},
}

// containerStatusNotFound is the kubelet's line for a ContainerStatus answered NotFound; the id is
// captured.
var containerStatusNotFound = regexp.MustCompile(`"ContainerStatus from runtime service failed" err="rpc error: code = NotFound .*" containerID="([0-9a-f]+)"`)

// ErrorLine is one E-line of the kubelet's log, classified.
type ErrorLine struct {
	Text string
	// Reason is set when the line is the host's fault (a HostFaults reason, or a stale id).
	Reason string
}

// Call is what the check reads of one of fakecri's recorded calls (its GET /v1/calls).
type Call struct {
	Method, Code, Request, Response, Error string
}

// StaleIDs are the container ids fakecri answered NotFound to ContainerStatus before creating a
// container of that id, if ever: ids of symlinks in /var/log/containers that other runs left (fakecri's
// ids repeat from run to run, so a later run may create the same id after the kubelet asked).
func StaleIDs(calls []Call) map[string]bool {
	created, stale := map[string]bool{}, map[string]bool{}
	for _, c := range calls {
		switch {
		case c.Method == "CreateContainer" && c.Code == "OK":
			created[c.Response] = true
		case c.Method == "ContainerStatus" && c.Code == "NotFound":
			if id := containerID(c.Request); !created[id] {
				stale[id] = true
			}
		}
	}
	return stale
}

// containerID reads the id from a ContainerStatus request summary ("container_id=… verbose=false").
func containerID(request string) string {
	for _, f := range strings.Fields(request) {
		if id, ok := strings.CutPrefix(f, "container_id="); ok {
			return id
		}
	}
	return ""
}

// ErrorLines reads a klog log and returns its error lines. A ContainerStatus NotFound for a stale
// id (see StaleIDs) is a symlink of another run in /var/log/containers, which the kubelet's
// container GC asks about before removing it.
func ErrorLines(r io.Reader, stale func(id string) bool) ([]ErrorLine, error) {
	var out []ErrorLine
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "E") {
			continue
		}
		e := ErrorLine{Text: line}
		if m := containerStatusNotFound.FindStringSubmatch(line); m != nil {
			if stale(m[1]) {
				e.Reason = "a stale /var/log/containers symlink of another run on this host: the kubelet's container GC asks the runtime about its id, then removes it"
			}
		} else {
			for _, h := range HostFaults {
				if h.Match.MatchString(line) {
					e.Reason = h.Reason
					break
				}
			}
		}
		out = append(out, e)
	}
	return out, sc.Err()
}
