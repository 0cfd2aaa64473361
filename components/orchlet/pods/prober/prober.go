package prober

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/benbjohnson/clock"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	utilexec "k8s.io/utils/exec"

	"orch.io/orch/components/orchlet/events"
	"orch.io/orch/components/orchlet/pods/calls"
)

// Recorder records events; *events.Recorder is one.
type Recorder interface {
	Eventf(regarding *corev1.ObjectReference, eventType, reason, action, noteFormat string, args ...any)
}

// HTTPDoer sends httpGet probes and hooks; *http.Client is one.
type HTTPDoer interface {
	Do(req *http.Request) (*http.Response, error)
}

// Dialer opens tcpSocket probe connections and grpc probes'; (*net.Dialer).DialContext is one.
type Dialer func(ctx context.Context, network, address string) (net.Conn, error)

// Runtime runs commands in containers; cri.RuntimeService is one.
type Runtime interface {
	ExecSync(ctx context.Context, containerID string, cmd []string, timeout time.Duration) (stdout []byte, stderr []byte, err error)
}

// ReasonUnhealthy is the event of a failed probe, as Kubernetes'.
const ReasonUnhealthy = "Unhealthy"

// Options are what a Prober needs.
type Options struct {
	Clock   clock.Clock
	Calls   *calls.Tracker
	Runtime Runtime
	// Recorder gets the Unhealthy events.
	Recorder Recorder
	// HTTP and Dial run httpGet, tcpSocket and grpc probes and httpGet hooks; a simulator injects
	// fakes. Without HTTP, a client as Kubernetes' prober's: no keep-alives, TLS unverified.
	HTTP HTTPDoer
	Dial Dialer
	// Version is the agent's major.minor, sent as the User-Agent orch-probe/<Version> of httpGet
	// and grpc probes (Kubernetes' kube-probe/<major>.<minor>).
	Version string
}

// Prober runs probes and hooks.
type Prober struct {
	clk       clock.Clock
	calls     *calls.Tracker
	rt        Runtime
	rec       Recorder
	http      HTTPDoer
	dial      Dialer
	userAgent string
}

// New is a prober with o's clients, defaulted.
func New(o Options) *Prober {
	p := &Prober{clk: o.Clock, calls: o.Calls, rt: o.Runtime, rec: o.Recorder, http: o.HTTP, dial: o.Dial, userAgent: "orch-probe/" + o.Version}
	if p.http == nil {
		p.http = probeClient()
	}
	if p.dial == nil {
		p.dial = (&net.Dialer{}).DialContext
	}
	return p
}

// Target is the container a probe or hook runs in.
type Target struct {
	Pod       *corev1.Pod
	PodIP     string
	Container *corev1.Container
	// Init says the container is an init container (a sidecar): its Killing note says so.
	Init bool
}

// Outcome is what the caller schedules after a Probe.
type Outcome struct {
	// Next is when the probe is due again; zero when it is done (a startup probe that passed, a
	// probe whose failure asked for a kill).
	Next time.Time
	// Changed says the published result changed: the container's ready or started, hence the
	// pod's status. Sync says the pod's sync must look at once, at SyncAt.
	Changed bool
	Sync    bool
	SyncAt  time.Time
}

