package sim

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand"
	"net"
	"net/http"
	"os"
	goruntime "runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"

	"orch.io/orch/components/apiserver/registry/generic"
	"orch.io/orch/components/apiserver/server"
	"orch.io/orch/components/apiserver/storage"
	"orch.io/orch/components/apiserver/storage/memory"
	"orch.io/orch/components/authn"
	"orch.io/orch/components/authz"
	"orch.io/orch/components/orchlet/apiclient"
	"orch.io/orch/components/orchlet/apipods"
	"orch.io/orch/components/orchlet/cm"
	"orch.io/orch/components/orchlet/nodestatus"
	"orch.io/orch/sim/apiwire"
)

// KindAPI lines are a node's requests to the world's API server and their answers.
const KindAPI = "api"

// apiNodeName is the trace's node column for what the world itself asks of the API server.
const apiNodeName = "api"

// simHost is the API server's address in the clients' configurations; nothing listens there.
const simHost = "http://apiserver.sim"

// nodeMemory is every simulated node's memory capacity.
var nodeMemory = resource.MustParse("8Gi")

// apiServer is orch-apiserver's real handler over memory storage on the world's clock, called
// in-process by the nodes' clients.
type apiServer struct {
	handler  http.Handler
	store    *memory.Store
	stopping chan struct{}
	admin    kubernetes.Interface
	// pods is a watch of every pod in storage, read by the driver at settled points only.
	pods   <-chan storage.WatchEvent
	cancel context.CancelFunc

	down   atomic.Bool
	turns  turnstile
	mu     sync.Mutex
	counts map[request]uint64
}

// request is a request's verb and resource, by which they are counted.
type request struct{ verb, resource string }

// newAPIServer serves the API on memory storage, every source of randomness seeded.
func newAPIServer(w *World) (*apiServer, error) {
	store := memory.New(w.Clock)
	rnd := rand.New(rand.NewSource(w.seed))
	var rndMu sync.Mutex // draws are made in the simulation's order (see stepAPIs); the lock keeps -race quiet about the goroutines
	draw := func(f func() string) string {
		rndMu.Lock()
		defer rndMu.Unlock()
		return f()
	}
	newUID := func() types.UID {
		return types.UID(draw(func() string {
			b := make([]byte, 16)
			rnd.Read(b)
			return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
		}))
	}
	suffix := func() string {
		return draw(func() string {
			const alphabet = "bcdfghjklmnpqrstvwxz2456789"
			b := make([]byte, 5)
			for i := range b {
				b[i] = alphabet[rnd.Intn(len(alphabet))]
			}
			return string(b)
		})
	}
	a := &apiServer{store: store, stopping: make(chan struct{}), counts: map[request]uint64{}}
	h, err := server.New(server.Config{
		Clock: w.Clock, Storage: store, EventTTL: time.Hour,
		Authenticator: authn.Anonymous(), Authorizer: authz.AlwaysAllow(),
		MinRequestTimeout: 30 * time.Minute, BookmarkInterval: time.Minute,
		Jitter: func() float64 { return 0 }, NewUID: newUID, NameSuffix: suffix,
		Version: version.Info{GitVersion: "v0.0.0-sim"}, Stopping: a.stopping, Terminating: a.stopping,
	})
	if err != nil {
		_ = store.Close()
		return nil, fmt.Errorf("sim: API server: %w", err)
	}
	a.handler = h
	ctx, cancel := context.WithCancel(context.Background())
	a.cancel = cancel
	if a.pods, err = store.WatchWithBuffer(ctx, generic.KeyRoot(corev1.Resource("pods")), 0, 1<<16); err != nil {
		cancel()
		_ = store.Close()
		return nil, fmt.Errorf("sim: API server: %w", err)
	}
	a.admin, err = kubernetes.NewForConfig(a.config(w, nil))
	if err != nil {
		return nil, err
	}
	return a, nil
}

func (a *apiServer) close() {
	close(a.stopping)
	a.cancel()
	_ = a.store.Close()
}

// config is a client configuration whose requests run the handler in-process; a node's are traced
// as its own. No rate limit: --kube-api-qps would wait on the wall clock.
func (a *apiServer) config(w *World, n *Node) *rest.Config {
	return &rest.Config{
		Host: simHost, Transport: roundTripper{api: a, world: w, node: n},
		RateLimiter: flowcontrol.NewFakeAlwaysRateLimiter(),
	}
}

