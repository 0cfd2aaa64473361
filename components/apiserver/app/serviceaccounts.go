package app

import (
	"crypto"
	"errors"
	"fmt"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/spf13/pflag"

	"orch.io/orch/components/apiserver/server"
	"orch.io/orch/components/authn"
	"orch.io/orch/components/authn/serviceaccount"
)

// serviceAccountOptions are kube-apiserver's service account token options.
type serviceAccountOptions struct {
	Issuers        []string
	KeyFiles       []string
	SigningKeyFile string
	MaxExpiration  time.Duration
	Lookup         bool
	APIAudiences   []string
}

// addServiceAccountFlags registers the service account options on fs.
func (o *Options) addServiceAccountFlags(fs *pflag.FlagSet) {
	s := &o.ServiceAccounts
	fs.StringArrayVar(&s.Issuers, "service-account-issuer", s.Issuers, "Identifier of the service account token issuer. The issuer will assert this identifier in \"iss\" claim of issued tokens. This value is a string or URI. When this flag is specified multiple times, the first is used to generate tokens and all are used to determine which issuers are accepted.")
	fs.StringArrayVar(&s.KeyFiles, "service-account-key-file", s.KeyFiles, "File containing PEM-encoded x509 RSA or ECDSA private or public keys, used to verify ServiceAccount tokens. The specified file can contain multiple keys, and the flag can be specified multiple times with different files. Required with --service-account-signing-key-file.")
	fs.StringVar(&s.SigningKeyFile, "service-account-signing-key-file", s.SigningKeyFile, "Path to the file that contains the current private key of the service account token issuer. The issuer will sign issued ID tokens with this private key.")
	fs.DurationVar(&s.MaxExpiration, "service-account-max-token-expiration", s.MaxExpiration, "The maximum validity duration of a token created by the service account token issuer. If an otherwise valid TokenRequest with a validity duration larger than this value is requested, a token will be issued with a validity duration of this value.")
	fs.BoolVar(&s.Lookup, "service-account-lookup", s.Lookup, "If true, validate ServiceAccount tokens exist in etcd as part of authentication. orch issues bound tokens only, whose service account and pod are always looked up; false is refused.")
	fs.StringSliceVar(&s.APIAudiences, "api-audiences", s.APIAudiences, "Identifiers of the API. The service account token authenticator will validate that tokens used against the API are bound to at least one of these audiences. If --service-account-issuer is configured and this flag is not, this field defaults to a single element list containing the issuer URL.")
}

// validateServiceAccountFlags is kube-apiserver's validation of the options, each error naming its flag.
func (o *Options) validateServiceAccountFlags() []error {
	s := &o.ServiceAccounts
	var errs []error
	if !s.Lookup {
		errs = append(errs, errors.New("--service-account-lookup=false: orch issues bound tokens only, whose service account and pod are always looked up"))
	}
	if s.MaxExpiration != 0 && (s.MaxExpiration < time.Hour || s.MaxExpiration > (1<<32)*time.Second) {
		errs = append(errs, errors.New("the service-account-max-token-expiration must be between 1 hour and 2^32 seconds"))
	}
	seen := map[string]bool{}
	for _, iss := range s.Issuers {
		switch {
		case iss == "":
			errs = append(errs, errors.New("service-account-issuer should not be an empty string"))
		case seen[iss]:
			errs = append(errs, fmt.Errorf("service-account-issuer %q is already specified", iss))
		case strings.Contains(iss, ":"):
			if _, err := url.Parse(iss); err != nil {
				errs = append(errs, fmt.Errorf("service-account-issuer %q contained a ':' but was not a valid URL: %v", iss, err))
			}
		}
		seen[iss] = true
	}
	attempted := s.SigningKeyFile != "" || len(s.Issuers) > 0 || len(s.APIAudiences) > 0 || s.MaxExpiration != 0
	if attempted && (s.SigningKeyFile == "" || len(s.Issuers) == 0) {
		errs = append(errs, errors.New("--service-account-signing-key-file, --service-account-issuer, and --api-audiences should be specified together"))
	}
	if len(s.KeyFiles) > 0 && len(s.Issuers) == 0 {
		errs = append(errs, errors.New("--service-account-key-file needs --service-account-issuer: the issuers whose tokens the keys verify"))
	}
	if s.SigningKeyFile != "" && len(s.KeyFiles) == 0 {
		errs = append(errs, errors.New("--service-account-key-file is required with --service-account-signing-key-file: the keys that verify the issued tokens"))
	}
	return errs
}

// serviceAccountTokens loads the keys: the server's token issuer for serve, and the authenticator
// of service account tokens; both nil without the options.
func serviceAccountTokens(o *Options, clk clock.Clock) (func(*server.Config), authn.Authenticator, error) {
	s := &o.ServiceAccounts
	if len(s.Issuers) == 0 {
		return func(*server.Config) {}, nil, nil
	}
	var keys []crypto.PublicKey
	for _, f := range s.KeyFiles {
		k, err := serviceaccount.LoadPublicKeys(f)
		if err != nil {
			return nil, nil, fmt.Errorf("--service-account-key-file %s: %w", f, err)
		}
		keys = append(keys, k...)
	}
	audiences := s.APIAudiences
	if len(audiences) == 0 {
		audiences = slices.Clone(s.Issuers)
	}
	sa := &server.ServiceAccounts{Audiences: audiences, MaxExpiration: s.MaxExpiration}
	key, err := serviceaccount.LoadSigningKey(s.SigningKeyFile)
	if err != nil {
		return nil, nil, fmt.Errorf("--service-account-signing-key-file %s: %w", s.SigningKeyFile, err)
	}
	if sa.Issuer, err = serviceaccount.NewIssuer(s.Issuers[0], key); err != nil {
		return nil, nil, fmt.Errorf("--service-account-signing-key-file %s: %w", s.SigningKeyFile, err)
	}
	a := serviceaccount.NewAuthenticator(s.Issuers, keys, audiences, sa, clk)
	return func(c *server.Config) { c.ServiceAccounts = sa }, authn.Bearer(a), nil
}

// publishServingCA gives sa, when the server issues tokens, the serving certificates (the
// generated self-signed one, or --tls-cert-file's chain) as the root CA pods verify the server
// with: the orch-root-ca.crt configmaps and the token volume mounted into pods hold them.
func publishServingCA(sa *server.ServiceAccounts, certFile string) error {
	if sa == nil {
		return nil
	}
	pem, err := os.ReadFile(certFile)
	if err != nil {
		return err
	}
	sa.SetRootCA(pem)
	return nil
}
