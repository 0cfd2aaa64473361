package app

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/prometheus/client_golang/prometheus"
	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/klog/v2"

	"orch.io/orch/components/apiserver/filters"
	"orch.io/orch/components/apiserver/server"
	"orch.io/orch/components/apiserver/storage"
	"orch.io/orch/components/apiserver/storage/etcd3"
	"orch.io/orch/components/authn"
	"orch.io/orch/components/authz"
	"orch.io/orch/components/authz/rbac"
	"orch.io/orch/components/certs"
)

// Version is orch-apiserver's version, reported at /version.
var Version = version.Info{
	Major:      "0",
	Minor:      "1",
	GitVersion: "v0.1.0",
	GoVersion:  runtime.Version(),
	Compiler:   runtime.Compiler,
	Platform:   runtime.GOOS + "/" + runtime.GOARCH,
}

// Run serves the API until ctx ends. ready, if set, is called with the address being served once
// the server accepts connections.
func Run(ctx context.Context, o *Options, clk clock.Clock, ready func(addr string)) error {
	files, err := loadConfigFiles(o)
	if err = errors.Join(o.Validate(), err); err != nil {
		return err
	}
	// One registry for /metrics: the process's, the server's and the configuration reloads'.
	metrics := server.NewRegistry()
	serviceAccounts, serviceAccountAuth, err := serviceAccountTokens(o, clk)
	if err != nil {
		return err
	}
	authenticator, err := buildAuthenticator(ctx, o, files, clk, metrics, serviceAccountAuth)
	if err != nil {
		return err
	}
	// The roles and bindings the RBAC authorizer reads, kept by the server from its stores.
	roles := rbac.NewIndex()
	authorizer, node, err := buildAuthorizer(ctx, o, files, clk, metrics, roles)
	if err != nil {
		return err
	}
	admit, err := enabledAdmission(o, files, clk)
	if err != nil {
		return err
	}
	traced, stopTracing, err := startTracing(ctx, files, clk)
	if err != nil {
		return err
	}
	defer stopTracing()
	signing, err := clusterSigning(o)
	if err != nil {
		return err
	}
	client, closeEtcd, err := connectEtcd(ctx, o)
	if err != nil {
		return err
	}
	defer closeEtcd()
	if o.EtcdCompactionInterval > 0 {
		etcd3.StartCompactor(ctx, client, clk, o.EtcdCompactionInterval)
	}
	store, encryptionChecks, stopEncryption, err := encryptAtRest(ctx, o, files, clk, etcd3.New(client, clk))
	if err != nil {
		return err
	}
	defer stopEncryption()
	keepRoles := func(c *server.Config) { c.Roles = roles }
	return serve(ctx, o, clk, store, authenticator, authorizer, node, encryptionChecks, metrics, ready, admit, traced, signing, serviceAccounts, keepRoles)
}

// buildAuthenticator puts the authenticators in Kubernetes' order: client certificates, the token
// file, service account tokens (serviceAccounts, when set), the JWT authenticators of
// --authentication-config in their list order, then anonymous access.
func buildAuthenticator(ctx context.Context, o *Options, files *configFiles, clk clock.Clock, metrics prometheus.Registerer, serviceAccounts authn.Authenticator) (authn.Authenticator, error) {
	clientCerts, err := clientCertAuthenticator(o)
	if err != nil {
		return nil, err
	}
	list := []authn.Authenticator{clientCerts}
	if o.TokenAuthFile != "" {
		tf, err := authn.NewTokenFile(o.TokenAuthFile)
		if err != nil {
			return nil, fmt.Errorf("--token-auth-file: %w", err)
		}
		list = append(list, tf)
	}
	if serviceAccounts != nil {
		list = append(list, serviceAccounts)
	}
	jwts, err := jwtAuthenticator(ctx, files, clk, metrics)
	if err != nil {
		return nil, fmt.Errorf("--authentication-config: %w", err)
	}
	return authn.Union(append(list, jwts, files.anonymous(o))...), nil
}

func connectEtcd(ctx context.Context, o *Options) (*clientv3.Client, func(), error) {
	if len(o.EtcdServers) > 0 {
		tlsConfig, err := etcdTLS(o)
		if err != nil {
			return nil, nil, err
		}
		client, err := clientv3.New(clientv3.Config{
			TLS:                tlsConfig,
			Endpoints:          o.EtcdServers,
			DialTimeout:        10 * time.Second,
			MaxCallRecvMsgSize: 1 << 30,
			Context:            ctx,
		})
		if err != nil {
			return nil, nil, fmt.Errorf("--etcd-servers %v: %w", o.EtcdServers, err)
		}
		return client, func() { _ = client.Close() }, nil
	}
	if err := embeddedEtcdFree(o.DataDir, filepath.Join(o.DataDir, "etcd")); err != nil {
		return nil, nil, err
	}
	embedded, err := etcd3.StartEmbedded(ctx, filepath.Join(o.DataDir, "etcd"))
	if err != nil {
		return nil, nil, fmt.Errorf("starting the embedded etcd under --data-dir %s: %w", o.DataDir, err)
	}
	klog.InfoS("Embedded etcd started", "dataDir", filepath.Join(o.DataDir, "etcd"), "endpoint", embedded.Endpoint)
	return embedded.Client, func() { embedded.Close() }, nil
}