// Counts are the requests the API server answered (or refused while down), by "verb resource".
func (a *apiServer) Counts() map[string]uint64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make(map[string]uint64, len(a.counts))
	for k, v := range a.counts {
		out[k.verb+" "+k.resource] = v
	}
	return out
}

// roundTripper serves a request with the handler on the calling goroutine: the driver's, or one of
// stepAPIs' in the order it keeps, so the order of requests that matter, and of every uid they
// make, is the simulation's. Watches are not served: the world hands pod changes to the nodes
// itself (see the package doc).
type roundTripper struct {
	api   *apiServer
	world *World
	node  *Node
}

func (t roundTripper) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		defer r.Body.Close() // the handler has read it by then
	}
	verb, resource, target := describe(r)
	t.api.mu.Lock()
	t.api.counts[request{verb, resource}]++
	t.api.mu.Unlock()
	if verb == "watch" {
		return nil, fmt.Errorf("sim: watches are not served in-process (%s)", r.URL)
	}
	if t.node != nil && !ownHeartbeat(verb, resource) {
		t.api.turns.wait(t.node)
	}
	if t.api.down.Load() {
		t.trace(verb, resource, target, "connection refused")
		return nil, &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	}
	req := r.Clone(r.Context())
	switch {
	case r.Body == nil:
		req.Body = http.NoBody
	case r.ContentLength <= 0 && r.Body != http.NoBody:
		// A body of unknown length (client-go's are sized): read, as a server would have it framed.
		body, err := io.ReadAll(r.Body)
		if err != nil {
			return nil, err
		}
		req.Body, req.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
	}
	req.RemoteAddr = "10.0.0.1:1"
	rec := newRecorder()
	t.api.handler.ServeHTTP(rec, req)
	resp := rec.result(r)
	text, name := answer(resource, rec.code, rec.body.Bytes(), t.world)
	if verb == "create" && name != "" {
		target = name
	}
	t.trace(verb, resource, target, text)
	return resp, nil
}

// recorder is the handler's ResponseWriter, as httptest.ResponseRecorder is (the code, the header
// as written with the code, Content-Type sniffed when unset, the body) without what the simulator
// paid for and never read: a copy of the header at WriteHeader and another in Result, and a body
// buffer grown from nothing at every request (recorders' buffers are pooled: a response's body
// goes back when the client closes it, client-go having read it). The response's body is part of
// the recorder, not an allocation of its own.
type recorder struct {
	header  http.Header // the handler's; at WriteHeader, the response's, then nil until asked for
	written http.Header // the header as written, nil before
	code    int
	body    *bytes.Buffer
	answer  pooledBody
}

var bodies = sync.Pool{New: func() any { return new(bytes.Buffer) }}

func newRecorder() *recorder {
	return &recorder{header: http.Header{}, body: bodies.Get().(*bytes.Buffer)}
}

func (w *recorder) Header() http.Header {
	if w.header == nil {
		w.header = http.Header{}
	}
	return w.header
}

func (w *recorder) WriteHeader(code int) {
	if w.written != nil {
		return
	}
	if code < 100 || code > 999 {
		panic(fmt.Sprintf("invalid WriteHeader code %v", code))
	}
	// The header is the response's from here on: as a server's, what the handler sets after
	// is not sent. Header makes one of its own to write to, should the handler ask (few do).
	w.code, w.written, w.header = code, w.header, nil
}

func (w *recorder) Write(b []byte) (int, error) {
	if w.written == nil {
		if w.header.Get("Content-Type") == "" && w.header.Get("Transfer-Encoding") == "" {
			w.header.Set("Content-Type", http.DetectContentType(b))
		}
		w.WriteHeader(http.StatusOK)
	}
	return w.body.Write(b)
}

func (w *recorder) Flush() {
	if w.written == nil {
		w.WriteHeader(http.StatusOK)
	}
}

// result is the response, as ResponseRecorder.Result makes it, to r.
func (w *recorder) result(r *http.Request) *http.Response {
	if w.written == nil {
		w.WriteHeader(http.StatusOK)
	}
	length := int64(-1)
	if v := w.written.Get("Content-Length"); v != "" {
		if n, err := strconv.ParseInt(v, 10, 64); err == nil && n >= 0 {
			length = n
		}
	}
	body := &w.answer
	body.buf = w.body
	body.Reset(w.body.Bytes())
	return &http.Response{
		Status: statusLine(w.code), StatusCode: w.code,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: w.written, ContentLength: length, Request: r, Body: body,
	}
}

