package conformance

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	goruntime "runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/cucumber/godog"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"orch.io/orch/components/freeport"
	"orch.io/orch/conformance/target"
)

// nodeName is the agent's --hostname-override: static pods are named <manifest name>-<node>.
const nodeName = "node-conformance"

// settle bounds how long the agent may take to reach a state a scenario waits for: a few of the
// 1s source and relist periods the scenarios set, or the 10s back-off after a failed pod sync.
const settle = 15 * time.Second

func nodeSteps() []StepDef {
	return []StepDef{
		{`^a container runtime$`, func(w *World) any { return func() error { return w.startRuntime("runtime") } }},
		{`^a second container runtime as the image service$`, func(w *World) any { return func() error { return w.startRuntime("images") } }},
		{`^the (runtime|image service)'s script:$`, func(w *World) any { return w.putScript }},
		{`^the manifest "([^"]*)":$`, func(w *World) any { return w.writeManifest }},
		{`^the manifest "([^"]*)" is removed$`, func(w *World) any { return w.removeManifest }},
		{`^manifests for (\d+) pods? named "([^"]*)"$`, func(w *World) any { return w.manyManifests }},
		{`^manifests for (\d+) pods? per core and one more, named "([^"]*)"$`, func(w *World) any { return w.manifestsPerCore }},
		{`^an HTTP server serving the manifest:$`, func(w *World) any { return w.serveManifest }},
		{`^the HTTP server serves instead:$`, func(w *World) any { return w.serveInstead }},
		{`^a container "([^"]*)" created in the runtime by someone else$`, func(w *World) any { return w.foreignContainer }},
		{`^the agent runs with "([^"]*)"$`, func(w *World) any { return w.agentRuns }},
		{`^the runtime kills the container "([^"]*)" of pod "([^"]*)"$`, func(w *World) any { return w.killContainer }},
		{`^the agent reports pod "([^"]*)" (Running)$`, func(w *World) any { return w.reportsPod }},
		{`^the agent reports pod "([^"]*)" rejected with "([^"]*)"$`, func(w *World) any { return w.reportsRejected }},
		{`^the agent reports no pod "([^"]*)"$`, func(w *World) any { return w.reportsNoPod }},
		{`^the agent reports (\d+) pods? Running and (\d+) rejected with "([^"]*)"$`, func(w *World) any { return w.reportsCounts }},
		{`^the agent reports (\d+) pods? per core Running and the rest rejected with "([^"]*)"$`, func(w *World) any { return w.reportsPerCore }},
		{`^the agent reports (\d+) pods? per core and one more Running$`, func(w *World) any { return w.reportsPerCorePlusOne }},
		{`^the runtime runs the container "([^"]*)" of pod "([^"]*)"( again)?$`, func(w *World) any { return w.runtimeRuns }},
		{`^the runtime runs no container of pod "([^"]*)"$`, func(w *World) any { return w.runtimeRunsNone }},
		{`^the container "([^"]*)" created by someone else is still running after (\d+)s$`, func(w *World) any { return w.foreignStillRuns }},
		{`^the (runtime|image service) received (\w+) calls$`, func(w *World) any { return w.receivedCalls }},
		{`^the (runtime|image service) received no (\w+) call$`, func(w *World) any { return w.receivedNoCall }},
		{`^the runtime's (\w+) calls never overlap$`, func(w *World) any { return w.callsNeverOverlap }},
		{`^all the runtime's (\w+) calls overlap$`, func(w *World) any { return w.callsAllOverlap }},
		{`^the runtime cancelled the (\w+) call after (\d+)s$`, func(w *World) any { return w.callCancelled }},
		{`^the agent's output reports the (\w+) failure$`, func(w *World) any { return w.outputReportsFailure }},
		{`^the agent remakes the "([^"]*)" directory of pod "([^"]*)" under its root directory within (\d+)s, (\d+) times in a row$`, func(w *World) any { return w.remakesPodDir }},
		{`^the agent writes the events it creates on its output$`, func(w *World) any { return w.writesEventCreations }},
		{`^the agent's events keep to a burst of (\d+) and (\d+) per second$`, func(w *World) any { return w.eventsKeepTo }},
		{`^requests carry the client certificate "([^"]*)"$`, func(w *World) any { return w.useClientCert }},
		{`^the (HTTPS|read-only|health) server answers (GET|POST) "([^"]*)" with (\d+)$`, func(w *World) any { return w.serverAnswers }},
		{`^the (HTTPS|read-only|health) server answers (GET|POST) "([^"]*)" with (\d+) "([^"]*)"$`, func(w *World) any { return w.serverAnswersText }},
		{`^the (HTTPS|read-only|health) server answers (GET|POST) "([^"]*)" with anything but (\d+)$`, func(w *World) any { return w.serverAnswersNot }},
		{`^nothing listens on the (HTTPS|read-only|health) port$`, func(w *World) any { return w.nothingListens }},
		{`^the agent's block profile records where it blocked (within \d+s|after \d+s: nowhere)$`, func(w *World) any { return w.blockProfile }},
		{`^a connection to the HTTPS server left idle for (\d+)s is (closed|still open)$`, func(w *World) any { return w.idleConnection }},
	}
}

