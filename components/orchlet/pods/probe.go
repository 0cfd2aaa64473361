package pods

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

	"orch.io/orch/components/orchlet/events"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	utilexec "k8s.io/utils/exec"
)

// Kubernetes' probe defaults, for fields a manifest leaves at zero.
const (
	defaultProbePeriod    = 10
	defaultProbeTimeout   = 1
	defaultProbeThreshold = 3
	// maxProbeBody is how much of an httpGet probe's body is read, as Kubernetes' prober.
	maxProbeBody = 10 * 1024
)

// probeType is one of a container's three probes, in the order they run when due together.
type probeType int

const (
	probeNone probeType = iota
	probeStartup
	probeReadiness
	probeLiveness
	numProbeTypes
)

func (t probeType) String() string {
	return [...]string{"", "Startup", "Readiness", "Liveness"}[t]
}

func (t probeType) of(c *corev1.Container) *corev1.Probe {
	switch t {
	case probeStartup:
		return c.StartupProbe
	case probeReadiness:
		return c.ReadinessProbe
	case probeLiveness:
		return c.LivenessProbe
	}
	return nil
}

// probeResult is a probe worker's state, as Kubernetes' prober worker keeps it: the result it last
// published, and the last raw result with how many times in a row it came.
type probeResult struct {
	published int8 // 0 unknown, 1 success, -1 failure
	last      int8
	run       int
}

func probePeriod(pr *corev1.Probe) time.Duration {
	if pr.PeriodSeconds > 0 {
		return time.Duration(pr.PeriodSeconds) * time.Second
	}
	return defaultProbePeriod * time.Second
}

func probeTimeout(pr *corev1.Probe) time.Duration {
	if pr.TimeoutSeconds > 0 {
		return time.Duration(pr.TimeoutSeconds) * time.Second
	}
	return defaultProbeTimeout * time.Second
}

func failureThreshold(pr *corev1.Probe) int {
	if pr.FailureThreshold > 0 {
		return int(pr.FailureThreshold)
	}
	return defaultProbeThreshold
}

func successThreshold(pr *corev1.Probe) int {
	if pr.SuccessThreshold > 0 {
		return int(pr.SuccessThreshold)
	}
	return 1
}

// started is Kubernetes' container started: it runs and its startup probe, if any, passed.
func (cs *ctrState) started(c *corev1.Container) bool {
	return cs.probedID != "" && (c.StartupProbe == nil || cs.probes[probeStartup].published > 0)
}

// ready is Kubernetes' container ready: started and its readiness probe, if any, passed.
func (cs *ctrState) ready(c *corev1.Container) bool {
	return cs.started(c) && (c.ReadinessProbe == nil || cs.probes[probeReadiness].published > 0)
}

// watch starts probing a newly seen running instance of c: each probe first initialDelaySeconds
// after it started, then every periodSeconds. Readiness starts failed, liveness passed and
// startup unknown, as in Kubernetes' prober.
func (m *Manager) watch(p *podState, c *corev1.Container, cs *ctrState, id string, st *runtimeapi.ContainerStatus) {
	if cs.probedID == id {
		return
	}
	m.unwatch(p, c.Name, cs)
	cs.probedID = id
	cs.probes[probeReadiness].published = -1
	cs.probes[probeLiveness].published = 1
	m.touch(p.pod.UID)
	now := m.clk.Now()
	for t := probeStartup; t < numProbeTypes; t++ {
		pr := t.of(c)
		if pr == nil {
			continue
		}
		first := time.Unix(0, st.StartedAt).Add(time.Duration(pr.InitialDelaySeconds) * time.Second)
		if first.Before(now) {
			first = now
		}
		m.enqueue(p.probeKey(c.Name, t), first)
	}
}

// unwatch stops probing c's instance, which is no longer running.
func (m *Manager) unwatch(p *podState, name string, cs *ctrState) {
	cs.probedID, cs.probes, cs.kill, cs.killNote = "", [numProbeTypes]probeResult{}, probeNone, ""
	for t := probeStartup; t < numProbeTypes; t++ {
		m.dequeue(p.probeKey(name, t))
	}
}