// statusLine is a response's Status as net/http makes it; the two every heartbeat answers with
// are not built again at each request.
func statusLine(code int) string {
	switch code {
	case http.StatusOK:
		return "200 OK"
	case http.StatusCreated:
		return "201 Created"
	}
	return strconv.Itoa(code) + " " + http.StatusText(code)
}

// pooledBody hands its buffer back to the pool at the first Close; nothing reads it after. Its
// reader is its own, not another allocation.
type pooledBody struct {
	bytes.Reader
	buf *bytes.Buffer
}

func (b *pooledBody) Close() error {
	if b.buf != nil {
		b.buf.Reset()
		bodies.Put(b.buf)
		b.buf = nil
		b.Reset(nil)
	}
	return nil
}

func (t roundTripper) trace(verb, resource, target, text string) {
	// Every request's line: concatenated, not formatted (fmt boxed each string and the node's
	// observer formatted the line again).
	line := verb + " " + resource + " " + target + " -> " + text
	if t.node != nil {
		t.node.obs.addText(KindAPI, line)
		return
	}
	t.world.record(Entry{At: t.world.Now(), Node: apiNodeName, Kind: KindAPI, Text: line})
}

// describe names a request as the API server's metrics do: its verb, resource (with the
// subresource), and the namespace/name it targets.
func describe(r *http.Request) (verb, resource, target string) {
	path := strings.Trim(r.URL.Path, "/")
	var buf [8]string // the path's segments, on the stack for any request the API has
	parts := buf[:0]
	for rest := path; ; {
		segment, after, more := strings.Cut(rest, "/")
		if parts = append(parts, segment); !more {
			break
		}
		rest = after
	}
	switch {
	case len(parts) >= 2 && parts[0] == "api":
		parts = parts[2:]
	case len(parts) >= 3 && parts[0] == "apis":
		parts = parts[3:]
	default:
		return strings.ToLower(r.Method), path, ""
	}
	namespace := ""
	if len(parts) >= 3 && parts[0] == "namespaces" {
		namespace, parts = parts[1], parts[2:]
	}
	name := ""
	if len(parts) > 0 {
		resource = parts[0]
	}
	if len(parts) > 1 {
		name = parts[1]
	}
	if len(parts) > 2 {
		resource += "/" + parts[2]
	}
	switch r.Method {
	case http.MethodGet:
		switch {
		case r.URL.Query().Get("watch") == "true" || r.URL.Query().Get("watch") == "1":
			verb = "watch"
		case name == "":
			verb = "list"
		default:
			verb = "get"
		}
	case http.MethodPost:
		verb = "create"
	case http.MethodPut:
		verb = "update"
	case http.MethodPatch:
		verb = "patch"
	case http.MethodDelete:
		verb = "delete"
	default:
		verb = strings.ToLower(r.Method)
	}
	target = name
	if namespace != "" && name != "" {
		target = namespace + "/" + name
	} else if namespace != "" {
		target = namespace
	}
	return verb, resource, target
}

