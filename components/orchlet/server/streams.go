package server

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/benbjohnson/clock"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/proxy"
	"k8s.io/cri-streaming/pkg/streaming"
	"k8s.io/cri-streaming/pkg/streaming/portforward"
	"k8s.io/cri-streaming/pkg/streaming/remotecommand"
)

// StreamOptions are the streams an exec or attach asks for (the query's input, output, error and
// tty, as the kubelet reads them).
type StreamOptions = remotecommand.Options

// Streams asks the container runtime for the one-time URL of its streaming server that serves an
// exec, attach or port-forward (the CRI's Exec, Attach and PortForward calls); the server proxies
// the client's upgraded connection there, as the kubelet does. uid, when the path names one, must
// be the pod's. Errors wrap ErrNotFound for a pod or container the agent does not run; an error
// carrying a gRPC status is answered as the kubelet answers it.
type Streams interface {
	GetExec(ctx context.Context, namespace, pod, uid, container string, cmd []string, opts StreamOptions) (*url.URL, error)
	GetAttach(ctx context.Context, namespace, pod, uid, container string, opts StreamOptions) (*url.URL, error)
	GetPortForward(ctx context.Context, namespace, pod, uid string, ports []int32) (*url.URL, error)
	// RunInContainer runs cmd to its end and answers what it wrote, standard output then
	// standard error (the kubelet's /run).
	RunInContainer(ctx context.Context, namespace, pod, uid, container string, cmd []string) ([]byte, error)
}

// streamPaths installs /exec, /attach, /portForward and /run with and without the pod's UID, in
// the kubelet's methods.
func (h *handlers) streamPaths(mux *http.ServeMux) {
	for _, method := range []string{"GET", "POST"} {
		for _, uid := range []string{"", "/{uid}"} {
			mux.HandleFunc(method+" /exec/{namespace}/{pod}"+uid+"/{container}", h.exec)
			mux.HandleFunc(method+" /attach/{namespace}/{pod}"+uid+"/{container}", h.attach)
			mux.HandleFunc(method+" /portForward/{namespace}/{pod}"+uid, h.portForward)
		}
	}
	mux.HandleFunc("POST /run/{namespace}/{pod}/{container}", h.run)
	mux.HandleFunc("POST /run/{namespace}/{pod}/{uid}/{container}", h.run)
}

func (h *handlers) exec(w http.ResponseWriter, r *http.Request) {
	opts, err := remotecommand.NewOptions(r)
	if err != nil {
		writeText(w, http.StatusBadRequest, err.Error())
		return
	}
	u, err := h.deps.Streams.GetExec(r.Context(), r.PathValue("namespace"), r.PathValue("pod"), r.PathValue("uid"), r.PathValue("container"), r.URL.Query()["command"], *opts)
	h.proxyStream(w, r, u, err)
}

func (h *handlers) attach(w http.ResponseWriter, r *http.Request) {
	opts, err := remotecommand.NewOptions(r)
	if err != nil {
		writeText(w, http.StatusBadRequest, err.Error())
		return
	}
	u, err := h.deps.Streams.GetAttach(r.Context(), r.PathValue("namespace"), r.PathValue("pod"), r.PathValue("uid"), r.PathValue("container"), *opts)
	h.proxyStream(w, r, u, err)
}

func (h *handlers) portForward(w http.ResponseWriter, r *http.Request) {
	// Over SPDY the ports come in each stream's headers; over WebSocket in the query.
	opts, err := portforward.NewV4Options(r)
	if err != nil {
		writeText(w, http.StatusBadRequest, err.Error())
		return
	}
	u, err := h.deps.Streams.GetPortForward(r.Context(), r.PathValue("namespace"), r.PathValue("pod"), r.PathValue("uid"), opts.Ports)
	h.proxyStream(w, r, u, err)
}

