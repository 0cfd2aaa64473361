package conformance

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/cucumber/godog"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"orch.io/orch/conformance/target"
)

// podSteps check what the runtime received for the agent's pods: sandbox configurations, the
// runtime configuration, and the pacing of calls.
func podSteps() []StepDef {
	return []StepDef{
		{`^the node's resolver configuration "([^"]*)":$`, func(w *World) any { return w.writeResolvConf }},
		{`^the runtime's sandbox of pod "([^"]*)" has the DNS servers "([^"]*)" and the search domains "([^"]*)"$`, func(w *World) any { return w.sandboxDNS }},
		{`^the runtime's sandbox of pod "([^"]*)" has the sysctl "([^"]*)" set to "([^"]*)"$`, func(w *World) any { return w.sandboxSysctl }},
		{`^the runtime received an UpdateRuntimeConfig call with the pod CIDR "([^"]*)"$`, func(w *World) any { return w.receivedPodCIDR }},
		{`^the agent reports pod "([^"]*)" with an IP in "([^"]*)"$`, func(w *World) any { return w.podIPIn }},
		{`^the runtime's (\w+) calls start (\d+) at once, then one every (\d+)ms$`, func(w *World) any { return w.callsPaced }},
		{`^the agent recorded a (Normal|Warning) event "([^"]*)" about pod "([^"]*)"$`, func(w *World) any { return w.recordedPodEvent }},
		{`^the runtime's (\w+) calls come one every (\d+)s$`, func(w *World) any { return w.callsEvery }},
		{`^the runtime's container "([^"]*)" of pod "([^"]*)" has the seccomp profile (RuntimeDefault|Unconfined)$`, func(w *World) any { return w.containerSeccomp }},
		{`^the runtime's container "([^"]*)" of pod "([^"]*)" has the CPU quota (\d+) over the period (\d+)$`, func(w *World) any { return w.containerQuota }},
		{`^the runtime's container "([^"]*)" of pod "([^"]*)" has no CPU quota$`, func(w *World) any { return w.containerNoQuota }},
		{`^the runtime's container "([^"]*)" of pod "([^"]*)" mounts the image "([^"]*)" read-only at "([^"]*)"$`, func(w *World) any { return w.containerImageMount }},
		{`^the runtime's sandbox of pod "([^"]*)" has the cgroup parent "([^"]*)"$`, func(w *World) any { return w.sandboxCgroupParent }},
		{`^the host's cgroup of pod "([^"]*)" has "([^"]*)" "([^"]*)"$`, func(w *World) any { return w.podCgroupFile }},
	}
}

// writeResolvConf writes a file into the scenario's directory, for --resolv-conf={dir}/<name>.
func (w *World) writeResolvConf(name string, doc *godog.DocString) error {
	return os.WriteFile(filepath.Join(w.dir, name), []byte(doc.Content), 0o600)
}

// sandboxConfig reads the configuration the runtime holds for the pod's ready sandbox from its
// verbose PodSandboxStatus, where containerd (and fakecri) put the whole sandbox config.
func (w *World) sandboxConfig(pod string) (*runtimeapi.PodSandboxConfig, error) {
	var s struct {
		Sandboxes []struct {
			ID    string `json:"id"`
			Name  string `json:"name"`
			State string `json:"state"`
		} `json:"sandboxes"`
	}
	if _, err := w.control("runtime", "GET", "/v1/state", nil, &s); err != nil {
		return nil, err
	}
	id := ""
	for _, sb := range s.Sandboxes {
		if sb.Name == pod+"-"+nodeName && sb.State == runtimeapi.PodSandboxState_SANDBOX_READY.String() {
			id = sb.ID
		}
	}
	if id == "" {
		return nil, fmt.Errorf("the runtime has no ready sandbox of pod %s", pod)
	}
	var cfg runtimeapi.PodSandboxConfig
	return &cfg, w.verboseConfig(func(ctx context.Context, rs runtimeapi.RuntimeServiceClient) (map[string]string, error) {
		st, err := rs.PodSandboxStatus(ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: id, Verbose: true})
		return st.GetInfo(), err
	}, &cfg)
}

// verboseConfig reads the "config" member of a verbose status's "info", where containerd (and
// fakecri) put the whole configuration the sandbox or container was created with.
func (w *World) verboseConfig(status func(context.Context, runtimeapi.RuntimeServiceClient) (map[string]string, error), cfg proto.Message) error {
	endpoint, _ := w.runtimeFields("runtime")
	conn, err := grpc.NewClient("unix://"+strings.TrimPrefix(endpoint, "unix://"), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), target.CommandTimeout)
	defer cancel()
	st, err := status(ctx, runtimeapi.NewRuntimeServiceClient(conn))
	if err != nil {
		return err
	}
	var info struct {
		Config json.RawMessage `json:"config"`
	}
	if err := json.Unmarshal([]byte(st["info"]), &info); err != nil || len(info.Config) == 0 {
		return fmt.Errorf("the verbose status holds no config (%v): %v", err, st)
	}
	return protojson.Unmarshal(info.Config, cfg)
}