// answer is the trace's summary of a response: the code, then what changed that the trace follows
// (a node's Ready condition, a lease's renewal, a pod's status) or the error's message; and the
// name of the object answered, for a create, whose request does not say it.
func answer(resource string, code int, body []byte, w *World) (text, name string) {
	switch code { // the heartbeats' codes not made again at every request
	case http.StatusOK:
		text = "200"
	case http.StatusCreated:
		text = "201"
	default:
		text = strconv.Itoa(code)
	}
	if code >= 300 {
		var st metav1.Status
		if decode(body, &st) && st.Message != "" {
			text += " " + st.Message
		}
		return text, ""
	}
	// A heartbeat's summary is appended in one buffer on the stack, made a string once.
	var buf [128]byte
	switch resource {
	case "nodes", "nodes/status":
		var condBuf [8]apiwire.Condition // a node's conditions, without growing a slice for them
		n, conds, ok := apiwire.Node(body, condBuf[:0])
		if !ok {
			var node corev1.Node
			if ok = decode(body, &node); ok {
				n = node.Name
				for _, c := range node.Status.Conditions {
					conds = append(conds, apiwire.Condition{Type: string(c.Type), Status: string(c.Status), Since: c.LastTransitionTime.Time})
				}
			}
		}
		if ok {
			name = n
			t := append(buf[:0], text...)
			for _, c := range conds {
				if c.Type == string(corev1.NodeReady) || c.Status == string(corev1.ConditionTrue) {
					// Ready always; a pressure condition while it holds.
					t = append(append(append(append(append(t, ' '), c.Type...), '='), c.Status...), " since "...)
					t = appendOffset(t, c.Since.Sub(w.start))
				}
			}
			text = string(t)
		}
	case "leases":
		namespace, n, renew, ok := apiwire.Lease(body)
		if !ok {
			var l coordinationv1.Lease
			if ok = decode(body, &l); ok {
				namespace, n = l.Namespace, l.Name
				if renew = nil; l.Spec.RenewTime != nil {
					renew = &l.Spec.RenewTime.Time
				}
			}
		}
		if ok && renew != nil {
			name = namespace + "/" + n
			text = string(appendOffset(append(append(buf[:0], text...), " renewed "...), renew.Sub(w.start)))
		}
	case "pods", "pods/status":
		var p corev1.Pod
		if decode(body, &p) {
			name = p.Namespace + "/" + p.Name
			if resource == "pods/status" {
				text += " " + podSummary(&p)
			}
		}
	}
	return text, name
}

// decode reads an answer in JSON or in the protobuf envelope into obj.
func decode(body []byte, obj interface{ Unmarshal([]byte) error }) bool {
	if rest, ok := bytes.CutPrefix(body, apiwire.Magic); ok {
		var u runtime.Unknown
		return u.Unmarshal(rest) == nil && obj.Unmarshal(u.Raw) == nil
	}
	return json.Unmarshal(body, obj) == nil
}

// apiNode is what API-server mode adds to a node: its Node and Lease, its pods from the API. The
// driver steps them on the schedule nodestatus.Controller.Run and apipods.Syncer.Run keep.
type apiNode struct {
	status *nodestatus.Controller
	pods   *apipods.Syncer
	// synced is the API source's readiness: set once the world has handed the node the pods
	// bound to it, while the API server is up.
	synced atomic.Bool

	registered bool
	backoff    time.Duration
	registerAt time.Time
	// since is the registration: the status and lease tickers start there.
	since             time.Time
	statusAt, leaseAt time.Time
	syncAt            time.Time
	// poked says a pod change was handed over since the last Sync; podsVersion is the pod
	// workers' PodsVersion at the last Sync.
	poked       bool
	podsVersion uint64
	// relist says the agent was restarted and has not yet listed its pods, as its informer does
	// first (retried at listAt); listed is the list's revision, up to which the world's pod
	// changes were in it and are not handed over again.
	relist bool
	listAt time.Time
	listed int64
}

// attachAPI wires node n, the world's i-th, to the world's API server, as the orchlet app's
// API-server mode does; again to a restarted agent.
func (w *World) attachAPI(n *Node, i, cores int, ignoreEviction bool) error {
	if w.api == nil {
		return fmt.Errorf("sim: node %s: API-server mode needs a world with Options.APIServer", n.Name)
	}
	cfg := n.Config
	clients, err := apiclient.New(w.api.config(w, n), apiclient.Settings{ContentType: cfg.ContentType, UserAgent: "orchlet/v0.0.0-sim"})
	if err != nil {
		return fmt.Errorf("sim: node %s: %w", n.Name, err)
	}
	// The Node's capacity and allocatable as the orchlet app computes them: the reservations and
	// the hard eviction thresholds held back.
	res, err := cm.NodeResources(cfg, ignoreEviction, cm.Machine{Cores: cores, Memory: nodeMemory.Value()})
	if err != nil {
		return fmt.Errorf("sim: node %s: %w", n.Name, err)
	}
	capacity, allocatable := nodestatus.CapacityAndAllocatable(cfg, cores, res)
	a := &apiNode{backoff: nodestatus.RegisterBackoffStart, registerAt: w.Clock.Now(), syncAt: w.Clock.Now()}
	a.status = nodestatus.New(nodestatus.Options{
		Clock: w.Clock, Core: clients.Core, Heartbeat: clients.Heartbeat, Leases: clients.Leases, Node: n.Name,
		Register: cfg.RegisterNode, Taints: cfg.RegisterWithTaints, ControllerAttachDetach: cfg.EnableControllerAttach,
		Labels: map[string]string{"orch.io/hostname": n.Name, "orch.io/os": "linux", "orch.io/arch": "amd64"},
		Addresses: []corev1.NodeAddress{
			{Type: corev1.NodeInternalIP, Address: fmt.Sprintf("10.%d.%d.%d", 1+i>>16, i>>8&0xff, i&0xff)},
			{Type: corev1.NodeHostName, Address: n.Name},
		},
		Capacity: capacity, Allocatable: allocatable, Port: cfg.Port,
		StatusFrequency: cfg.NodeStatusUpdateFrequency.Duration, MaxImages: cfg.NodeStatusMaxImages,
		Runtime: n.cri, Images: n.cri, Version: "v0.0.0-sim", Logger: w.logger,
		Pressure: n.Agent.Pressure,
	})
	a.pods = apipods.New(apipods.Options{
		Clock: w.Clock, Core: clients.Core, Node: n.Name, Workers: n.Agent.Pods, Logger: w.logger,
		NodeUID: func() types.UID { return types.UID(a.status.NodeUID()) },
	})
	n.api = a
	return nil
}