// node is what a scenario runs of a node: runtimes, the agent, its ports, its pod sources.
type node struct {
	runtimes map[string]*process // "runtime" and "images"
	controls map[string]*http.Client
	agent    *process
	// ports are the ports given to the agent's servers; 0 for a server the scenario disabled.
	ports      map[string]int
	clientCert *tls.Certificate
	token      string   // the bearer token requests to the HTTPS server carry
	foreign    []string // ids of the container and sandbox someone else created
	killed     string   // the container the scenario had the runtime kill
	foreignSeq int64    // the runtime's last call once the foreign container ran

	mu       sync.Mutex
	manifest []byte // what the scenario's HTTP server serves
	url      string
}

// process is a program a scenario keeps running in the background.
type process struct {
	cmd    *exec.Cmd
	exited chan struct{}
	out    *runningAgent // only its output buffer: the process is stopped by the scenario's cleanup
}

func (w *World) startProcess(dir string, argv []string) (*process, error) {
	out := &runningAgent{}
	p := &process{cmd: exec.Command(argv[0], argv[1:]...), exited: make(chan struct{}), out: out}
	p.cmd.Dir, p.cmd.Stdout, p.cmd.Stderr = dir, out, out
	if err := p.cmd.Start(); err != nil {
		return nil, err
	}
	go func() { _ = p.cmd.Wait(); close(p.exited) }()
	w.cleanup = append(w.cleanup, func() {
		select {
		case <-p.exited:
		default:
			_ = p.cmd.Process.Kill()
			<-p.exited
		}
	})
	return p, nil
}

func (w *World) node() *node {
	if w.n == nil {
		w.n = &node{runtimes: map[string]*process{}, controls: map[string]*http.Client{}, ports: map[string]int{}}
	}
	return w.n
}

func (w *World) runtimeFields(name string) (endpoint, control string) {
	r := w.t.Profile.Runtime
	socket := filepath.Join(w.dir, name+".sock")
	return strings.ReplaceAll(w.t.Expand(r.Endpoint), "{socket}", socket), strings.ReplaceAll(w.t.Expand(r.Control), "{socket}", socket)
}

// startRuntime starts a runtime and waits until its control API answers.
func (w *World) startRuntime(name string) error {
	r := w.t.Profile.Runtime
	socket := filepath.Join(w.dir, name+".sock")
	argv := w.t.ExpandAll(r.Command)
	for i := range argv {
		argv[i] = strings.ReplaceAll(argv[i], "{socket}", socket)
	}
	p, err := w.startProcess(w.dir, argv)
	if err != nil {
		return err
	}
	n := w.node()
	n.runtimes[name] = p
	_, control := w.runtimeFields(name)
	n.controls[name] = &http.Client{Timeout: target.CommandTimeout, Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", control)
		},
	}}
	return eventually(target.ReadyTimeout, func() error {
		select {
		case <-p.exited:
			return errStop{fmt.Errorf("the runtime exited:\n%s", p.out.output())}
		default:
		}
		_, err := w.control(name, http.MethodGet, "/healthz", nil, nil)
		return err
	})
}

// errStop ends eventually at once.
type errStop struct{ error }