// sandboxDNS compares the sandbox's nameservers and search domains, space-separated and in order.
func (w *World) sandboxDNS(pod, servers, searches string) error {
	return eventually(settle, func() error {
		cfg, err := w.sandboxConfig(pod)
		if err != nil {
			return err
		}
		dns := cfg.GetDnsConfig()
		if !slices.Equal(dns.GetServers(), strings.Fields(servers)) || !slices.Equal(dns.GetSearches(), strings.Fields(searches)) {
			return fmt.Errorf("the sandbox of pod %s has DNS servers %q and search domains %q, want %q and %q",
				pod, dns.GetServers(), dns.GetSearches(), servers, searches)
		}
		return nil
	})
}

func (w *World) sandboxSysctl(pod, name, value string) error {
	return eventually(settle, func() error {
		cfg, err := w.sandboxConfig(pod)
		if err != nil {
			return err
		}
		got, ok := cfg.GetLinux().GetSysctls()[name]
		if !ok || got != value {
			return fmt.Errorf("the sandbox of pod %s has sysctls %v, want %s=%s", pod, cfg.GetLinux().GetSysctls(), name, value)
		}
		return nil
	})
}

// receivedPodCIDR finds an UpdateRuntimeConfig call whose request names the CIDR; the call log
// shows the request as protobuf text, whose spacing varies.
func (w *World) receivedPodCIDR(cidr string) error {
	want := fmt.Sprintf("pod_cidr:%q", cidr)
	return eventually(settle, func() error {
		cs, err := w.calls("runtime", "UpdateRuntimeConfig")
		if err != nil {
			return err
		}
		for _, c := range cs {
			if c.Code == "OK" && strings.Contains(strings.Join(strings.Fields(c.Request), ""), want) {
				return nil
			}
		}
		return fmt.Errorf("no successful UpdateRuntimeConfig call with %s: %+v", want, cs)
	})
}

func (w *World) podIPIn(pod, cidr string) error {
	prefix, err := netip.ParsePrefix(cidr)
	if err != nil {
		return err
	}
	return eventually(settle, func() error {
		pods, err := w.podList()
		if err != nil {
			return err
		}
		p := findPod(pods, pod)
		if p == nil || p.Status.PodIP == "" {
			return fmt.Errorf("the agent reports no IP for pod %s: %+v", pod, p)
		}
		ip, err := netip.ParseAddr(p.Status.PodIP)
		if err != nil || !prefix.Contains(ip) {
			return errStop{fmt.Errorf("pod %s has the IP %s, not in %s (%v)", pod, p.Status.PodIP, cidr, err)}
		}
		return nil
	})
}

// paceTolerance is how much earlier than the bucket allows a call may seem to reach the runtime:
// the runtime stamps a call when it arrives, a little after the agent took its token. There is
// no upper bound: a slow machine only spaces calls more.
const paceTolerance = 100 * time.Millisecond

// callsPaced checks a token bucket's pace: the first burst calls start without waiting for a token
// (sooner than a period after the first), and call i (from 0) no sooner than (i-burst+1) periods
// after the first. Measured from
// the first call rather than from the one before, one call arriving late cannot make the next
// look early.
func (w *World) callsPaced(method string, burst, periodMS int) error {
	period := time.Duration(periodMS) * time.Millisecond
	cs, err := w.calls("runtime", method)
	if err != nil {
		return err
	}
	if len(cs) < burst+2 {
		return fmt.Errorf("want at least %d %s calls to tell the pace, got %d", burst+2, method, len(cs))
	}
	if d := cs[burst-1].Start.Sub(cs[0].Start); d >= period-paceTolerance {
		return fmt.Errorf("the first %d %s calls took %s to start: they waited for tokens", burst, method, d)
	}
	for i := burst; i < len(cs); i++ {
		want := time.Duration(i-burst+1)*period - paceTolerance
		if after := cs[i].Start.Sub(cs[0].Start); after < want {
			return fmt.Errorf("%s call %d started %s after the first, want at least %s", method, cs[i].Seq, after, want)
		}
	}
	return nil
}

// recordedPodEvent looks for the event among those the agent wrote on its output (the profile's
// eventLog "output").
func (w *World) recordedPodEvent(kind, reason, pod string) error {
	return eventually(settle, func() error {
		var seen []string
		for _, e := range w.createdEvents() {
			if e.Type == kind && e.Reason == reason && e.Regarding.Kind == "Pod" && e.Regarding.Name == pod+"-"+nodeName {
				return nil
			}
			seen = append(seen, e.Type+" "+e.Reason+" "+e.Regarding.Name)
		}
		return fmt.Errorf("no %s event %s about pod %s among %q", kind, reason, pod, seen)
	})
}