// stepAPIs runs stepAPI for every node of live at once, in as many goroutines as the process has
// processors (when heartbeats of several nodes are due), and reports whether any node made a
// request. The handler serves requests from any
// goroutine; what must not depend on the scheduler is kept from it: a request that another node's
// could see or that draws on the world's seed (every create, and anything but a read or update of
// a node's own Node or Lease) waits for its turn (see turnstile), so those run in node order as
// they did on the driver alone; the reads and updates of a node's own Node and Lease meet no other
// node's, and only the revisions they are stored at (which nothing in the trace shows) may differ
// from one run to the next.
func (w *World) stepAPIs(live []*Node) bool {
	workers := 0
	if w.api != nil {
		// Only an instant with heartbeats of several nodes due is worth the goroutines: the
		// pods' Sync every second of every node is mostly no request, and a create waits its turn.
		now := w.Clock.Now()
		for _, n := range live {
			if n.api != nil && !n.apiQuiet(now) && n.api.heartbeatDue(now) {
				workers++
			}
		}
		workers = min(workers, goruntime.GOMAXPROCS(0))
	}
	if workers < 2 {
		did := false
		for _, n := range live {
			did = w.stepAPI(n) || did
		}
		return did
	}
	t := &w.api.turns
	t.start(live)
	var next atomic.Int64
	var made atomic.Bool
	work := func() {
		// Nodes are taken in order, so every node before the one a worker waits on is taken by
		// a worker that runs: the turn always reaches it.
		for i := int(next.Add(1) - 1); i < len(live); i = int(next.Add(1) - 1) {
			if w.stepAPI(live[i]) {
				made.Store(true)
			}
			t.done(i)
		}
	}
	var wg sync.WaitGroup
	for range workers - 1 {
		wg.Go(work)
	}
	work() // the driver is a worker too
	wg.Wait()
	t.stop()
	return made.Load()
}

// heartbeatDue tells whether the registered node's status post or lease renewal is due now. A
// registration is creates, which wait their turn: nodes registering at once would only hand it
// from goroutine to goroutine.
func (a *apiNode) heartbeatDue(now time.Time) bool {
	return a.registered && (!now.Before(a.statusAt) || !now.Before(a.leaseAt))
}

// turnstile orders the requests of stepAPIs that must keep the order of the nodes: a node's such
// request waits until every node before it has finished its API work of this look.
type turnstile struct {
	mu       sync.Mutex
	cond     *sync.Cond
	position map[*Node]int // each node's place in this look; nil outside stepAPIs
	finished []bool
	turn     int // the first node not finished
}

func (t *turnstile) start(live []*Node) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.cond == nil {
		t.cond = sync.NewCond(&t.mu)
		t.position = map[*Node]int{}
	}
	clear(t.position)
	for i, n := range live {
		t.position[n] = i
	}
	t.finished = append(t.finished[:0], make([]bool, len(live))...)
	t.turn = 0
}

func (t *turnstile) stop() {
	t.mu.Lock()
	clear(t.position)
	t.mu.Unlock()
}

