package pods

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"time"

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
)

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

func probeThreshold(pr *corev1.Probe) int {
	if pr.FailureThreshold > 0 {
		return int(pr.FailureThreshold)
	}
	return defaultProbeThreshold
}

// watchLiveness starts probing a newly seen running instance of c: the first probe initialDelaySeconds
// after it started, then every periodSeconds.
func (m *Manager) watchLiveness(p *podState, c *corev1.Container, cs *ctrState, id string, st *runtimeapi.ContainerStatus) {
	if c.LivenessProbe == nil || cs.probedID == id {
		return
	}
	cs.probedID, cs.failures, cs.kill = id, 0, false
	first := time.Unix(0, st.StartedAt).Add(time.Duration(c.LivenessProbe.InitialDelaySeconds) * time.Second)
	if now := m.clk.Now(); first.Before(now) {
		first = now
	}
	m.enqueue(p.probeKey(c.Name), first)
}

// unwatch stops probing c's instance, which is no longer running.
func (m *Manager) unwatch(p *podState, name string, cs *ctrState) {
	cs.probedID, cs.failures, cs.kill = "", 0, false
	delete(m.queue, p.probeKey(name))
}

// probe runs c's liveness probe once. failureThreshold failures in a row mark the instance to be
// killed by the pod's next sync, queued at once.
func (m *Manager) probe(ctx context.Context, p *podState, name string) {
	cs := p.ctrs[name]
	var c *corev1.Container
	for i := range p.pod.Spec.Containers {
		if p.pod.Spec.Containers[i].Name == name {
			c = &p.pod.Spec.Containers[i]
		}
	}
	if cs == nil || c == nil || c.LivenessProbe == nil || cs.probedID == "" {
		return
	}
	pr := c.LivenessProbe
	err := m.runProbe(ctx, p, c, cs.probedID, pr)
	now := m.clk.Now()
	if err == nil {
		cs.failures = 0
		m.enqueue(p.probeKey(name), now.Add(probePeriod(pr)))
		return
	}
	cs.failures++
	m.rec.Eventf(containerRef(p.pod, name), corev1.EventTypeWarning, ReasonUnhealthy, "Probe", "Liveness probe failed: %v", err)
	if cs.failures < probeThreshold(pr) {
		m.enqueue(p.probeKey(name), now.Add(probePeriod(pr)))
		return
	}
	cs.kill = true
	m.enqueue(p.syncKey(), now)
}

func (m *Manager) runProbe(ctx context.Context, p *podState, c *corev1.Container, id string, pr *corev1.Probe) error {
	timeout := probeTimeout(pr)
	switch {
	case pr.Exec != nil:
		var stdout, stderr []byte
		err := m.callWithin(ctx, timeout, func(ctx context.Context) (err error) {
			stdout, stderr, err = m.rt.ExecSync(ctx, id, pr.Exec.Command, timeout)
			return err
		})
		var exit utilexec.ExitError
		if errors.As(err, &exit) {
			// As Kubernetes' exec prober: a non-zero exit fails with the command's output.
			return errors.New(string(stdout) + string(stderr))
		}
		return err
	case pr.HTTPGet != nil:
		g := pr.HTTPGet
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
		u := url.URL{Scheme: scheme, Host: net.JoinHostPort(host, strconv.Itoa(port)), Path: g.Path}
		return m.callWithin(ctx, timeout, func(ctx context.Context) error {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
			if err != nil {
				return err
			}
			for _, h := range g.HTTPHeaders {
				req.Header.Add(h.Name, h.Value)
			}
			resp, err := m.http.Do(req)
			if err != nil {
				return err
			}
			defer resp.Body.Close()
			if resp.StatusCode < http.StatusOK || resp.StatusCode >= http.StatusBadRequest {
				return fmt.Errorf("HTTP probe failed with statuscode: %d", resp.StatusCode)
			}
			return nil
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
		return m.callWithin(ctx, timeout, func(ctx context.Context) error {
			conn, err := m.dial(ctx, "tcp", net.JoinHostPort(host, strconv.Itoa(port)))
			if err != nil {
				return err
			}
			return conn.Close()
		})
	}
	return fmt.Errorf("probe of container %s has no handler", c.Name)
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
