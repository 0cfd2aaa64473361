package app

import (
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"orch.io/orch/components/authz"
)

// Options are orch-apiserver's flags, named as kube-apiserver names them.
type Options struct {
	BindAddress       string
	SecurePort        int
	CertDir           string
	TLSCertFile       string
	TLSPrivateKeyFile string

	EtcdServers            []string
	EtcdCAFile             string
	EtcdCertFile           string
	EtcdKeyFile            string
	DataDir                string
	EtcdCompactionInterval time.Duration

	EventTTL          time.Duration
	MinRequestTimeout int

	MaxRequestsInFlight         int
	MaxMutatingRequestsInFlight int
	RequestTimeout              time.Duration
	ShutdownDelayDuration       time.Duration

	// Profiling serves Go's profiles under /debug/pprof/; ContentionProfiling adds blocking
	// events to them (kube-apiserver's --profiling and --contention-profiling).
	Profiling           bool
	ContentionProfiling bool

	ClientCAFile      string
	TokenAuthFile     string
	AnonymousAuth     bool
	AuthorizationMode string

	AuthenticationConfig       string
	AuthorizationConfig        string
	EncryptionProviderConfig   string
	AdmissionControlConfigFile string
	TracingConfigFile          string

	// The signer's CA and the longest validity it gives (kube-controller-manager's flags).
	ClusterSigningCertFile string
	ClusterSigningKeyFile  string
	ClusterSigningDuration time.Duration

	// EnableAdmissionPlugins, DisableAdmissionPlugins and the deprecated AdmissionControl choose
	// the admission plugins, as kube-apiserver's flags do (see admission.go).
	EnableAdmissionPlugins  []string
	DisableAdmissionPlugins []string
	AdmissionControl        []string

	// EncryptionProviderConfigAutomaticReload follows the encryption file; it is read every
	// EncryptionReloadInterval (not a flag).
	EncryptionProviderConfigAutomaticReload bool
	EncryptionReloadInterval                time.Duration

	// AnonymousAuthSet and AuthorizationModeSet record flags given explicitly, which some
	// configuration files forbid.
	AnonymousAuthSet     bool
	AuthorizationModeSet bool

	// ServiceAccounts are the --service-account-* and --api-audiences options (serviceaccounts.go).
	ServiceAccounts serviceAccountOptions

	// OrchletClient are the --orchlet-* client options (orchletclient.go).
	OrchletClient orchletClientOptions
}

// NewOptions returns the defaults: an embedded etcd under ./orch-data, HTTPS on 6443 with a
// self-signed pair, anonymous access, and events kept an hour.
func NewOptions() *Options {
	return &Options{
		BindAddress:            "0.0.0.0",
		SecurePort:             6443,
		DataDir:                "orch-data",
		EtcdCompactionInterval: 5 * time.Minute,
		EventTTL:               time.Hour,
		MinRequestTimeout:      1800,
		// Kubernetes' defaults.
		MaxRequestsInFlight:         400,
		MaxMutatingRequestsInFlight: 200,
		RequestTimeout:              time.Minute,
		Profiling:                   true,
		AnonymousAuth:               true,
		AuthorizationMode:           "AlwaysAllow",
		EncryptionReloadInterval:    10 * time.Second,
		ClusterSigningDuration:      defaultClusterSigningDuration,
		ServiceAccounts:             serviceAccountOptions{Lookup: true},
		OrchletClient:               defaultOrchletClientOptions(),
	}
}