func (t *turnstile) done(i int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.finished[i] = true
	for t.turn < len(t.finished) && t.finished[t.turn] {
		t.turn++
	}
	t.cond.Broadcast()
}

// wait holds n's request until n's turn, when stepAPIs runs the nodes at once.
func (t *turnstile) wait(n *Node) {
	t.mu.Lock()
	defer t.mu.Unlock()
	i, ok := t.position[n]
	for ok && t.turn < i {
		t.cond.Wait()
	}
}

// ownHeartbeat tells the requests a node makes of its own Node and Lease alone, which need no turn.
func ownHeartbeat(verb, resource string) bool {
	return (verb == "get" || verb == "update") && (resource == "nodes" || resource == "nodes/status" || resource == "leases")
}

// stepAPI runs what of the node's API-server mode is due now: the
// registration (retried with back-off), the status post every --node-status-update-frequency and
// the lease renewal every 10s from the registration on, and the pod syncer's Sync when the pod
// workers published, a pod change was handed over, or its 1s retry is due. It reports whether a
// request was made.
func (w *World) stepAPI(n *Node) bool {
	a := n.api
	if a == nil {
		return false
	}
	now := w.Clock.Now()
	if n.apiQuiet(now) {
		return false
	}
	before := n.linesWaiting()
	if a.relist && !now.Before(a.listAt) {
		w.listPods(n)
	}
	if !a.registered && !now.Before(a.registerAt) {
		if err := a.status.Register(w.ctx); err != nil {
			a.registerAt = now.Add(a.backoff)
			a.backoff = min(2*a.backoff, nodestatus.RegisterBackoffMax)
		} else {
			a.registered, a.since, a.statusAt, a.leaseAt = true, now, now, now
		}
	}
	if a.registered && !now.Before(a.statusAt) {
		_ = a.status.SyncStatus(w.ctx) // a failure is tried again at the next period, as Run does
		a.statusAt = tick(a.since, n.Config.NodeStatusUpdateFrequency.Duration, now)
	}
	if a.registered && !now.Before(a.leaseAt) {
		_ = a.status.RenewLease(w.ctx)
		a.leaseAt = tick(a.since, nodestatus.RenewInterval, now)
	}
	v := n.podsVersionNow()
	if a.poked || v != a.podsVersion || !now.Before(a.syncAt) {
		a.poked, a.podsVersion = false, v
		a.pods.Sync(w.ctx)
		a.syncAt = tick(w.start, time.Second, now)
	}
	// Nothing is due now any more: every time a.next hands over is after now, and the pods are
	// synced up to v. While v is the workers' (pvFresh) and nothing is handed over, the node has
	// nothing to do until the earliest of those times.
	n.apiAt = 0
	if n.pvFresh {
		var at time.Time
		a.next(func(t time.Time, ok bool) {
			if ok && (at.IsZero() || t.Before(at)) {
				at = t
			}
		})
		n.apiAt = at.UnixNano()
	}
	return n.linesWaiting() != before
}

// apiQuiet tells that the node's API-server mode has nothing due at now, by what the last stepAPI
// left in apiAt, read off the Node.
func (n *Node) apiQuiet(now time.Time) bool { return n.apiAt != 0 && now.UnixNano() < n.apiAt }

// listPods lists the pods bound to a restarted node, as its informer does before it watches, and
// hands each to the pod syncer, as the informer's adds; the API source is then synced. A failed
// list is tried again a second later.
func (w *World) listPods(n *Node) {
	a := n.api
	obj, err := a.pods.ListWatch().ListWithContext(w.ctx, metav1.ListOptions{ResourceVersion: "0"})
	if err != nil {
		a.listAt = w.Clock.Now().Add(time.Second)
		return
	}
	list := obj.(*corev1.PodList)
	for i := range list.Items {
		pod := &list.Items[i]
		n.obs.add(KindSource, "api ADDED %s/%s", pod.Namespace, pod.Name)
		a.pods.Observe(pod, false)
	}
	a.listed, _ = strconv.ParseInt(list.ResourceVersion, 10, 64)
	a.relist, a.poked = false, true
	a.synced.Store(true)
}

// tick is the first tick of a ticker started at since with period p that is after now.
func tick(since time.Time, p time.Duration, now time.Time) time.Time {
	return since.Add((now.Sub(since)/p + 1) * p)
}