// eventually retries check every 100ms until it passes, returns errStop or the timeout passes.
func eventually(timeout time.Duration, check func() error) error {
	deadline := time.Now().Add(timeout)
	for {
		err := check()
		var stop errStop
		if err == nil || errors.As(err, &stop) {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not within %s: %w", timeout, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// control calls the control API of a runtime, decoding a JSON answer into out when given.
func (w *World) control(name, method, path string, body io.Reader, out any) ([]byte, error) {
	c := w.node().controls[name]
	if c == nil {
		return nil, fmt.Errorf("no %s was started", name)
	}
	req, err := http.NewRequest(method, "http://runtime"+path, body)
	if err != nil {
		return nil, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	data, err := drain(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode/100 != 2 {
		return nil, fmt.Errorf("%s %s: %s %s", method, path, resp.Status, data)
	}
	if out != nil {
		return data, json.Unmarshal(data, out)
	}
	return data, nil
}

func runtimeName(which string) string {
	if which == "image service" {
		return "images"
	}
	return which
}

func (w *World) putScript(which string, doc *godog.DocString) error {
	_, err := w.control(runtimeName(which), http.MethodPut, "/v1/script", strings.NewReader(doc.Content), nil)
	return err
}

func (w *World) manifestDir() string { return filepath.Join(w.dir, "manifests") }

func (w *World) writeManifest(name string, doc *godog.DocString) error {
	if err := os.MkdirAll(w.manifestDir(), 0o700); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(w.manifestDir(), name), []byte(doc.Content), 0o600)
}

func (w *World) removeManifest(name string) error {
	return os.Remove(filepath.Join(w.manifestDir(), name))
}

func podManifest(name, image string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: Pod\nmetadata: {name: %s}\nspec:\n  containers:\n  - {name: app, image: %q}\n", name, image)
}

// manyManifests writes pods <prefix>-1 ... <prefix>-n, each with its own image.
func (w *World) manyManifests(n int, prefix string) error {
	if err := os.MkdirAll(w.manifestDir(), 0o700); err != nil {
		return err
	}
	for i := 1; i <= n; i++ {
		name := fmt.Sprintf("%s-%d", prefix, i)
		if err := os.WriteFile(filepath.Join(w.manifestDir(), name+".yaml"), []byte(podManifest(name, "conformance/"+name+":1")), 0o600); err != nil {
			return err
		}
	}
	return nil
}

// cores is the number of cores the agent counts: it runs on this machine.
func cores() int { return goruntime.NumCPU() }

func (w *World) manifestsPerCore(perCore int, prefix string) error {
	return w.manyManifests(perCore*cores()+1, prefix)
}

func (w *World) serveManifest(doc *godog.DocString) error {
	n := w.node()
	n.manifest = []byte(doc.Content)
	s := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, _ *http.Request) {
		n.mu.Lock()
		defer n.mu.Unlock()
		rw.Header().Set("Content-Type", "application/yaml")
		rw.Write(n.manifest)
	}))
	w.cleanup = append(w.cleanup, s.Close)
	n.url = s.URL + "/pod.yaml"
	return nil
}

func (w *World) serveInstead(doc *godog.DocString) error {
	n := w.node()
	n.mu.Lock()
	defer n.mu.Unlock()
	n.manifest = []byte(doc.Content)
	return nil
}

// portOption maps each server to the option setting its port.
var portOption = map[string]string{"HTTPS": "port", "read-only": "read-only-port", "health": "healthz-port"}

// agentRuns starts the agent on the scenario's runtime: the profile's standalone arguments, the
// runtime's endpoint, loopback addresses, a free port for each server and the scenario's
// directories come first, so the scenario's own arguments win. In them {manifests} is the
// manifest directory, {url} the manifest URL, {certs} the generated certificates, {dir} the
// scenario's directory, {images} the image service's endpoint and {hostIP} the host's IPv4 address.
func (w *World) agentRuns(args string) error {
	a, n := w.agent(), w.node()
	if n.runtimes["runtime"] == nil {
		return fmt.Errorf("start a container runtime first")
	}
	endpoint, _ := w.runtimeFields("runtime")
	images, _ := w.runtimeFields("images")
	args = strings.NewReplacer("{manifests}", w.manifestDir(), "{url}", n.url, "{certs}", w.certDir(), "{dir}", w.dir, "{images}", images).Replace(args)
	args, err := expandHostIP(args)
	if err != nil {
		return err
	}
	// A free port can be taken by another process before the agent binds it; that lost race, and
	// only that, is worth another start with other ports.
	for attempt := 0; attempt < 3; attempt++ {
		if err = w.startAgent(a, n, endpoint, args); err == nil || !strings.Contains(err.Error(), "address already in use") {
			return err
		}
	}
	return err
}

func (w *World) startAgent(a *target.AgentProfile, n *node, endpoint, args string) error {
	base := fmt.Sprintf("--container-runtime-endpoint=%s --hostname-override=%s --address=127.0.0.1 --healthz-bind-address=127.0.0.1 --cert-dir=%s",
		endpoint, nodeName, filepath.Join(w.dir, "pki"))
	for _, server := range []string{"HTTPS", "read-only", "health"} {
		port, err := freeport.Get()
		if err != nil {
			return err
		}
		base += fmt.Sprintf(" --%s=%d", portOption[server], port)
		n.ports[server] = port
		if m := regexp.MustCompile(`--` + portOption[server] + `=(\d+)`).FindStringSubmatch(args); m != nil {
			n.ports[server], _ = strconv.Atoi(m[1])
		}
	}
	if strings.Contains(args, "--enable-server=false") {
		n.ports["HTTPS"] = 0
	}
	argv := append(w.t.ExpandAll(a.Command), w.t.ExpandAll(w.inDir(a.Standalone))...)
	argv = append(append(argv, a.Args(base)...), a.Args(args)...)
	p, err := w.startProcess(w.dir, argv)
	if err != nil {
		return err
	}
	n.agent = p
	return eventually(target.CommandTimeout, func() error {
		select {
		case <-p.exited:
			return errStop{fmt.Errorf("the agent exited instead of running:\n%s", p.out.output())}
		default:
		}
		for _, text := range []string{a.RunningText, a.SyncingText} {
			if !strings.Contains(p.out.output(), text) {
				return fmt.Errorf("the agent did not say %q:\n%s", text, p.out.output())
			}
		}
		// An agent may say it runs before its servers listen (Kubernetes' kubelet logs "Started
		// kubelet" first): a running agent is one whose enabled servers accept connections.
		for server, port := range n.ports {
			if port == 0 {
				continue
			}
			c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), time.Second)
			if err != nil {
				return fmt.Errorf("the agent's %s server does not listen yet: %v", server, err)
			}
			c.Close()
		}
		return nil
	})
}