// AddFlags registers the options on fs.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.BindAddress, "bind-address", o.BindAddress, "The IP address on which to listen for the --secure-port port. If blank or an unspecified address (0.0.0.0 or ::), all interfaces and IP address families will be used.")
	fs.IntVar(&o.SecurePort, "secure-port", o.SecurePort, "The port on which to serve HTTPS with authentication and authorization.")
	fs.StringVar(&o.CertDir, "cert-dir", o.CertDir, "The directory where the self-signed TLS certificate and key (apiserver.crt, apiserver.key) are written. Defaults to <data-dir>/pki. Ignored when --tls-cert-file and --tls-private-key-file are set.")
	fs.StringVar(&o.TLSCertFile, "tls-cert-file", o.TLSCertFile, "File containing the default x509 certificate for HTTPS (CA cert, if any, concatenated after server cert). If neither this nor --tls-private-key-file is given, a self-signed pair is generated under --cert-dir.")
	fs.StringVar(&o.TLSPrivateKeyFile, "tls-private-key-file", o.TLSPrivateKeyFile, "File containing the default x509 private key matching --tls-cert-file.")
	fs.StringSliceVar(&o.EtcdServers, "etcd-servers", o.EtcdServers, "List of etcd servers to connect with (scheme://ip:port), comma separated. When empty, an embedded etcd is started under --data-dir.")
	fs.StringVar(&o.EtcdCAFile, "etcd-cafile", o.EtcdCAFile, "SSL Certificate Authority file used to secure etcd communication.")
	fs.StringVar(&o.EtcdCertFile, "etcd-certfile", o.EtcdCertFile, "SSL certification file used to secure etcd communication.")
	fs.StringVar(&o.EtcdKeyFile, "etcd-keyfile", o.EtcdKeyFile, "SSL key file used to secure etcd communication.")
	fs.StringVar(&o.DataDir, "data-dir", o.DataDir, "Directory of the embedded etcd's data (used when --etcd-servers is empty) and of generated certificates.")
	fs.DurationVar(&o.EtcdCompactionInterval, "etcd-compaction-interval", o.EtcdCompactionInterval, "The interval of compaction requests. If 0, the compaction request from apiserver is disabled.")
	fs.DurationVar(&o.EventTTL, "event-ttl", o.EventTTL, "Amount of time to retain events, measured from their last write.")
	fs.IntVar(&o.MinRequestTimeout, "min-request-timeout", o.MinRequestTimeout, "The minimum number of seconds a watch may stay open; each watch lasts a random time between this and twice this.")
	fs.IntVar(&o.MaxRequestsInFlight, "max-requests-inflight", o.MaxRequestsInFlight, "The maximum number of non-mutating requests in flight at a given time. When the server exceeds this, it rejects requests (429 with Retry-After). Watches and health checks do not count. Zero for no limit.")
	fs.IntVar(&o.MaxMutatingRequestsInFlight, "max-mutating-requests-inflight", o.MaxMutatingRequestsInFlight, "The maximum number of mutating requests in flight at a given time. When the server exceeds this, it rejects requests (429 with Retry-After). Zero for no limit.")
	fs.DurationVar(&o.RequestTimeout, "request-timeout", o.RequestTimeout, "An optional field indicating the duration a handler must keep a request open before timing it out (504). This is the default request timeout for requests but may be overridden by flags such as --min-request-timeout for specific types of requests (watches).")
	fs.DurationVar(&o.ShutdownDelayDuration, "shutdown-delay-duration", o.ShutdownDelayDuration, "Time to delay the termination. During that time the server keeps serving requests normally while /readyz returns failure, so load balancers stop sending traffic to this server.")
	fs.BoolVar(&o.Profiling, "profiling", o.Profiling, "Enable profiling via web interface host:port/debug/pprof/ (authorized as the non-resource URLs under /debug/pprof/).")
	fs.BoolVar(&o.ContentionProfiling, "contention-profiling", o.ContentionProfiling, "Enable block profiling, if profiling is enabled")
	fs.StringVar(&o.ClientCAFile, "client-ca-file", o.ClientCAFile, "If set, any request presenting a client certificate signed by one of the authorities in the client-ca-file is authenticated with an identity corresponding to the CommonName of the client certificate (its Organizations are the groups).")
	fs.StringVar(&o.TokenAuthFile, "token-auth-file", o.TokenAuthFile, "If set, the file that will be used to secure the secure port of the API server via token authentication (CSV: token,user,uid,\"group1,group2\").")
	fs.BoolVar(&o.AnonymousAuth, "anonymous-auth", o.AnonymousAuth, "Enables anonymous requests to the secure port of the API server. Requests that are not rejected by another authentication method are treated as anonymous requests, with a username of system:anonymous and a group name of system:unauthenticated.")
	fs.StringVar(&o.AuthorizationMode, "authorization-mode", o.AuthorizationMode, "Ordered list of plug-ins to do authorization on secure port. Comma-delimited list of: "+strings.Join(authz.ModeNames(), ",")+".")
	fs.StringVar(&o.AuthenticationConfig, "authentication-config", o.AuthenticationConfig, "File with an AuthenticationConfiguration (apiserver.config.orch.io/v1). Its JWT authenticators are asked after --token-auth-file, in list order, before anonymous access. Its anonymous section replaces --anonymous-auth, which must then be unset.")
	fs.StringVar(&o.AuthorizationConfig, "authorization-config", o.AuthorizationConfig, "File with an AuthorizationConfiguration (apiserver.config.orch.io/v1). Mutually exclusive with --authorization-mode.")
	fs.StringVar(&o.EncryptionProviderConfig, "encryption-provider-config", o.EncryptionProviderConfig, "File with an EncryptionConfiguration (apiserver.config.orch.io/v1) for encryption at rest.")
	fs.BoolVar(&o.EncryptionProviderConfigAutomaticReload, "encryption-provider-config-automatic-reload", o.EncryptionProviderConfigAutomaticReload, "Determines if the file set by --encryption-provider-config should be automatically reloaded if the disk contents change. A valid change whose KMS plugins are healthy takes effect without a restart; the health checks follow it.")
	fs.StringVar(&o.AdmissionControlConfigFile, "admission-control-config-file", o.AdmissionControlConfigFile, "File with an AdmissionConfiguration (apiserver.config.orch.io/v1): each enabled plugin's configuration. A plugin configured here but not enabled is not used (logged), as in Kubernetes.")
	plugins := strings.Join(registeredAdmissionPlugins(), ", ")
	fs.StringSliceVar(&o.EnableAdmissionPlugins, "enable-admission-plugins", o.EnableAdmissionPlugins, "admission plugins that should be enabled in addition to default enabled ones (none in orch). Comma-delimited list of admission plugins: "+plugins+". The order of plugins in this flag does not matter.")
	fs.StringSliceVar(&o.DisableAdmissionPlugins, "disable-admission-plugins", o.DisableAdmissionPlugins, "admission plugins that should be disabled although they are in the default enabled plugins list. Comma-delimited list of admission plugins: "+plugins+". The order of plugins in this flag does not matter.")
	fs.StringSliceVar(&o.AdmissionControl, "admission-control", o.AdmissionControl, "Admission plugins to enable, all others disabled. Comma-delimited list of: "+plugins+".")
	_ = fs.MarkDeprecated("admission-control", "Use --enable-admission-plugins or --disable-admission-plugins instead. Will be removed in a future version.")
	fs.Lookup("admission-control").Hidden = false
	fs.StringVar(&o.TracingConfigFile, "tracing-config-file", o.TracingConfigFile, "File with a TracingConfiguration (apiserver.config.orch.io/v1).")
	o.addSigningFlags(fs)
	o.addServiceAccountFlags(fs)
	o.addOrchletClientFlags(fs)
}