// next hands consider each time at which the node's API-server mode next has work due.
func (a *apiNode) next(consider func(time.Time, bool)) {
	consider(a.listAt, a.relist)
	if !a.registered {
		consider(a.registerAt, true)
	} else {
		consider(a.statusAt, true)
		consider(a.leaseAt, true)
	}
	consider(a.syncAt, true)
}

// deliver hands every pod change stored since the last look to the node the pod is bound to, in
// revision order, as the node's watch would; while the API server is down they wait.
func (w *World) deliver() bool {
	if w.api == nil || w.api.down.Load() {
		return false
	}
	did := false
	for {
		var ev storage.WatchEvent
		select {
		case ev = <-w.api.pods:
		default:
			for _, n := range w.nodes {
				if n.api != nil && !n.api.relist {
					n.api.synced.Store(true)
				}
			}
			return did
		}
		if ev.Err != nil {
			panic(fmt.Sprintf("sim: the world's watch of pods failed: %v", ev.Err))
		}
		var pod, prev corev1.Pod
		if err := json.Unmarshal(ev.KV.Value, &pod); err != nil {
			continue
		}
		if ev.PrevValue != nil {
			_ = json.Unmarshal(ev.PrevValue, &prev)
		}
		n, ok := w.Node(pod.Spec.NodeName)
		// A killed agent watches nothing; a restarted one lists its pods first, and watches from
		// there on.
		if !ok || n.api == nil || n.down || n.api.relist || ev.KV.ModRevision <= n.api.listed {
			continue
		}
		pod.ResourceVersion = fmt.Sprint(ev.KV.ModRevision)
		gone := ev.Type == storage.Delete
		what := "MODIFIED"
		switch {
		case gone:
			what = "DELETED"
		case ev.Created || prev.Spec.NodeName == "":
			what = "ADDED"
		}
		n.obs.add(KindSource, "api %s %s/%s", what, pod.Namespace, pod.Name)
		n.api.pods.Observe(&pod, gone)
		n.api.poked, n.apiAt = true, 0
		did = true
	}
}

// SetAPIServerDown takes the world's API server away (every request fails as a refused
// connection, pod changes wait) or brings it back.
func (w *World) SetAPIServerDown(down bool) error {
	if w.api == nil {
		return fmt.Errorf("sim: the world has no API server")
	}
	w.api.down.Store(down)
	state := "up"
	if down {
		state = "down"
	}
	w.record(Entry{At: w.Now(), Node: apiNodeName, Kind: KindWorld, Text: "API server " + state})
	return nil
}

// CreatePod creates a pod through the API server, as a user would; the answer is traced.
func (w *World) CreatePod(pod *corev1.Pod) error {
	if w.api == nil {
		return fmt.Errorf("sim: the world has no API server")
	}
	if pod.Namespace == "" {
		pod.Namespace = metav1.NamespaceDefault
	}
	// The answer is in the trace: a refused pod is part of the story.
	_, _ = w.api.admin.CoreV1().Pods(pod.Namespace).Create(w.ctx, pod, metav1.CreateOptions{})
	return nil
}

// BindPod binds a pod to a node through its binding subresource, as a scheduler does.
func (w *World) BindPod(namespace, name, node string) error {
	if w.api == nil {
		return fmt.Errorf("sim: the world has no API server")
	}
	// The answer is in the trace.
	_ = w.api.admin.CoreV1().Pods(namespace).Bind(w.ctx, &corev1.Binding{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Target:     corev1.ObjectReference{Kind: "Node", Name: node},
	}, metav1.CreateOptions{})
	return nil
}

// DeletePod deletes a pod through the API server with its grace period (nil: the pod's own).
func (w *World) DeletePod(namespace, name string, grace *int64) error {
	if w.api == nil {
		return fmt.Errorf("sim: the world has no API server")
	}
	// The answer is in the trace.
	_ = w.api.admin.CoreV1().Pods(namespace).Delete(w.ctx, name, metav1.DeleteOptions{GracePeriodSeconds: grace})
	return nil
}

// APIRequestCounts are the requests the world's API server was asked, by "verb resource".
func (w *World) APIRequestCounts() map[string]uint64 {
	if w.api == nil {
		return nil
	}
	return w.api.Counts()
}