// inDir replaces {dir} in a profile's arguments with the scenario's directory (where a kubelet keeps
// its --root-dir).
func (w *World) inDir(args []string) []string {
	out := make([]string, len(args))
	for i, arg := range args {
		out[i] = strings.ReplaceAll(arg, "{dir}", w.dir)
	}
	return out
}

// agentOutput is the running agent's output, for error messages.
func (w *World) agentOutput() string {
	if w.n == nil || w.n.agent == nil {
		return "(no agent runs)"
	}
	return target.Tail(w.n.agent.out.output())
}

// podList reads /pods from the read-only server, or from the HTTPS server when it is disabled.
func (w *World) podList() ([]corev1.Pod, error) {
	n := w.node()
	server := "read-only"
	if n.ports[server] == 0 {
		server = "HTTPS"
	}
	code, body, err := w.serverRequest(server, http.MethodGet, "/pods")
	if err != nil {
		return nil, err
	}
	if code != http.StatusOK {
		return nil, fmt.Errorf("GET /pods on the %s server: %d %s", server, code, body)
	}
	var list corev1.PodList
	return list.Items, json.Unmarshal(body, &list)
}

// findPod finds the static pod of a manifest's pod name.
func findPod(pods []corev1.Pod, name string) *corev1.Pod {
	for i := range pods {
		if pods[i].Name == name+"-"+nodeName {
			return &pods[i]
		}
	}
	return nil
}

func (w *World) reportsPod(name, phase string) error {
	return eventually(settle, func() error {
		pods, err := w.podList()
		if err != nil {
			return err
		}
		p := findPod(pods, name)
		if p == nil || string(p.Status.Phase) != phase {
			return fmt.Errorf("pod %s is not %s: %+v\n%s", name, phase, p, w.agentOutput())
		}
		return nil
	})
}

func (w *World) reportsRejected(name, reason string) error {
	reason = w.agent().RejectReason(reason)
	return eventually(settle, func() error {
		pods, err := w.podList()
		if err != nil {
			return err
		}
		p := findPod(pods, name)
		if p == nil || p.Status.Phase != corev1.PodFailed || p.Status.Reason != reason {
			return fmt.Errorf("pod %s is not Failed with reason %s: %+v", name, reason, p)
		}
		return nil
	})
}

// reportsNoPod waits until the pod is absent, then checks it stays absent for more than the 1s
// check period the scenarios give the sources.
func (w *World) reportsNoPod(name string) error {
	absent := func() error {
		pods, err := w.podList()
		if err != nil {
			return err
		}
		if p := findPod(pods, name); p != nil {
			return fmt.Errorf("the agent reports pod %s: %s", name, p.Status.Phase)
		}
		return nil
	}
	if err := eventually(settle, absent); err != nil {
		return err
	}
	for end := time.Now().Add(1500 * time.Millisecond); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		if err := absent(); err != nil {
			return err
		}
	}
	return nil
}

// counts tallies the pods Running and those Failed for reason.
func (w *World) counts(reason string) (running, rejected int, err error) {
	reason = w.agent().RejectReason(reason)
	pods, err := w.podList()
	for _, p := range pods {
		switch {
		case p.Status.Phase == corev1.PodRunning:
			running++
		case p.Status.Phase == corev1.PodFailed && p.Status.Reason == reason:
			rejected++
		}
	}
	return running, rejected, err
}

func (w *World) reportsCounts(running, rejected int, reason string) error {
	return eventually(settle, func() error {
		r, x, err := w.counts(reason)
		if err != nil {
			return err
		}
		if r != running || x != rejected {
			return fmt.Errorf("%d Running and %d rejected with %s, want %d and %d", r, x, w.agent().RejectReason(reason), running, rejected)
		}
		return nil
	})
}

func (w *World) reportsPerCore(perCore int, reason string) error {
	return w.reportsCounts(perCore*cores(), 1, reason)
}

func (w *World) reportsPerCorePlusOne(perCore int) error {
	return w.reportsCounts(perCore*cores()+1, 0, "OutOfpods")
}

