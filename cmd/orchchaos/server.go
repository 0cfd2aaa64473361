package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand"
	"net/http"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/benbjohnson/clock"

	"orch.io/orch/cmd/internal/kubepeer"
	"orch.io/orch/cmd/orchchaos/internal/eventsapi"
	apiservertest "orch.io/orch/components/apiserver/app/apptest"
	"orch.io/orch/components/freeport"
	"orch.io/orch/components/syncbuf"
)

// server is one run of orch-apiserver as a child process, or with --peer of kube-apiserver.
type server struct {
	proc   *apiservertest.Server
	cmd    *exec.Cmd
	url    string
	client *http.Client
	output *syncbuf.Buffer
	exited chan struct{}
	group  string // the events' group; "" for orch's
	caFile string // the server's certificate, trusted
	peer   *kubepeer.Peer
}

// name is the server's program.
func (s *server) name() string {
	if s.peer != nil {
		return "kube-apiserver"
	}
	return "orch-apiserver"
}

// startServer starts orch-apiserver on a free loopback port, with args added, and waits for /readyz.
func startServer(ctx context.Context, bin, dataDir string, args ...string) (*server, error) {
	port, err := freeport.Get()
	if err != nil {
		return nil, err
	}
	p, err := apiservertest.Start(ctx, apiservertest.Options{Binary: bin, DataDir: dataDir, Port: port, Args: args, Ready: 60 * time.Second, Clock: clock.New(), ClientTimeout: 10 * time.Second})
	if err != nil {
		return nil, err
	}
	return &server{proc: p, cmd: p.Cmd, url: p.URL, client: p.Client, output: p.Output, exited: p.Exited, caFile: filepath.Join(dataDir, "pki", "apiserver.crt")}, nil
}

// startPeer starts Kubernetes' kube-apiserver (bin) on an etcd of its own under dir, Events in
// Kubernetes' group.
func startPeer(ctx context.Context, bin, dir string) (*server, error) {
	peer, err := kubepeer.Start(ctx, bin, dir, "--serve-etcd", true)
	if err != nil {
		return nil, err
	}
	client, err := apiservertest.TrustingClient(peer.CAFile, 10*time.Second)
	if err != nil {
		return nil, peer.Failed(err)
	}
	client.Transport.(*http.Transport).ForceAttemptHTTP2 = true
	// The campaign writes in default, which kube-apiserver's own controller makes a moment after
	// it is ready.
	resp, err := client.Post(peer.URL+"/api/v1/namespaces", "application/json", strings.NewReader(`{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"default"}}`))
	if err != nil {
		return nil, peer.Failed(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated && resp.StatusCode != http.StatusConflict {
		return nil, peer.Failed(fmt.Errorf("creating namespace default: %d", resp.StatusCode))
	}
	return &server{cmd: peer.APIServer.Cmd, url: peer.URL, client: client, exited: peer.APIServer.Done, group: eventsapi.KubeGroup, caFile: peer.CAFile, peer: peer}, nil
}

// kill sends SIGKILL (kill -9) and waits for the process to be gone; a peer is stopped, its etcd
// with it.
func (s *server) kill() {
	if s.peer != nil {
		s.peer.Stop()
		return
	}
	s.proc.Kill()
}

// history is every write the clients issued, with what each learnt.
type history struct {
	mu    sync.Mutex
	all   []Op
	group string // the events' group; "" for orch's
}

func (h *history) ops() []Op {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]Op(nil), h.all...)
}

// write sends op and records its outcome; it returns an error when the write was refused or not
// acknowledged.
func (h *history) write(c *http.Client, base, client string, op Op) (Op, error) {
	var req *http.Request
	switch op.Verb {
	case Create:
		req, _ = http.NewRequest(http.MethodPost, eventsapi.OnGroup(base+eventsapi.Path, h.group), strings.NewReader(eventsapi.OnGroup(string(eventsapi.JSON(op.Name, op.Value, client)), h.group)))
		req.Header.Set("Content-Type", "application/json")
	case Update:
		patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]string{"value": op.Value}}, "note": op.Value})
		req, _ = http.NewRequest(http.MethodPatch, eventsapi.OnGroup(base+eventsapi.Path, h.group)+"/"+op.Name, bytes.NewReader(patch))
		req.Header.Set("Content-Type", "application/merge-patch+json")
	case Delete:
		req, _ = http.NewRequest(http.MethodDelete, eventsapi.OnGroup(base+eventsapi.Path, h.group)+"/"+op.Name, nil)
	}
	op.Outcome = Unknown
	resp, err := c.Do(req)
	if err == nil {
		body, readErr := io.ReadAll(resp.Body)
		resp.Body.Close()
		switch {
		case readErr != nil || resp.StatusCode >= 500 || resp.StatusCode == http.StatusTooManyRequests:
		case resp.StatusCode >= 400:
			op.Outcome = Refused
		default:
			var obj struct {
				Metadata struct{ ResourceVersion string }
			}
			if json.Unmarshal(body, &obj) == nil {
				op.Outcome = Acked
				op.RV, _ = strconv.ParseInt(obj.Metadata.ResourceVersion, 10, 64)
			}
		}
		if op.Outcome != Acked {
			err = fmt.Errorf("%s %s: %d %s", op.Verb, op.Name, resp.StatusCode, body)
		}
	}
	h.mu.Lock()
	h.all = append(h.all, op)
	h.mu.Unlock()
	return op, err
}

