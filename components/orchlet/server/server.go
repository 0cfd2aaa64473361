package server

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/benbjohnson/clock"

	"orch.io/orch/components/apis/orchlet/v1beta1"
)

// MaxConnectionAge is how long any connection to the agent's servers may live.
const MaxConnectionAge = 4 * time.Hour

// maxHeaderBytes is the kubelet's limit on request headers.
const maxHeaderBytes = 1 << 20

// Servers are the agent's HTTPS, read-only and health servers, as configured.
type Servers struct {
	clk     clock.Clock
	listen  func(network, address string) (net.Listener, error)
	servers []*server

	mu      sync.Mutex
	started bool
	serving sync.WaitGroup
	errs    chan error
}

// server is one of the three surfaces.
type server struct {
	name string
	// options are the flags that choose its address, for errors.
	options string
	address string
	http    *http.Server
	tls     bool
	limits  *connLimits
	ln      net.Listener
}

// Addresses are the bound addresses of the servers, "" for a server that is disabled.
type Addresses struct {
	HTTPS    string
	ReadOnly string
	Healthz  string
}

// New prepares the servers cfg enables; nothing listens until Start. It refuses a configuration it
// cannot honour (missing dependencies, an unreadable --client-ca-file, an unknown TLS version,
// cipher suite or authorization mode, a webhook without an API server), naming the option.
func New(cfg *v1beta1.OrchletConfiguration, deps Deps) (*Servers, error) {
	if err := checkDeps(cfg, deps); err != nil {
		return nil, err
	}
	listen := deps.Listen
	if listen == nil {
		listen = net.Listen
	}
	contentionProfiling(cfg)
	s := &Servers{clk: deps.Clock, listen: listen}
	idle := cfg.StreamingConnectionIdleTimeout.Duration
	h := &handlers{deps: deps, idle: idle}

	if cfg.EnableServer {
		var clientCAs *x509.CertPool
		if file := cfg.Authentication.X509.ClientCAFile; file != "" {
			pool, err := loadClientCAs(file)
			if err != nil {
				return nil, err
			}
			clientCAs = pool
		}
		tlsConfig, err := servingTLS(cfg, deps, clientCAs)
		if err != nil {
			return nil, err
		}
		auth, err := newAuthFilter(cfg, deps, clientCAs)
		if err != nil {
			return nil, err
		}
		s.add("https", "--address, --port", cfg.Address, cfg.Port, auth.wrap(h.secureMux(cfg.EnableDebuggingHandlers)), tlsConfig, idle)
	}
	if cfg.ReadOnlyPort > 0 {
		s.add("read-only", "--address, --read-only-port", cfg.Address, cfg.ReadOnlyPort, h.readOnlyMux(), nil, idle)
	}
	if cfg.HealthzPort > 0 {
		s.add("healthz", "--healthz-bind-address, --healthz-port", cfg.HealthzBindAddress, cfg.HealthzPort, h.healthzMux(), nil, idle)
	}
	return s, nil
}

func checkDeps(cfg *v1beta1.OrchletConfiguration, deps Deps) error {
	var errs []error
	missing := func(cond bool, field string) {
		if cond {
			errs = append(errs, fmt.Errorf("server: Deps.%s is required", field))
		}
	}
	missing(deps.Clock == nil, "Clock")
	missing(deps.NodeName == "", "NodeName")
	missing(deps.Pods == nil, "Pods")
	missing(deps.Stats == nil, "Stats")
	missing(deps.Configz == nil, "Configz")
	missing(deps.Gates == nil, "Gates")
	missing(deps.Metrics == nil, "Metrics")
	if cfg.EnableServer && cfg.EnableDebuggingHandlers {
		missing(deps.Logs == nil, "Logs (with --enable-debugging-handlers)")
		missing(deps.Streams == nil, "Streams (with --enable-debugging-handlers)")
	}
	return errors.Join(errs...)
}

func (s *Servers) add(name, options, host string, port int32, handler http.Handler, tlsConfig *tls.Config, idle time.Duration) {
	limits := newConnLimits(s.clk, MaxConnectionAge, idle)
	s.servers = append(s.servers, &server{
		name:    name,
		options: options,
		address: net.JoinHostPort(host, strconv.Itoa(int(port))),
		tls:     tlsConfig != nil,
		limits:  limits,
		http: &http.Server{
			Handler:        handler,
			TLSConfig:      tlsConfig,
			MaxHeaderBytes: maxHeaderBytes,
			ConnState:      limits.track,
		},
	})
}

// Start listens on every enabled server's address and serves in the background. When one address
// cannot be listened on, the listeners already opened are closed and the error names the server.
func (s *Servers) Start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started {
		return errors.New("server: already started")
	}
	for i, srv := range s.servers {
		ln, err := s.listen("tcp", srv.address)
		if err != nil {
			for _, opened := range s.servers[:i] {
				opened.ln.Close()
			}
			// A port another process holds is the likeliest cause: the options that chose it are named.
			return fmt.Errorf("server: %s server on %s (%s): %w", srv.name, srv.address, srv.options, err)
		}
		srv.ln = ln
	}
	s.started = true
	s.errs = make(chan error, len(s.servers))
	for _, srv := range s.servers {
		s.serving.Add(1)
		go func() {
			defer s.serving.Done()
			var err error
			if srv.tls {
				err = srv.http.ServeTLS(srv.ln, "", "")
			} else {
				err = srv.http.Serve(srv.ln)
			}
			if !errors.Is(err, http.ErrServerClosed) {
				// ServeTLS can fail before serving, leaving the listener open and unanswered.
				srv.ln.Close()
				s.errs <- fmt.Errorf("server: %s server on %s: %w", srv.name, srv.address, err)
			}
		}()
	}
	return nil
}

// Addrs returns the addresses the servers listen on; useful when a configured port is 0.
func (s *Servers) Addrs() Addresses {
	s.mu.Lock()
	defer s.mu.Unlock()
	var a Addresses
	for _, srv := range s.servers {
		if srv.ln == nil {
			continue
		}
		switch srv.name {
		case "https":
			a.HTTPS = srv.ln.Addr().String()
		case "read-only":
			a.ReadOnly = srv.ln.Addr().String()
		case "healthz":
			a.Healthz = srv.ln.Addr().String()
		}
	}
	return a
}

// Shutdown stops the servers gracefully: listeners close at once, requests in progress finish
// unless ctx ends first, in which case the remaining connections are closed.
func (s *Servers) Shutdown(ctx context.Context) error {
	return s.stop(func(h *http.Server) error {
		err := h.Shutdown(ctx)
		if err != nil {
			h.Close()
		}
		return err
	})
}

// Close stops the servers at once, closing every connection.
func (s *Servers) Close() error {
	return s.stop((*http.Server).Close)
}

func (s *Servers) stop(stop func(*http.Server) error) error {
	var errs []error
	for _, srv := range s.servers {
		if err := stop(srv.http); err != nil {
			errs = append(errs, fmt.Errorf("server: stopping the %s server: %w", srv.name, err))
		}
		srv.limits.stop()
	}
	s.serving.Wait()
	return errors.Join(errs...)
}

// Run starts the servers, serves until ctx is done or a server fails, then closes them all. It
// returns nil after ctx ends and the failure otherwise.
func (s *Servers) Run(ctx context.Context) error {
	if err := s.Start(); err != nil {
		return err
	}
	var failed error
	select {
	case <-ctx.Done():
	case failed = <-s.errs:
	}
	return errors.Join(failed, s.Close())
}