// state is the part of the runtime's GET /v1/state the steps read.
type state struct {
	Sandboxes []struct {
		ID   string `json:"id"`
		Name string `json:"name"`
	} `json:"sandboxes"`
	Containers []struct {
		ID        string `json:"id"`
		SandboxID string `json:"sandboxId"`
		Name      string `json:"name"`
		State     string `json:"state"`
	} `json:"containers"`
}

func (w *World) runtimeState() (*state, error) {
	var s state
	_, err := w.control("runtime", http.MethodGet, "/v1/state", nil, &s)
	return &s, err
}

// runningContainer finds the running container of a pod's sandbox.
func (s *state) runningContainer(container, pod string) (id string, ok bool) {
	sandboxes := map[string]bool{}
	for _, sb := range s.Sandboxes {
		if sb.Name == pod || sb.Name == pod+"-"+nodeName {
			sandboxes[sb.ID] = true
		}
	}
	for _, c := range s.Containers {
		if sandboxes[c.SandboxID] && c.Name == container && c.State == "CONTAINER_RUNNING" {
			return c.ID, true
		}
	}
	return "", false
}

// runtimeRuns waits for a running container; "again" wants another than the one killed.
func (w *World) runtimeRuns(container, pod, again string) error {
	return eventually(settle, func() error {
		s, err := w.runtimeState()
		if err != nil {
			return err
		}
		id, ok := s.runningContainer(container, pod)
		if !ok || (again != "" && id == w.node().killed) {
			return fmt.Errorf("the runtime runs no new container %s of pod %s", container, pod)
		}
		return nil
	})
}

func (w *World) runtimeRunsNone(pod string) error {
	return eventually(settle, func() error {
		s, err := w.runtimeState()
		if err != nil {
			return err
		}
		for _, c := range s.Containers {
			if _, ok := s.runningContainer(c.Name, pod); ok {
				return fmt.Errorf("the runtime still runs container %s of pod %s", c.Name, pod)
			}
		}
		return nil
	})
}

func (w *World) killContainer(container, pod string) error {
	s, err := w.runtimeState()
	if err != nil {
		return err
	}
	id, ok := s.runningContainer(container, pod)
	if !ok {
		return fmt.Errorf("the runtime runs no container %s of pod %s", container, pod)
	}
	w.node().killed = id
	_, err = w.control("runtime", http.MethodPost, "/v1/containers/"+id+"/kill?code=1&reason=Error", nil, nil)
	return err
}

// call is one record of the runtime's call log.
type call struct {
	Seq     int64     `json:"seq"`
	Method  string    `json:"method"`
	Start   time.Time `json:"start"`
	End     time.Time `json:"end"`
	Request string    `json:"request"`
	Code    string    `json:"code"`
}

func (w *World) calls(name, method string) ([]call, error) {
	cs, _, err := w.callsSince(name, method, 0)
	return cs, err
}

// callsSince reads the calls after sequence number since, and the last sequence number.
func (w *World) callsSince(name, method string, since int64) ([]call, int64, error) {
	var log struct {
		Calls   []call `json:"calls"`
		LastSeq int64  `json:"lastSeq"`
	}
	_, err := w.control(name, http.MethodGet, fmt.Sprintf("/v1/calls?since=%d&method=%s", since, url.QueryEscape(method)), nil, &log)
	return log.Calls, log.LastSeq, err
}

func (w *World) receivedCalls(which, method string) error {
	return eventually(settle, func() error {
		cs, err := w.calls(runtimeName(which), method)
		if err == nil && len(cs) == 0 {
			err = fmt.Errorf("the %s received no %s call", which, method)
		}
		return err
	})
}

func (w *World) receivedNoCall(which, method string) error {
	cs, err := w.calls(runtimeName(which), method)
	if err == nil && len(cs) > 0 {
		err = fmt.Errorf("the %s received %d %s calls: %+v", which, len(cs), method, cs)
	}
	return err
}

func (w *World) callsNeverOverlap(method string) error {
	cs, err := w.calls("runtime", method)
	if err != nil {
		return err
	}
	if len(cs) < 2 {
		return fmt.Errorf("want at least two %s calls to compare, got %d", method, len(cs))
	}
	for i := 1; i < len(cs); i++ {
		if cs[i-1].End.IsZero() || cs[i].Start.Before(cs[i-1].End) {
			return fmt.Errorf("%s call %d started at %s, before call %d ended at %s", method, cs[i].Seq, cs[i].Start, cs[i-1].Seq, cs[i-1].End)
		}
	}
	return nil
}

