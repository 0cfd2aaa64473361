package certificate

import (
	"crypto/tls"
	"net"
	"net/http"
	"time"

	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/connrotation"
)

// ClientConfig returns base with its client certificate taken from current at each handshake,
// as the kubelet's UpdateTransport does, and a function closing every open connection, called
// once a rotated certificate is in use so that no connection keeps presenting the old one.
func ClientConfig(base *rest.Config, current func() *tls.Certificate) (*rest.Config, func(), error) {
	cfg := rest.CopyConfig(base)
	cfg.TLSClientConfig.CertFile, cfg.TLSClientConfig.KeyFile = "", ""
	cfg.TLSClientConfig.CertData, cfg.TLSClientConfig.KeyData = nil, nil
	tlsConfig, err := rest.TLSConfigFor(cfg)
	if err != nil {
		return nil, nil, err
	}
	if tlsConfig == nil {
		tlsConfig = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	tlsConfig.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
		if c := current(); c != nil {
			return c, nil
		}
		return &tls.Certificate{}, nil // none yet: the server sees no client certificate
	}
	dialer := connrotation.NewDialer((&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext)
	cfg.Transport = utilnet.SetTransportDefaults(&http.Transport{
		Proxy: http.ProxyFromEnvironment, TLSClientConfig: tlsConfig, DialContext: dialer.DialContext,
		TLSHandshakeTimeout: 10 * time.Second, MaxIdleConnsPerHost: 25,
	})
	cfg.TLSClientConfig = rest.TLSClientConfig{}
	cfg.Dial = nil
	return cfg, dialer.CloseAll, nil
}
