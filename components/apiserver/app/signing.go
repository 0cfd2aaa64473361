package app

import (
	"crypto"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/pflag"

	"orch.io/orch/components/apiserver/server"
)

// defaultClusterSigningDuration is kube-controller-manager's --cluster-signing-duration default.
const defaultClusterSigningDuration = 8760 * time.Hour

// addSigningFlags registers kube-controller-manager's signing options: orch-apiserver runs the
// certificate signer itself.
func (o *Options) addSigningFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.ClusterSigningCertFile, "cluster-signing-cert-file", o.ClusterSigningCertFile, "Filename containing a PEM-encoded X509 CA certificate used to issue cluster-scoped certificates: approved certificate signing requests of the signers orch.io/orch-apiserver-client-orchlet, orch.io/orchlet-serving and orch.io/orch-apiserver-client. Without it and --cluster-signing-key-file no request is signed, as in a Kubernetes cluster without a signer.")
	fs.StringVar(&o.ClusterSigningKeyFile, "cluster-signing-key-file", o.ClusterSigningKeyFile, "Filename containing a PEM-encoded RSA or ECDSA private key used to sign cluster-scoped certificates (with --cluster-signing-cert-file).")
	fs.DurationVar(&o.ClusterSigningDuration, "cluster-signing-duration", o.ClusterSigningDuration, "The max length of duration signed certificates will be given. Individual CSRs may request shorter certs by setting spec.expirationSeconds.")
}

func (o *Options) validateSigningFlags() []error {
	var errs []error
	if (o.ClusterSigningCertFile == "") != (o.ClusterSigningKeyFile == "") {
		errs = append(errs, errors.New("--cluster-signing-cert-file and --cluster-signing-key-file must be given together"))
	}
	if o.ClusterSigningDuration <= 0 {
		errs = append(errs, fmt.Errorf("--cluster-signing-duration %v must be positive", o.ClusterSigningDuration))
	}
	return errs
}

// clusterSigning loads the signing CA; without one the server signs nothing.
func clusterSigning(o *Options) (func(*server.Config), error) {
	if o.ClusterSigningCertFile == "" {
		return func(*server.Config) {}, nil
	}
	pair, err := tls.LoadX509KeyPair(o.ClusterSigningCertFile, o.ClusterSigningKeyFile)
	if err != nil {
		return nil, fmt.Errorf("--cluster-signing-cert-file/--cluster-signing-key-file: %w", err)
	}
	cert, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		return nil, fmt.Errorf("--cluster-signing-cert-file %s: %w", o.ClusterSigningCertFile, err)
	}
	if !cert.IsCA {
		return nil, fmt.Errorf("--cluster-signing-cert-file %s: the certificate is not a CA (basic constraints)", o.ClusterSigningCertFile)
	}
	key, ok := pair.PrivateKey.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("--cluster-signing-key-file %s: the key cannot sign", o.ClusterSigningKeyFile)
	}
	signing := &server.Signing{Cert: cert, Key: key, Duration: o.ClusterSigningDuration}
	return func(c *server.Config) { c.Signing = signing }, nil
}