// startClients starts n clients writing, each over 4 names of its own, until the returned function
// is called. With one server a write without an answer ends the client's round (the server is being
// killed); with replicas, client i starts on replica i mod len(servers) and retries its next write
// against the next replica after a write without an answer or with a 5xx (failover).
func startClients(servers []*server, h *history, n int, seed int64, round int) func() {
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		rng := rand.New(rand.NewSource(seed + int64(i)))
		client := fmt.Sprintf("client-%d", i)
		wg.Add(1)
		go func() {
			defer wg.Done()
			failovers := 0
			for seq := 0; ; seq++ {
				select {
				case <-stop:
					return
				default:
				}
				op := Op{Name: fmt.Sprintf("c%d-n%d", i, rng.Intn(4))}
				switch r := rng.Intn(10); {
				case r < 4:
					op.Verb = Create
				case r < 8:
					op.Verb = Update
				default:
					op.Verb = Delete
				}
				if op.Verb != Delete {
					op.Value = fmt.Sprintf("%s-k%d-s%d", op.Name, round, seq)
				}
				srv := servers[(i+failovers)%len(servers)]
				if done, _ := h.write(srv.client, srv.url, client, op); done.Outcome == Unknown {
					if len(servers) == 1 {
						// No answer: the server is being killed. Write again in the next round.
						<-stop
						return
					}
					failovers++
					time.Sleep(50 * time.Millisecond)
				}
			}
		}()
	}
	return func() { close(stop); wg.Wait() }
}

// listAll reads every event as stored.
func listAll(srv *server) (map[string]Object, error) {
	items, _, err := list(srv)
	if err != nil {
		return nil, err
	}
	found := map[string]Object{}
	for _, it := range items {
		found[it.Metadata.Name] = Object{Note: it.Note, Label: it.Metadata.Labels["value"]}
	}
	return found, nil
}

func list(srv *server) ([]eventsapi.Item, int64, error) {
	return eventsapi.List(srv.client, srv.url, srv.group)
}

// watcher follows the events across kills, resuming from the last resourceVersion it saw.
type watcher struct {
	mu      sync.Mutex
	srv     *server
	events  []WatchEvent
	rv      int64
	nRelist int
	cancel  context.CancelFunc
	done    chan struct{}
}

func newWatcher(srv *server) *watcher { return &watcher{srv: srv, done: make(chan struct{})} }

func (w *watcher) start(ctx context.Context) error {
	_, rv, err := list(w.srv)
	if err != nil {
		return err
	}
	w.rv = rv
	ctx, w.cancel = context.WithCancel(ctx)
	go func() {
		defer close(w.done)
		for ctx.Err() == nil {
			w.follow(ctx)
			time.Sleep(50 * time.Millisecond)
		}
	}()
	return nil
}

func (w *watcher) stop() { w.cancel(); <-w.done }

// point moves the watcher to the restarted server.
func (w *watcher) point(srv *server) {
	w.mu.Lock()
	w.srv = srv
	w.mu.Unlock()
}

// follow watches from the last resourceVersion until the connection ends; on 410 Gone it relists.
func (w *watcher) follow(ctx context.Context) {
	w.mu.Lock()
	srv, rv := w.srv, w.rv
	w.mu.Unlock()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.url+eventsapi.Path+"?watch=true&resourceVersion="+strconv.FormatInt(rv, 10), nil)
	watchClient := &http.Client{Transport: srv.client.Transport}
	resp, err := watchClient.Do(req)
	if err != nil {
		return
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusGone {
		w.relist(srv)
		return
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var frame struct {
			Type   string
			Object struct {
				eventsapi.Item
				Code int
			}
		}
		if json.Unmarshal(sc.Bytes(), &frame) != nil {
			return
		}
		if frame.Type == "ERROR" {
			if frame.Object.Code == http.StatusGone {
				w.relist(srv)
			}
			return
		}
		evRV, _ := strconv.ParseInt(frame.Object.Metadata.ResourceVersion, 10, 64)
		w.mu.Lock()
		w.events = append(w.events, WatchEvent{Type: frame.Type, Name: frame.Object.Metadata.Name, Value: frame.Object.Note, RV: evRV})
		if evRV > w.rv {
			w.rv = evRV
		}
		w.mu.Unlock()
	}
}

func (w *watcher) relist(srv *server) {
	_, rv, err := list(srv)
	if err != nil {
		return
	}
	w.mu.Lock()
	w.events = append(w.events, WatchEvent{Relist: true, RV: rv})
	w.rv = rv
	w.nRelist++
	w.mu.Unlock()
}

// waitFor waits until the watcher has reached resourceVersion rv, by watch or by relist.
func (w *watcher) waitFor(rv int64, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		w.mu.Lock()
		reached := w.rv >= rv
		w.mu.Unlock()
		if reached {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("the watcher did not reach resourceVersion %d within %v", rv, timeout)
}

func (w *watcher) log() []WatchEvent {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]WatchEvent(nil), w.events...)
}

func (w *watcher) relists() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.nRelist
}
