package pods

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"orch.io/orch/components/orchlet/pods/podsync"
	"orch.io/orch/components/orchlet/pods/prober"
	fakescript "orch.io/orch/fakecri/script"
)

func execProbe(cmd string, period int32) *corev1.Probe {
	return &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{cmd}}}, PeriodSeconds: period}
}

// readyAt samples the pod's Ready condition and the container's ready flag after each second.
func readyAt(h *harness, until time.Duration) []string {
	var out []string
	last := ""
	for d := time.Second; d <= until; d += time.Second {
		h.runUntil(d)
		st := h.pod("p").Status
		now := string(cond(st, corev1.PodReady).Status) + "/" + strconv.FormatBool(st.ContainerStatuses[0].Ready)
		if now != last {
			out = append(out, now+"@"+d.String())
			last = now
		}
	}
	return out
}

// A readiness probe gates Ready: successThreshold passes in a row make the container ready,
// failureThreshold failures in a row unready again, with the kubelet's reasons and messages; the
// container is never restarted for it.
func TestReadinessFlapping(t *testing.T) {
	s := script()
	s.Exec = []fakescript.ExecRule{{Command: "ready", From: dur(20 * time.Second), Until: dur(40 * time.Second), ExitCode: 1, Stdout: "not yet"}}
	h := newHarness(t, s, config(nil), nil)
	c := ctr("app", "app:1")
	c.ReadinessProbe = execProbe("ready", 5)
	c.ReadinessProbe.SuccessThreshold, c.ReadinessProbe.FailureThreshold = 2, 2
	h.add(newPod("p", c))
	h.runUntil(time.Second)
	if c := cond(h.pod("p").Status, corev1.PodReady); c.Reason != "ContainersNotReady" || c.Message != "containers with unready status: [app]" {
		t.Errorf("Ready before the probe passed = %+v", c)
	}
	// probes at 0,5 pass (ready at 5s); 20,25 fail (unready at 25s); 40,45 pass (ready at 45s).
	got := readyAt(h, 50*time.Second)
	want := []string{"False/false@1s", "True/true@5s", "False/false@25s", "True/true@45s"}
	if !slices.Equal(got, want) {
		t.Errorf("Ready over time = %v, want %v", got, want)
	}
	if n := len(h.calls("StartContainer", "")); n != 1 {
		t.Errorf("readiness restarted the container: %d starts", n)
	}
	if e := h.rec.reasons(prober.ReasonUnhealthy); len(e) != 4 || e[0].note != "Readiness probe failed: not yet" {
		t.Errorf("Unhealthy events = %v", h.rec.lines())
	}
}

// The startup probe gates liveness and readiness: neither runs until it passed; the container is
// not started (nor ready) meanwhile. A startup probe that fails failureThreshold times kills the
// container with its own terminationGracePeriodSeconds.
func TestStartupProbe(t *testing.T) {
	t.Run("gates liveness", func(t *testing.T) {
		s := script()
		s.Exec = []fakescript.ExecRule{{Command: "started", Until: dur(15 * time.Second), ExitCode: 1}}
		h := newHarness(t, s, config(nil), nil)
		c := ctr("app", "app:1")
		c.StartupProbe = execProbe("started", 5)
		c.StartupProbe.FailureThreshold = 10
		c.LivenessProbe = execProbe("alive", 5)
		h.add(newPod("p", c))
		h.runUntil(14 * time.Second)
		cs := h.pod("p").Status.ContainerStatuses[0]
		if *cs.Started || cs.Ready || len(h.calls("ExecSync", "alive")) != 0 {
			t.Errorf("before startup passed: started %v ready %v, liveness probes %d", *cs.Started, cs.Ready, len(h.calls("ExecSync", "alive")))
		}
		h.runUntil(31 * time.Second)
		cs = h.pod("p").Status.ContainerStatuses[0]
		if !*cs.Started || !cs.Ready {
			t.Errorf("after startup passed: %+v", cs)
		}
		if got := starts(h.calls("ExecSync", "started")); !slices.Equal(got, []time.Duration{0, 5 * time.Second, 10 * time.Second, 15 * time.Second}) {
			t.Errorf("startup probes at %v", got)
		}
		if got := starts(h.calls("ExecSync", "alive")); !slices.Equal(got, []time.Duration{15 * time.Second, 20 * time.Second, 25 * time.Second, 30 * time.Second}) {
			t.Errorf("liveness probes at %v", got)
		}
	})
	t.Run("failure restarts with the probe's grace period", func(t *testing.T) {
		s := script()
		s.Exec = []fakescript.ExecRule{{Command: "started", ExitCode: 1}}
		h := newHarness(t, s, config(nil), nil)
		c := ctr("app", "app:1")
		c.StartupProbe = execProbe("started", 5)
		c.StartupProbe.FailureThreshold = 2
		five := int64(5)
		c.StartupProbe.TerminationGracePeriodSeconds = &five
		h.add(newPod("p", c))
		h.runUntil(6 * time.Second)
		stops := h.calls("StopContainer", "timeout=5")
		if len(stops) != 1 || stops[0].Start.Sub(t0) != 5*time.Second {
			t.Fatalf("StopContainer calls = %v", h.calls("StopContainer", ""))
		}
		if e := h.rec.reasons(podsync.ReasonKilling); len(e) != 1 || e[0].note != "Container app failed startup probe, will be restarted" {
			t.Errorf("Killing events = %v", e)
		}
		if n := len(h.calls("StartContainer", "")); n != 2 {
			t.Errorf("starts = %d, want 2", n)
		}
	})
}