// RecordExplicit notes which flags fs saw on the command line, for the rules that depend on it.
func (o *Options) RecordExplicit(fs *pflag.FlagSet) {
	o.AnonymousAuthSet = fs.Changed("anonymous-auth")
	o.AuthorizationModeSet = fs.Changed("authorization-mode")
}

// Validate reports every problem with the options, each naming its flag.
func (o *Options) Validate() error {
	var errs []error
	if o.SecurePort < 1 || o.SecurePort > 65535 {
		errs = append(errs, fmt.Errorf("--secure-port %d must be between 1 and 65535, inclusive", o.SecurePort))
	}
	if o.BindAddress != "" && net.ParseIP(o.BindAddress) == nil {
		errs = append(errs, fmt.Errorf("--bind-address %q is not an IP address", o.BindAddress))
	}
	if (o.TLSCertFile == "") != (o.TLSPrivateKeyFile == "") {
		errs = append(errs, errors.New("--tls-cert-file and --tls-private-key-file must be given together"))
	}
	if (o.EtcdCertFile == "") != (o.EtcdKeyFile == "") {
		errs = append(errs, errors.New("--etcd-certfile and --etcd-keyfile must be given together"))
	}
	if len(o.EtcdServers) == 0 && (o.EtcdCAFile != "" || o.EtcdCertFile != "" || o.EtcdKeyFile != "") {
		errs = append(errs, errors.New("--etcd-cafile, --etcd-certfile and --etcd-keyfile secure --etcd-servers, which is not set (the embedded etcd is on loopback inside this process)"))
	}
	if len(o.EtcdServers) == 0 && o.DataDir == "" {
		errs = append(errs, errors.New("--data-dir must be set when --etcd-servers is empty"))
	}
	if o.EtcdCompactionInterval < 0 {
		errs = append(errs, fmt.Errorf("--etcd-compaction-interval %v must not be negative", o.EtcdCompactionInterval))
	}
	if o.EventTTL <= 0 {
		errs = append(errs, fmt.Errorf("--event-ttl %v must be positive", o.EventTTL))
	}
	for _, f := range []struct {
		name  string
		value int
	}{{"max-requests-inflight", o.MaxRequestsInFlight}, {"max-mutating-requests-inflight", o.MaxMutatingRequestsInFlight}} {
		if f.value < 0 {
			errs = append(errs, fmt.Errorf("--%s %d must not be negative", f.name, f.value))
		}
	}
	if o.RequestTimeout <= 0 {
		errs = append(errs, fmt.Errorf("--request-timeout %v must be positive", o.RequestTimeout))
	}
	if o.ShutdownDelayDuration < 0 {
		errs = append(errs, fmt.Errorf("--shutdown-delay-duration %v must not be negative", o.ShutdownDelayDuration))
	}
	if o.ContentionProfiling && !o.Profiling {
		// Kubernetes accepts the pair and records blocking events nobody can read.
		errs = append(errs, errors.New("--contention-profiling needs --profiling: the block profile is served under /debug/pprof/"))
	}
	if o.MinRequestTimeout <= 0 {
		errs = append(errs, fmt.Errorf("--min-request-timeout %d must be positive", o.MinRequestTimeout))
	}
	errs = append(errs, o.validateSigningFlags()...)
	errs = append(errs, o.validateServiceAccountFlags()...)
	if _, err := authz.ParseModes(o.AuthorizationMode); err != nil {
		errs = append(errs, err)
	}
	errs = append(errs, o.validateAdmissionFlags()...)
	return errors.Join(errs...)
}