// etcdTLS is the client TLS for --etcd-servers from --etcd-cafile, --etcd-certfile and --etcd-keyfile;
// nil when none is given (http:// servers).
func etcdTLS(o *Options) (*tls.Config, error) {
	if o.EtcdCAFile == "" && o.EtcdCertFile == "" {
		return nil, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if o.EtcdCAFile != "" {
		data, err := os.ReadFile(o.EtcdCAFile)
		if err != nil {
			return nil, fmt.Errorf("--etcd-cafile: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(data) {
			return nil, fmt.Errorf("--etcd-cafile %s: no PEM certificate in it", o.EtcdCAFile)
		}
		cfg.RootCAs = pool
	}
	if o.EtcdCertFile != "" {
		pair, err := tls.LoadX509KeyPair(o.EtcdCertFile, o.EtcdKeyFile)
		if err != nil {
			return nil, fmt.Errorf("--etcd-certfile/--etcd-keyfile: %w", err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return cfg, nil
}

// serve runs the API server; tune, if given, complete its configuration (admission, tracing).
func serve(ctx context.Context, o *Options, clk clock.Clock, store storage.Interface, an authn.Authenticator, az authz.Authorizer, node *server.NodeAuthorization, extraChecks func() []server.HealthCheck, metrics *prometheus.Registry, ready func(string), tune ...func(*server.Config)) error {
	nodes, err := o.OrchletClient.nodeClient()
	if err != nil {
		return err
	}
	stopping, terminating := make(chan struct{}), make(chan struct{})
	cfg := server.Config{
		Starting:    ctx,
		Nodes:       nodes,
		Stopping:    stopping,
		Terminating: terminating,
		Profiling:   o.Profiling,
		Limits: filters.Limits{
			MaxRequestsInFlight:         o.MaxRequestsInFlight,
			MaxMutatingRequestsInFlight: o.MaxMutatingRequestsInFlight,
			RequestTimeout:              o.RequestTimeout,
		},
		Clock:             clk,
		Storage:           store,
		EventTTL:          o.EventTTL,
		Authenticator:     an,
		Authorizer:        az,
		Metrics:           metrics,
		MinRequestTimeout: time.Duration(o.MinRequestTimeout) * time.Second,
		BookmarkInterval:  time.Minute,
		Jitter:            rand.Float64,
		Version:           Version,
		ExtraHealthChecks: extraChecks,
		Node:              node,
	}
	for _, f := range tune {
		f(&cfg)
	}
	if o.Profiling && o.ContentionProfiling {
		// Every blocking event, as kube-apiserver records them; the rate is the process's.
		runtime.SetBlockProfileRate(1)
	}
	handler, err := server.New(cfg)
	if err != nil {
		return err
	}
	certDir := o.CertDir
	if certDir == "" {
		certDir = filepath.Join(o.DataDir, "pki")
	}
	hosts := []string{"localhost"}
	if ip := net.ParseIP(o.BindAddress); ip != nil && !ip.IsUnspecified() {
		hosts = append(hosts, o.BindAddress)
	}
	if name, err := os.Hostname(); err == nil {
		hosts = append(hosts, name)
	}
	certFile, keyFile, err := certs.ServingFiles(o.TLSCertFile, o.TLSPrivateKeyFile, certDir, "apiserver", hosts, clk)
	if err != nil {
		return err
	}
	cert, err := certs.LoadServing(certFile, keyFile)
	if err != nil {
		return err
	}
	if err := publishServingCA(cfg.ServiceAccounts, certFile); err != nil {
		return err
	}
	tlsConfig, err := servingTLS(o, cert)
	if err != nil {
		return err
	}
	listener, err := net.Listen("tcp", net.JoinHostPort(o.BindAddress, strconv.Itoa(o.SecurePort)))
	if err != nil {
		return fmt.Errorf("--secure-port %d: %w", o.SecurePort, err)
	}
	// Kubernetes' serving limits: a connection idle between requests is closed after 90 s (the
	// keep-alive of Go's default transport), so idle connections do not hold memory for ever, and
	// a request's headers must arrive within 32 s and 1 MiB.
	srv := &http.Server{
		Handler:           handler,
		TLSConfig:         tlsConfig,
		IdleTimeout:       90 * time.Second,
		ReadHeaderTimeout: 32 * time.Second,
		MaxHeaderBytes:    1 << 20,
	}
	srv.RegisterOnShutdown(func() { close(stopping) })
	errc := make(chan error, 1)
	go func() { errc <- srv.ServeTLS(listener, "", "") }()
	addr := listener.Addr().String()
	klog.InfoS("Serving securely", "address", addr, "certFile", certFile)
	if ready != nil {
		ready(addr)
	}
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	return shutdown(srv, clk, o, terminating, errc)
}

// shutdown stops serving as Kubernetes' API server does: /readyz fails first, requests are served
// normally for --shutdown-delay-duration while load balancers notice, then the listener closes,
// watches end cleanly and the requests in flight finish (bounded by --request-timeout, which no
// such request outlives), so nothing acknowledged is cut off.
func shutdown(srv *http.Server, clk clock.Clock, o *Options, terminating chan struct{}, errc <-chan error) error {
	close(terminating)
	klog.InfoS("Shutting down: /readyz now fails", "shutdownDelayDuration", o.ShutdownDelayDuration)
	if o.ShutdownDelayDuration > 0 {
		select {
		case <-clk.After(o.ShutdownDelayDuration):
		case err := <-errc:
			return err
		}
	}
	drain, cancel := clk.WithTimeout(context.Background(), o.RequestTimeout+5*time.Second)
	defer cancel()
	if err := srv.Shutdown(drain); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	klog.InfoS("Shut down: every request in flight finished")
	return nil
}