// Probe runs the probe of type t of the instance s watches once, as Kubernetes' prober worker
// does: liveness and readiness wait for the startup probe; a result is published once it came
// successThreshold (or failureThreshold) times in a row; a published liveness or startup failure
// sets s.Kill, for the pod's sync (asked for at once) to kill the instance, and the probes hold
// until a new instance runs.
func (p *Prober) Probe(ctx context.Context, tg Target, s *Container, t Type) Outcome {
	c := tg.Container
	if s.ProbedID == "" || s.Kill != None {
		return Outcome{}
	}
	pr := t.Of(c)
	if pr == nil {
		return Outcome{}
	}
	now := p.clk.Now()
	if t == Startup && s.Started(c) {
		return Outcome{} // done: the startup probe runs until it passes once
	}
	if t != Startup && !s.Started(c) {
		return Outcome{Next: now.Add(probePeriod(pr))}
	}
	err := p.run(ctx, tg, s.ProbedID, pr)
	// The next probe is a period after this one began, as on the kubelet's ticker, or at once
	// when this one took longer.
	next := now.Add(probePeriod(pr))
	if n := p.clk.Now(); next.Before(n) {
		next = n
	}
	now = p.clk.Now()
	result := int8(1)
	if err != nil {
		result = -1
		p.rec.Eventf(events.ContainerReference(tg.Pod, c.Name), corev1.EventTypeWarning, ReasonUnhealthy, "Probe", "%s probe failed: %v", t, err)
	}
	r := &s.results[t]
	if r.last == result {
		r.run++
	} else {
		r.last, r.run = result, 1
	}
	if (result < 0 && r.run < failureThreshold(pr)) || (result > 0 && r.run < successThreshold(pr)) {
		return Outcome{Next: next}
	}
	var out Outcome
	if r.published != result {
		r.published = result
		// A change of readiness or startedness changes the status, and a started sidecar lets
		// the next init container start: the pod's sync looks at once.
		out.Changed, out.Sync, out.SyncAt = true, true, now
	}
	if result < 0 && t != Readiness {
		s.Kill, s.KillNote = t, fmt.Sprintf("Container %s failed %s probe, will be restarted", c.Name, strings.ToLower(t.String()))
		if tg.Init {
			s.KillNote = fmt.Sprintf("Init container %s failed %s probe", c.Name, strings.ToLower(t.String()))
		}
		r.run = 0
		out.Sync, out.SyncAt = true, now
		return out
	}
	if t == Startup && result > 0 {
		return out
	}
	out.Next = next
	return out
}

func (p *Prober) run(ctx context.Context, tg Target, id string, pr *corev1.Probe) error {
	c := tg.Container
	timeout := probeTimeout(pr)
	switch {
	case pr.Exec != nil:
		var stdout, stderr []byte
		err := p.calls.Within(ctx, timeout, func(ctx context.Context) (err error) {
			stdout, stderr, err = p.rt.ExecSync(ctx, id, pr.Exec.Command, timeout)
			return err
		})
		var exit utilexec.ExitError
		if errors.As(err, &exit) {
			// As Kubernetes' exec prober: a non-zero exit fails with the command's output.
			return errors.New(string(stdout) + string(stderr))
		}
		if errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("command %q timed out", strings.Join(pr.Exec.Command, " "))
		}
		return err
	case pr.HTTPGet != nil:
		return p.calls.Within(ctx, timeout, func(ctx context.Context) error {
			return p.httpGet(ctx, tg, pr.HTTPGet, true)
		})
	case pr.TCPSocket != nil:
		port, err := resolvePort(pr.TCPSocket.Port, c)
		if err != nil {
			return err
		}
		host := pr.TCPSocket.Host
		if host == "" {
			host = tg.PodIP
		}
		return p.calls.Within(ctx, timeout, func(ctx context.Context) error {
			conn, err := p.dial(ctx, "tcp", net.JoinHostPort(host, strconv.Itoa(port)))
			if err != nil {
				return err
			}
			return conn.Close()
		})
	case pr.GRPC != nil:
		return p.calls.Within(ctx, timeout, func(ctx context.Context) error {
			return p.grpcHealth(ctx, tg.PodIP, pr.GRPC, timeout)
		})
	}
	return fmt.Errorf("probe of container %s has no handler", c.Name)
}