// callsAllOverlap checks that every call started before any ended: they ran side by side.
func (w *World) callsAllOverlap(method string) error {
	cs, err := w.calls("runtime", method)
	if err != nil {
		return err
	}
	if len(cs) < 2 {
		return fmt.Errorf("want at least two %s calls to compare, got %d", method, len(cs))
	}
	for _, a := range cs {
		for _, b := range cs {
			if !a.End.IsZero() && !b.Start.Before(a.End) {
				return fmt.Errorf("%s call %d started at %s, after call %d ended at %s", method, b.Seq, b.Start, a.Seq, a.End)
			}
		}
	}
	return nil
}

// callCancelled finds a call that ended without success after about d: the agent's deadline.
func (w *World) callCancelled(method string, seconds int) error {
	d := time.Duration(seconds) * time.Second
	return eventually(settle, func() error {
		cs, err := w.calls("runtime", method)
		if err != nil {
			return err
		}
		for _, c := range cs {
			took := c.End.Sub(c.Start)
			// The runtime starts its clock after the agent starts the deadline's.
			if !c.End.IsZero() && c.Code != "OK" && took > d-200*time.Millisecond && took < d+time.Second {
				return nil
			}
		}
		return fmt.Errorf("no %s call ended unsuccessfully after %s: %+v", method, d, cs)
	})
}

func (w *World) outputReportsFailure(method string) error {
	return eventually(settle, func() error {
		for _, line := range strings.Split(w.node().agent.out.output(), "\n") {
			if strings.Contains(line, method) && strings.Contains(strings.ToLower(line), "deadline") {
				return nil
			}
		}
		return fmt.Errorf("the agent's output names no %s deadline failure:\n%s", method, w.agentOutput())
	})
}

// podDataDir is a directory of a pod's under the agent's --root-dir, which the kubelet's SyncPod
// makes at every sync of the pod (makePodDataDirs): removed, it comes back by the pod's next sync.
func (w *World) podDataDir(name, pod string) (string, error) {
	pods, err := w.podList()
	if err != nil {
		return "", err
	}
	p := findPod(pods, pod)
	if p == nil {
		return "", fmt.Errorf("the agent reports no pod %s", pod)
	}
	// The last --root-dir wins, as flags do: the profile may give one before the scenario's.
	prefix, root := w.agent().OptionName("root-dir")+"=", ""
	for _, a := range w.node().agent.cmd.Args {
		if r, ok := strings.CutPrefix(a, prefix); ok {
			root = r
		}
	}
	if root == "" {
		return "", fmt.Errorf("the scenario's agent runs without %s", strings.TrimSuffix(prefix, "="))
	}
	return filepath.Join(root, "pods", string(p.UID), name), nil
}

// remakesPodDir removes the directory and waits for it to come back, times times: a sync of the
// running pod every period or sooner.
func (w *World) remakesPodDir(name, pod string, within, times int) error {
	dir, err := w.podDataDir(name, pod)
	if err != nil {
		return err
	}
	for i := 0; i < times; i++ {
		if err := os.Remove(dir); err != nil {
			return err
		}
		if err := eventually(time.Duration(within)*time.Second, func() error {
			_, err := os.Stat(dir)
			return err
		}); err != nil {
			return fmt.Errorf("removal %d: %s not made again within %ds: %w", i+1, dir, within, err)
		}
	}
	return nil
}

// serverRequest makes one request to a server of the agent; the HTTPS client trusts any
// certificate (the serving certificate has its own steps) and presents the scenario's client
// certificate, if any.
func (w *World) serverRequest(server, method, path string) (int, []byte, error) {
	n := w.node()
	port := n.ports[server]
	if port == 0 {
		return 0, nil, fmt.Errorf("the scenario disabled the %s server", server)
	}
	scheme := "http"
	tr := &http.Transport{DisableKeepAlives: true}
	if server == "HTTPS" {
		scheme = "https"
		tr.TLSClientConfig = w.clientTLS()
	}
	client := &http.Client{Timeout: 5 * time.Second, Transport: tr}
	req, err := http.NewRequest(method, fmt.Sprintf("%s://127.0.0.1:%d%s", scheme, port, path), nil)
	if err != nil {
		return 0, nil, err
	}
	if n.token != "" {
		req.Header.Set("Authorization", "Bearer "+n.token)
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	body, err := drain(resp.Body)
	return resp.StatusCode, body, err
}

func (w *World) clientTLS() *tls.Config {
	c := &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS12}
	if cert := w.node().clientCert; cert != nil {
		c.Certificates = []tls.Certificate{*cert}
	}
	return c
}

func (w *World) serverAnswers(server, method, path string, code int) error {
	return w.serverAnswersText(server, method, path, code, "")
}

// serverAnswersText checks a server's answer: its code and, when text is given, its whole body.
func (w *World) serverAnswersText(server, method, path string, code int, text string) error {
	got, body, err := w.serverRequest(server, method, path)
	if err != nil {
		return fmt.Errorf("%s %s on the %s server: %w\n%s", method, path, server, err, w.agentOutput())
	}
	if got != code || (text != "" && strings.TrimSpace(string(body)) != text) {
		return fmt.Errorf("%s %s on the %s server: %d %q, want %d %q", method, path, server, got, body, code, text)
	}
	return nil
}