// run answers a command's output in one body; for legacy reasons its command is the query's cmd
// split at spaces, as the kubelet's.
func (h *handlers) run(w http.ResponseWriter, r *http.Request) {
	cmd := strings.Split(r.URL.Query().Get("cmd"), " ")
	out, err := h.deps.Streams.RunInContainer(r.Context(), r.PathValue("namespace"), r.PathValue("pod"), r.PathValue("uid"), r.PathValue("container"), cmd)
	if err != nil {
		writeError(w, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	w.Write(out)
}

// proxyStream proxies the upgraded connection to the runtime's URL, as the kubelet's proxyStream;
// a request that is no upgrade is refused. The client's connection is closed once no byte has
// crossed it either way for --streaming-connection-idle-timeout, and at the latest
// MaxConnectionAge after the upgrade.
func (h *handlers) proxyStream(w http.ResponseWriter, r *http.Request, u *url.URL, err error) {
	if err != nil {
		if errors.Is(err, ErrNotFound) {
			writeText(w, http.StatusNotFound, err.Error())
			return
		}
		streaming.WriteError(err, w)
		return
	}
	handler := proxy.NewUpgradeAwareHandler(u, nil, false, true, streamResponder{})
	handler.ServeHTTP(&idleHijacker{ResponseWriter: w, clk: h.deps.Clock, idle: h.idle}, r)
}

// streamResponder answers a failed proxying: 400 for a request that is no upgrade, 500 for a
// runtime that cannot be reached.
type streamResponder struct{}

func (streamResponder) Error(w http.ResponseWriter, _ *http.Request, err error) {
	code := http.StatusInternalServerError
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		code = int(status.Status().Code)
	}
	writeText(w, code, err.Error())
}

// idleHijacker hands the proxy a connection that closes itself when idle or too old.
type idleHijacker struct {
	http.ResponseWriter
	clk  clock.Clock
	idle time.Duration
}

func (h *idleHijacker) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	conn, rw, err := http.NewResponseController(h.ResponseWriter).Hijack()
	if err != nil {
		return nil, nil, err
	}
	return newIdleConn(conn, h.clk, h.idle), rw, nil
}

// idleConn closes the connection after idle without a read or write returning data (0: never)
// and after MaxConnectionAge in any case; the timers run on the injected clock.
type idleConn struct {
	net.Conn
	age *clock.Timer

	mu    sync.Mutex
	timer *clock.Timer
	idle  time.Duration
}

func newIdleConn(conn net.Conn, clk clock.Clock, idle time.Duration) *idleConn {
	c := &idleConn{Conn: conn, idle: idle}
	c.age = clk.AfterFunc(MaxConnectionAge, func() { conn.Close() })
	if idle > 0 {
		c.timer = clk.AfterFunc(idle, func() { conn.Close() })
	}
	return c
}

func (c *idleConn) active(n int) {
	if n == 0 || c.timer == nil {
		return
	}
	c.mu.Lock()
	c.timer.Reset(c.idle)
	c.mu.Unlock()
}

func (c *idleConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.active(n)
	return n, err
}

func (c *idleConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	c.active(n)
	return n, err
}

// streamRecord is the most the agent writes to a stream's client at once: a TLS record's 16 KiB
// of plaintext less the 4-byte header of the WebSocket frame the API server puts each record it
// reads in when it tunnels a port-forward to kubectl, so that frame is one record and one write
// there too. A 16 KiB record became a full record and one of 4 bytes there.
const streamRecord = 16<<10 - 4

// ReadFrom copies the runtime's side of a stream to the client (the proxy's io.Copy finds it) in
// writes of at most streamRecord. Its buffer of two records is about io.Copy's 32 KiB, which each
// open stream holds while it waits to read: four held 32 KiB more a stream.
func (c *idleConn) ReadFrom(r io.Reader) (int64, error) {
	buf := make([]byte, 2*streamRecord)
	var total int64
	for {
		n, err := r.Read(buf)
		for p := buf[:n]; len(p) > 0; {
			w, werr := c.Write(p[:min(len(p), streamRecord)])
			total += int64(w)
			if werr != nil {
				return total, werr
			}
			p = p[w:]
		}
		if err == io.EOF {
			return total, nil
		}
		if err != nil {
			return total, err
		}
	}
}

func (c *idleConn) Close() error {
	c.age.Stop()
	if c.timer != nil {
		c.mu.Lock()
		c.timer.Stop()
		c.mu.Unlock()
	}
	return c.Conn.Close()
}