// httpGet sends an httpGet probe or hook: to host (the pod's IP by default), with the headers
// given (Host among them sets the request's host) and the User-Agent and Accept Kubernetes'
// prober sends unless given (orch-lifecycle/<version> for a hook, as kube-lifecycle). For a probe
// a status from 200 to 399 passes; a hook, as the kubelet's, only fails on an error.
func (p *Prober) httpGet(ctx context.Context, tg Target, g *corev1.HTTPGetAction, probe bool) error {
	port, err := resolvePort(g.Port, tg.Container)
	if err != nil {
		return err
	}
	host := g.Host
	if host == "" {
		host = tg.PodIP
	}
	scheme := "http"
	if g.Scheme == corev1.URISchemeHTTPS {
		scheme = "https"
	}
	path := g.Path
	if path != "" && !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	u, err := url.Parse(scheme + "://" + net.JoinHostPort(host, strconv.Itoa(port)) + path)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return err
	}
	for _, h := range g.HTTPHeaders {
		if strings.EqualFold(h.Name, "Host") {
			req.Host = h.Value
			continue
		}
		req.Header.Add(h.Name, h.Value)
	}
	if _, ok := req.Header["User-Agent"]; !ok {
		ua := p.userAgent
		if !probe {
			ua = "orch-lifecycle/" + strings.TrimPrefix(ua, "orch-probe/")
		}
		req.Header.Set("User-Agent", ua)
	}
	if _, ok := req.Header["Accept"]; !ok {
		req.Header.Set("Accept", "*/*")
	}
	resp, err := p.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxProbeBody))
	if probe && (resp.StatusCode < http.StatusOK || resp.StatusCode >= http.StatusBadRequest) {
		return fmt.Errorf("HTTP probe failed with statuscode: %d", resp.StatusCode)
	}
	return nil
}

// grpcHealth asks the gRPC health service (grpc.health.v1) on the pod's IP, as Kubernetes' gRPC
// prober does: SERVING passes.
func (p *Prober) grpcHealth(ctx context.Context, podIP string, g *corev1.GRPCAction, timeout time.Duration) error {
	addr := net.JoinHostPort(podIP, strconv.Itoa(int(g.Port)))
	conn, err := grpc.NewClient("passthrough:///"+addr,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithUserAgent(p.userAgent),
		grpc.WithContextDialer(func(ctx context.Context, a string) (net.Conn, error) { return p.dial(ctx, "tcp", a) }))
	if err != nil {
		return fmt.Errorf("failed to connect service %q: %w", addr, err)
	}
	defer conn.Close()
	service := ""
	if g.Service != nil {
		service = *g.Service
	}
	resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{Service: service}, grpc.WaitForReady(true))
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("timeout: health rpc did not complete within %v", timeout)
		}
		return fmt.Errorf("error: health rpc probe failed: %v", err)
	}
	if resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		return fmt.Errorf("service unhealthy (responded with %q)", resp.GetStatus().String())
	}
	return nil
}

// probeClient is the HTTP client of Kubernetes' prober: no keep-alives, TLS without verification
// (a probe checks liveness, not identity), and redirects followed only on the same host; a
// redirect elsewhere is the answer, which passes as a 3xx.
func probeClient() *http.Client {
	return &http.Client{
		Transport: &http.Transport{
			TLSClientConfig:   &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // as the kubelet's prober
			DisableKeepAlives: true,
			Proxy:             http.ProxyURL(nil),
		},
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if req.URL.Hostname() != via[0].URL.Hostname() {
				return http.ErrUseLastResponse
			}
			if len(via) >= 10 {
				return errors.New("stopped after 10 redirects")
			}
			return nil
		},
	}
}

// resolvePort turns a probe's port, a number or a container port name, into a number.
func resolvePort(port intstr.IntOrString, c *corev1.Container) (int, error) {
	if port.Type == intstr.Int {
		return port.IntValue(), nil
	}
	for _, p := range c.Ports {
		if p.Name == port.StrVal {
			return int(p.ContainerPort), nil
		}
	}
	return 0, fmt.Errorf("container %s has no port named %q", c.Name, port.StrVal)
}