// serverAnswersNot checks a server answers a request with another code than code: an endpoint that
// is served may still find nothing to answer with, where a disabled one refuses.
func (w *World) serverAnswersNot(server, method, path string, code int) error {
	got, body, err := w.serverRequest(server, method, path)
	if err != nil {
		return fmt.Errorf("%s %s on the %s server: %w\n%s", method, path, server, err, w.agentOutput())
	}
	if got == code {
		return fmt.Errorf("%s %s on the %s server: %d %q", method, path, server, got, body)
	}
	return nil
}

// blockSample is a line of a Go block profile (debug=1) recording one place that blocked.
var blockSample = regexp.MustCompile(`(?m)^\d+ \d+ @( 0x[0-9a-f]+)+$`)

// blockProfile reads the HTTPS server's /debug/pprof/block: an agent's goroutines block on their
// timers and channels all the time, so under block profiling samples come within seconds.
func (w *World) blockProfile(when string) error {
	var secs int
	if _, err := fmt.Sscanf(strings.TrimPrefix(strings.TrimPrefix(when, "within "), "after "), "%ds", &secs); err != nil {
		return err
	}
	sampled := func() (bool, string, error) {
		code, body, err := w.serverRequest("HTTPS", http.MethodGet, "/debug/pprof/block?debug=1")
		if err == nil && code != http.StatusOK {
			err = fmt.Errorf("GET /debug/pprof/block: %d %.300s", code, body)
		}
		return blockSample.Match(body), string(body), err
	}
	if strings.HasPrefix(when, "within") {
		return eventually(time.Duration(secs)*time.Second, func() error {
			got, body, err := sampled()
			if err == nil && !got {
				err = fmt.Errorf("the block profile has no sample:\n%.400s", body)
			}
			return err
		})
	}
	time.Sleep(time.Duration(secs) * time.Second)
	got, body, err := sampled()
	if err == nil && got {
		err = fmt.Errorf("the block profile has samples without --contention-profiling:\n%.400s", body)
	}
	return err
}

// nothingListens checks the port the step would have given the server refuses connections.
func (w *World) nothingListens(server string) error {
	n := w.node()
	if n.ports[server] != 0 {
		return fmt.Errorf("the %s server was given port %d", server, n.ports[server])
	}
	port, err := w.disabledPort(server)
	if err != nil {
		return err
	}
	c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), time.Second)
	if err == nil {
		c.Close()
		return fmt.Errorf("something listens on %d, the port the %s server would have had", port, server)
	}
	return nil
}

// disabledPort is the free port agentRuns passed before the scenario's own option turned the server
// off: it is on the agent's command line.
func (w *World) disabledPort(server string) (int, error) {
	args := w.node().agent.cmd.Args
	prefix := w.agent().OptionName(portOption[server]) + "="
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, prefix); ok && v != "0" {
			return strconv.Atoi(v)
		}
	}
	return 0, fmt.Errorf("the agent's command line gives the %s server no port", server)
}

// idleConnection makes one HTTP/1.1 request on a kept-alive TLS connection, leaves the connection
// idle, then reads: the server closed it if the read ends at once.
func (w *World) idleConnection(seconds int, outcome string) error {
	n := w.node()
	cfg := w.clientTLS()
	cfg.NextProtos = []string{"http/1.1"}
	conn, err := tls.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", n.ports["HTTPS"]), cfg)
	if err != nil {
		return err
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"); err != nil {
		return err
	}
	r := bufio.NewReader(conn)
	resp, err := http.ReadResponse(r, nil)
	if err != nil {
		return err
	}
	if _, err := drain(resp.Body); err != nil {
		return err
	}
	time.Sleep(time.Duration(seconds) * time.Second)
	_ = conn.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	_, err = r.ReadByte()
	var ne net.Error
	open := errors.As(err, &ne) && ne.Timeout()
	switch {
	case outcome == "closed" && open:
		return fmt.Errorf("the connection is still open after %ds idle", seconds)
	case outcome == "still open" && !open:
		return fmt.Errorf("the connection was closed within %ds idle: %v", seconds, err)
	}
	return nil
}