// httpGet probes go to the given host, port and path, over HTTPS without verifying the
// certificate, with the given headers, the Host header as the request's host, and the
// User-Agent orch-probe/<version>; 200-399 pass, a redirect to another host is its answer.
func TestHTTPGetProbe(t *testing.T) {
	var mu sync.Mutex
	var seen []*http.Request
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusInternalServerError) }))
	defer other.Close()
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Clone(context.Background()))
		mu.Unlock()
		switch r.URL.Path {
		case "/ok":
			w.WriteHeader(http.StatusNoContent)
		case "/away":
			// another host name (the same address): followed no further, the 302 passes
			http.Redirect(w, r, strings.Replace(other.URL, "127.0.0.1", "localhost", 1)+"/x", http.StatusFound)
		default:
			w.WriteHeader(http.StatusNotFound)
		}
	}))
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	host, portText, _ := net.SplitHostPort(u.Host)
	port, _ := strconv.Atoi(portText)
	cases := []struct {
		path string
		ok   bool
	}{{"/ok", true}, {"/away", true}, {"/missing", false}}
	for _, tc := range cases {
		t.Run(tc.path, func(t *testing.T) {
			mu.Lock()
			seen = nil
			mu.Unlock()
			h := newHarness(t, script(), config(nil), func(o *Options) { o.Version = "1.37" })
			c := ctr("app", "app:1")
			c.Ports = []corev1.ContainerPort{{Name: "https", ContainerPort: int32(port)}}
			c.ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
				Host: host, Port: intstr.FromString("https"), Path: tc.path, Scheme: corev1.URISchemeHTTPS,
				HTTPHeaders: []corev1.HTTPHeader{{Name: "X-Check", Value: "1"}, {Name: "Host", Value: "web.example"}},
			}}}
			h.add(newPod("p", c))
			h.runUntil(time.Second)
			if got := h.pod("p").Status.ContainerStatuses[0].Ready; got != tc.ok {
				t.Errorf("ready = %v, want %v (events %v)", got, tc.ok, h.rec.lines())
			}
			mu.Lock()
			defer mu.Unlock()
			if len(seen) == 0 {
				t.Fatal("no request reached the server")
			}
			r := seen[0]
			if r.Header.Get("User-Agent") != "orch-probe/1.37" || r.Header.Get("X-Check") != "1" || r.Host != "web.example" || r.Header.Get("Accept") != "*/*" {
				t.Errorf("request headers %v, host %q", r.Header, r.Host)
			}
			if !tc.ok {
				if e := h.rec.reasons(prober.ReasonUnhealthy); len(e) == 0 || e[0].note != "Readiness probe failed: HTTP probe failed with statuscode: 404" {
					t.Errorf("events %v", h.rec.lines())
				}
			}
		})
	}
}

