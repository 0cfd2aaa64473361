package conformance

import (
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"

	"orch.io/orch/conformance/target"
)

// apiRateSteps put a recording proxy between the agent and the suite's API server, so the agent's
// request rate is read where a server would see it.
func apiRateSteps() []StepDef {
	return []StepDef{
		{`^the agent runs in API-server mode through a recording proxy with "([^"]*)"$`, func(w *World) any { return w.agentRunsThroughProxy }},
		{`^(\d+) pods bound to the agent's node are created through the API$`, func(w *World) any { return w.createBoundPods }},
		{`^the API server reports the (\d+) pods Running$`, func(w *World) any { return w.apiReportsPodsRunning }},
		{`^the agent's pod requests stay within (\d+) per second with a burst of (\d+)$`, func(w *World) any { return w.podRequestsWithin }},
		{`^the agent's event creations stay within (\d+) per second with a burst of (\d+)$`, func(w *World) any { return w.eventCreationsWithin }},
	}
}

// requestLog is the time of each request the proxy passed, by path.
type requestLog struct {
	mu   sync.Mutex
	seen []loggedRequest
}

type loggedRequest struct {
	at   time.Time
	verb string
	path string
}

func (l *requestLog) add(r *http.Request) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.seen = append(l.seen, loggedRequest{at: time.Now(), verb: r.Method, path: r.URL.Path})
}

func (l *requestLog) matching(keep func(loggedRequest) bool) []loggedRequest {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []loggedRequest
	for _, r := range l.seen {
		if keep(r) {
			out = append(out, r)
		}
	}
	return out
}

// agentRunsThroughProxy is agentRunsAPIMode with a TLS proxy of the scenario's own in front of the
// suite's API server, logging every request the agent makes.
func (w *World) agentRunsThroughProxy(args string) error {
	client, err := w.t.APIServer()
	if err != nil {
		return err
	}
	target, err := url.Parse(w.t.URL(""))
	if err != nil {
		return err
	}
	w.requests = &requestLog{}
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.Transport = client.Transport
	proxy.FlushInterval = -1 // watches stream
	srv := httptest.NewTLSServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		w.requests.add(r)
		proxy.ServeHTTP(rw, r)
	}))
	w.cleanup = append(w.cleanup, srv.Close)
	ca := filepath.Join(w.dir, "proxy-ca.crt")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		return err
	}
	kubeconfig, err := w.writeKubeconfig("orchlet.conf", "proxy", "agent", srv.URL, ca, w.t.Profile.APIServer.Token)
	if err != nil {
		return err
	}
	w.cleanupNode()
	return w.agentRuns(args + " --orchconfig=" + kubeconfig)
}

func ratePodName(i int) string { return fmt.Sprintf("rate-%03d", i) }

func (w *World) createBoundPods(n int) error {
	for i := 0; i < n; i++ {
		if err := w.createBoundPod(ratePodName(i)); err != nil {
			return err
		}
	}
	return nil
}

func (w *World) apiReportsPodsRunning(n int) error {
	return eventually(4*target.CommandTimeout, func() error {
		list := &corev1.PodList{}
		if err := w.apiGet("/api/v1/namespaces/default/pods?fieldSelector=spec.nodeName%3D"+nodeName, list); err != nil {
			return err
		}
		running := 0
		for _, p := range list.Items {
			if strings.HasPrefix(p.Name, "rate-") && p.Status.Phase == corev1.PodRunning {
				running++
			}
		}
		if running < n {
			return fmt.Errorf("%d of %d pods Running", running, n)
		}
		return nil
	})
}

// podRequestsWithin checks the agent's requests on pods against a token bucket of qps and burst:
// in no stretch of time did more arrive than the bucket lets through. A correct agent passes
// however slow the machine (slowness only spreads requests); one whose 0 meant "no limit" sends
// the pods' status as fast as it can. The check means something only when the pods' requests
// outnumber the burst and a second's refill, which it requires. A little slack covers requests
// the network delivers closer together than they were sent.
func (w *World) podRequestsWithin(qps, burst int) error {
	return w.requestsWithin("requests on pods", func(r loggedRequest) bool {
		return strings.HasPrefix(r.path, "/api/v1/pods") || strings.Contains(r.path, "/pods/") || strings.HasSuffix(r.path, "/pods")
	}, qps, burst, burst+qps+1)
}

// eventCreationsWithin checks the agent's Event creations (a POST to any group's events: the
// kubelet writes core v1 Events, orch its Event API's) against the token bucket of --event-qps and
// --event-burst, as podRequestsWithin checks the pods' requests, over the burst and three seconds
// of refill (the restarting containers' back-off slows the events an agent has to create).
func (w *World) eventCreationsWithin(qps, burst int) error {
	return w.requestsWithin("event creations", func(r loggedRequest) bool {
		return r.verb == http.MethodPost && strings.HasSuffix(r.path, "/events")
	}, qps, burst, burst+3*qps)
}

// requestsWithin checks the requests keep selects against a token bucket of qps and burst, once
// there are enough of them to tell (the agent may still be sending what its limit held back).
func (w *World) requestsWithin(what string, keep func(loggedRequest) bool, qps, burst, enough int) error {
	if w.requests == nil {
		return fmt.Errorf("no recording proxy: run the agent through one first")
	}
	var reqs []loggedRequest
	if err := eventually(2*settle, func() error {
		if reqs = w.requests.matching(keep); len(reqs) < enough {
			return fmt.Errorf("only %d %s: too few to show a limit of %d/s with a burst of %d", len(reqs), what, qps, burst)
		}
		return nil
	}); err != nil {
		return err
	}
	const slack = 1.05
	for i := range reqs {
		for j := i + 1; j < len(reqs); j++ {
			n := j - i + 1
			allowed := slack*(float64(burst)+float64(qps)*reqs[j].at.Sub(reqs[i].at).Seconds()) + 2
			if float64(n) > allowed {
				return fmt.Errorf("%d %s in %v from %s %s: over the %d/s limit with a burst of %d (at most %.0f)",
					n, what, reqs[j].at.Sub(reqs[i].at).Round(time.Millisecond), reqs[i].verb, reqs[i].path, qps, burst, allowed)
			}
		}
	}
	return nil
}