// foreignContainer runs a pod sandbox and a container in the runtime through its CRI socket, as
// another client of the runtime would, and remembers the container's id.
func (w *World) foreignContainer(name string) error {
	endpoint, _ := w.runtimeFields("runtime")
	conn, err := grpc.NewClient("unix://"+strings.TrimPrefix(endpoint, "unix://"), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), target.CommandTimeout)
	defer cancel()
	rt, img := runtimeapi.NewRuntimeServiceClient(conn), runtimeapi.NewImageServiceClient(conn)
	image := &runtimeapi.ImageSpec{Image: "conformance/foreign:1"}
	if _, err := img.PullImage(ctx, &runtimeapi.PullImageRequest{Image: image}); err != nil {
		return err
	}
	sbConfig := &runtimeapi.PodSandboxConfig{Metadata: &runtimeapi.PodSandboxMetadata{Name: name, Namespace: "elsewhere", Uid: name + "-uid"}}
	sb, err := rt.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: sbConfig})
	if err != nil {
		return err
	}
	c, err := rt.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: sb.PodSandboxId, SandboxConfig: sbConfig,
		Config: &runtimeapi.ContainerConfig{Metadata: &runtimeapi.ContainerMetadata{Name: name}, Image: image}})
	if err != nil {
		return err
	}
	if _, err := rt.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: c.ContainerId}); err != nil {
		return err
	}
	_, last, err := w.callsSince("runtime", "*", 0)
	n := w.node()
	n.foreign, n.foreignSeq = append(n.foreign, c.ContainerId, sb.PodSandboxId), last
	return err
}

// foreignStillRuns lets the agent run for a few relist periods, then checks the runtime still runs
// the container and no call of the agent named it or its sandbox.
func (w *World) foreignStillRuns(name string, seconds int) error {
	time.Sleep(time.Duration(seconds) * time.Second)
	s, err := w.runtimeState()
	if err != nil {
		return err
	}
	if _, ok := s.runningContainer(name, name); !ok {
		return fmt.Errorf("the runtime no longer runs the container %s", name)
	}
	cs, _, err := w.callsSince("runtime", "*", w.node().foreignSeq)
	if err != nil {
		return err
	}
	for _, c := range cs {
		if strings.HasPrefix(c.Method, "List") || strings.HasSuffix(c.Method, "Status") {
			continue
		}
		for _, id := range w.node().foreign {
			if strings.Contains(c.Request, id) {
				return fmt.Errorf("the agent called %s on %s: %s", c.Method, name, c.Request)
			}
		}
	}
	return nil
}

// writesEventCreations is the premise of the event rate scenarios: the agent writes each event it
// creates on its output (eventLog "output"). A log of Kubernetes' event broadcaster (eventLog
// "klog") shows every event recorded, before the limit on their creation (the kubelet's is its API
// client's rate): no rate can be read from it.
func (w *World) writesEventCreations() error {
	if w.agent().EventLog != target.EventLogOutput {
		return w.notApplicable("the agent's log (eventLog klog) shows the events it records before their creation is rate-limited")
	}
	return nil
}

// createdEventTimes reads the event creations the agent wrote on its output (the profile's
// eventLog "output"), in order, as the event times the agent stamped them with.
func (w *World) createdEventTimes() ([]time.Time, error) {
	var out []time.Time
	for _, line := range strings.Split(w.node().agent.out.output(), "\n") {
		if !strings.HasPrefix(line, "{") {
			continue
		}
		var write struct {
			Verb  string `json:"verb"`
			Event struct {
				EventTime time.Time `json:"eventTime"`
			} `json:"event"`
		}
		if err := json.Unmarshal([]byte(line), &write); err != nil {
			return nil, fmt.Errorf("an event line that is not JSON: %w: %s", err, line)
		}
		if write.Verb == "create" {
			out = append(out, write.Event.EventTime)
		}
	}
	return out, nil
}

// eventsKeepTo checks the creations against a token bucket of burst and qps: no window holds more
// than burst + qps x its length (one more for the clock's rounding), and, as the scenario makes
// events faster than qps throughout, the first burst go through at once and the rest at qps.
func (w *World) eventsKeepTo(burst, qps int) error {
	ts, err := w.createdEventTimes()
	if err != nil {
		return err
	}
	if len(ts) <= burst {
		return fmt.Errorf("%d events created, want more than the burst of %d to tell the rate", len(ts), burst)
	}
	for i := range ts {
		for j := i; j < len(ts); j++ {
			allowed := float64(burst) + float64(qps)*ts[j].Sub(ts[i]).Seconds() + 1
			if float64(j-i+1) > allowed {
				return fmt.Errorf("%d events created between %s and %s, more than a burst of %d and %d per second allow",
					j-i+1, ts[i].Format(time.StampMicro), ts[j].Format(time.StampMicro), burst, qps)
			}
		}
	}
	if first := ts[burst-1].Sub(ts[0]); first > time.Second {
		return fmt.Errorf("the first %d events took %s: not a burst", burst, first)
	}
	span := ts[len(ts)-1].Sub(ts[0]).Seconds()
	if want := float64(burst) + float64(qps)*span - 2; float64(len(ts)) < want {
		return fmt.Errorf("%d events created over %.1fs, fewer than a burst of %d and %d per second give (%.0f)", len(ts), span, burst, qps, want)
	}
	return nil
}