// grpc probes ask the grpc.health.v1 service on the pod's IP and port: SERVING passes, anything
// else fails with the kubelet's message.
func TestGRPCProbe(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "grpc.sock")
	lis, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	hs := health.NewServer()
	hs.SetServingStatus("up", healthpb.HealthCheckResponse_SERVING)
	hs.SetServingStatus("down", healthpb.HealthCheckResponse_NOT_SERVING)
	srv := grpc.NewServer()
	healthpb.RegisterHealthServer(srv, hs)
	go func() { _ = srv.Serve(lis) }()
	defer srv.Stop()
	for _, service := range []string{"up", "down"} {
		t.Run(service, func(t *testing.T) {
			var mu sync.Mutex
			var dialed []string
			h := newHarness(t, script(), config(nil), func(o *Options) {
				o.Dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
					mu.Lock()
					dialed = append(dialed, addr)
					mu.Unlock()
					return (&net.Dialer{}).DialContext(ctx, "unix", sock)
				}
			})
			c := ctr("app", "app:1")
			svc := service
			c.ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{GRPC: &corev1.GRPCAction{Port: 9090, Service: &svc}}}
			h.add(newPod("p", c))
			h.runUntil(time.Second)
			ok := service == "up"
			if got := h.pod("p").Status.ContainerStatuses[0].Ready; got != ok {
				t.Errorf("ready = %v, want %v (%v)", got, ok, h.rec.lines())
			}
			mu.Lock()
			defer mu.Unlock()
			if len(dialed) == 0 || dialed[0] != net.JoinHostPort(h.pod("p").Status.PodIP, "9090") {
				t.Errorf("dialed %v", dialed)
			}
			if !ok {
				if e := h.rec.reasons(prober.ReasonUnhealthy); len(e) == 0 || e[0].note != `Readiness probe failed: service unhealthy (responded with "NOT_SERVING")` {
					t.Errorf("events %v", h.rec.lines())
				}
			}
		})
	}
}

// An exec probe slower than timeoutSeconds fails with the kubelet's timeout message; a
// readiness gate whose condition is missing keeps the pod unready though its containers are.
func TestExecProbeTimeoutAndReadinessGates(t *testing.T) {
	s := script()
	s.Exec = []fakescript.ExecRule{{Command: "slow", Delay: dur(5 * time.Second)}}
	h := newHarness(t, s, config(nil), nil)
	c := ctr("app", "app:1")
	c.ReadinessProbe = execProbe("slow", 10)
	c.ReadinessProbe.TimeoutSeconds = 2
	d := ctr("db", "app:1")
	pod := newPod("p", c, d)
	pod.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: "example.com/lb"}}
	h.add(pod)
	h.runUntil(3 * time.Second)
	if e := h.rec.reasons(prober.ReasonUnhealthy); len(e) != 1 || e[0].note != `Readiness probe failed: command "slow" timed out` || e[0].at != 2*time.Second {
		t.Errorf("events %v", h.rec.lines())
	}
	st := h.pod("p").Status
	if c := cond(st, corev1.ContainersReady); c.Message != "containers with unready status: [app]" {
		t.Errorf("ContainersReady = %+v", c)
	}
	if !st.ContainerStatuses[1].Ready {
		t.Errorf("db not ready: %+v", st.ContainerStatuses[1])
	}
	s.Exec = nil
	if err := h.rt.SetScript(s); err != nil {
		t.Fatal(err)
	}
	h.runUntil(11 * time.Second)
	st = h.pod("p").Status
	if c := cond(st, corev1.PodReady); c.Status != corev1.ConditionFalse || c.Reason != "ReadinessGatesNotReady" || c.Message != `corresponding condition of pod readiness gate "example.com/lb" does not exist.` {
		t.Errorf("Ready = %+v", c)
	}
	if cond(st, corev1.ContainersReady).Status != corev1.ConditionTrue {
		t.Errorf("ContainersReady = %+v", cond(st, corev1.ContainersReady))
	}
}