// probe runs one of c's probes once, as Kubernetes' prober worker does: liveness and readiness
// wait for the startup probe; a result is published once it came successThreshold (or
// failureThreshold) times in a row; a published liveness or startup failure has the pod's next
// sync, queued at once, kill the instance, and the worker holds until a new instance runs.
func (m *Manager) probe(ctx context.Context, p *podState, name string, t probeType) {
	cs := p.ctrs[name]
	c, _ := p.container(name)
	if cs == nil || c == nil || cs.probedID == "" || cs.kill != probeNone {
		return
	}
	pr := t.of(c)
	if pr == nil {
		return
	}
	now := m.clk.Now()
	if t == probeStartup && cs.started(c) {
		return // done: the startup probe runs until it passes once
	}
	if t != probeStartup && !cs.started(c) {
		m.enqueue(p.probeKey(name, t), now.Add(probePeriod(pr)))
		return
	}
	err := m.runProbe(ctx, p, c, cs.probedID, pr)
	// The next probe is a period after this one began, as on the kubelet's ticker, or at once
	// when this one took longer.
	next := now.Add(probePeriod(pr))
	if n := m.clk.Now(); next.Before(n) {
		next = n
	}
	now = m.clk.Now()
	result := int8(1)
	if err != nil {
		result = -1
		m.rec.Eventf(events.ContainerReference(p.pod, name), corev1.EventTypeWarning, ReasonUnhealthy, "Probe", "%s probe failed: %v", t, err)
	}
	r := &cs.probes[t]
	if r.last == result {
		r.run++
	} else {
		r.last, r.run = result, 1
	}
	if (result < 0 && r.run < failureThreshold(pr)) || (result > 0 && r.run < successThreshold(pr)) {
		m.enqueue(p.probeKey(name, t), next)
		return
	}
	if r.published != result {
		r.published = result
		m.touch(p.pod.UID)
		// A change of readiness or startedness changes the status, and a started sidecar lets
		// the next init container start: the pod's sync looks at once.
		m.enqueue(p.syncKey(), now)
	}
	if result < 0 && t != probeReadiness {
		cs.kill, cs.killNote = t, fmt.Sprintf("Container %s failed %s probe, will be restarted", name, strings.ToLower(t.String()))
		if _, isInit := p.container(name); isInit {
			cs.killNote = fmt.Sprintf("Init container %s failed %s probe", name, strings.ToLower(t.String()))
		}
		r.run = 0
		m.enqueue(p.syncKey(), now)
		return
	}
	if t == probeStartup && result > 0 {
		return
	}
	m.enqueue(p.probeKey(name, t), next)
}

func (m *Manager) runProbe(ctx context.Context, p *podState, c *corev1.Container, id string, pr *corev1.Probe) error {
	timeout := probeTimeout(pr)
	switch {
	case pr.Exec != nil:
		var stdout, stderr []byte
		err := m.calls.Within(ctx, timeout, func(ctx context.Context) (err error) {
			stdout, stderr, err = m.rt.ExecSync(ctx, id, pr.Exec.Command, timeout)
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
		return m.calls.Within(ctx, timeout, func(ctx context.Context) error {
			return m.httpGet(ctx, p, c, pr.HTTPGet, true)
		})
	case pr.TCPSocket != nil:
		port, err := resolvePort(pr.TCPSocket.Port, c)
		if err != nil {
			return err
		}
		host := pr.TCPSocket.Host
		if host == "" {
			host = p.podIP
		}
		return m.calls.Within(ctx, timeout, func(ctx context.Context) error {
			conn, err := m.dial(ctx, "tcp", net.JoinHostPort(host, strconv.Itoa(port)))
			if err != nil {
				return err
			}
			return conn.Close()
		})
	case pr.GRPC != nil:
		return m.calls.Within(ctx, timeout, func(ctx context.Context) error {
			return m.grpcProbe(ctx, p, pr.GRPC, timeout)
		})
	}
	return fmt.Errorf("probe of container %s has no handler", c.Name)
}

// httpGet sends an httpGet probe or hook: to host (the pod's IP by default), with the headers
// given (Host among them sets the request's host) and the User-Agent and Accept Kubernetes'
// prober sends unless given (orch-lifecycle/<version> for a hook, as kube-lifecycle). For a probe
// a status from 200 to 399 passes; a hook, as the kubelet's, only fails on an error.
func (m *Manager) httpGet(ctx context.Context, p *podState, c *corev1.Container, g *corev1.HTTPGetAction, probe bool) error {
	port, err := resolvePort(g.Port, c)
	if err != nil {
		return err
	}
	host := g.Host
	if host == "" {
		host = p.podIP
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
		ua := m.userAgent
		if !probe {
			ua = "orch-lifecycle/" + strings.TrimPrefix(ua, "orch-probe/")
		}
		req.Header.Set("User-Agent", ua)
	}
	if _, ok := req.Header["Accept"]; !ok {
		req.Header.Set("Accept", "*/*")
	}
	resp, err := m.http.Do(req)
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

// grpcProbe asks the gRPC health service (grpc.health.v1) on the pod's IP, as Kubernetes' gRPC
// prober does: SERVING passes.
func (m *Manager) grpcProbe(ctx context.Context, p *podState, g *corev1.GRPCAction, timeout time.Duration) error {
	addr := net.JoinHostPort(p.podIP, strconv.Itoa(int(g.Port)))
	conn, err := grpc.NewClient("passthrough:///"+addr,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithUserAgent(m.userAgent),
		grpc.WithContextDialer(func(ctx context.Context, a string) (net.Conn, error) { return m.dial(ctx, "tcp", a) }))
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
