package nodeproxy

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// DefaultPreferredAddressTypes is Kubernetes' default order of --kubelet-preferred-address-types.
var DefaultPreferredAddressTypes = []corev1.NodeAddressType{
	corev1.NodeHostName, corev1.NodeInternalDNS, corev1.NodeInternalIP, corev1.NodeExternalDNS, corev1.NodeExternalIP,
}

// DefaultPort is the orchlet's HTTPS port when a node's status names none.
const DefaultPort = 10250

// Config is the orchlet-client family of the API server's options.
type Config struct {
	// CertFile and KeyFile are the client certificate the API server presents (both or neither).
	CertFile, KeyFile string
	// CAFile verifies the orchlet's serving certificate; without it the certificate is not
	// verified, as Kubernetes' API server does without --kubelet-certificate-authority.
	CAFile string
	// PreferredAddressTypes is the order in which a node's addresses are tried.
	PreferredAddressTypes []corev1.NodeAddressType
	// Timeout bounds dialling the orchlet.
	Timeout time.Duration
}

// Client reaches the nodes' orchlet servers.
type Client struct {
	transport *http.Transport
	types     []corev1.NodeAddressType
}

// New builds the client, refusing a configuration it cannot honour, naming the option.
func New(c Config) (*Client, error) {
	var errs []error
	types := c.PreferredAddressTypes
	if len(types) == 0 {
		types = DefaultPreferredAddressTypes
	}
	for _, t := range types {
		switch t {
		case corev1.NodeHostName, corev1.NodeInternalDNS, corev1.NodeInternalIP, corev1.NodeExternalDNS, corev1.NodeExternalIP:
		default:
			errs = append(errs, fmt.Errorf("--orchlet-preferred-address-types: unknown address type %q; allowed: Hostname, InternalDNS, InternalIP, ExternalDNS, ExternalIP", t))
		}
	}
	if c.Timeout < 0 {
		errs = append(errs, fmt.Errorf("--orchlet-timeout: %v must not be negative", c.Timeout))
	}
	tlsConfig := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: c.CAFile == ""}
	if c.CAFile != "" {
		pem, err := os.ReadFile(c.CAFile)
		pool := x509.NewCertPool()
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("--orchlet-certificate-authority: %w", err))
		case !pool.AppendCertsFromPEM(pem):
			errs = append(errs, fmt.Errorf("--orchlet-certificate-authority: no certificate in %s", c.CAFile))
		}
		tlsConfig.RootCAs = pool
	}
	switch {
	case (c.CertFile == "") != (c.KeyFile == ""):
		errs = append(errs, errors.New("--orchlet-client-certificate and --orchlet-client-key must be given together"))
	case c.CertFile != "":
		cert, err := tls.LoadX509KeyPair(c.CertFile, c.KeyFile)
		if err != nil {
			errs = append(errs, fmt.Errorf("--orchlet-client-certificate, --orchlet-client-key: %w", err))
		}
		tlsConfig.Certificates = []tls.Certificate{cert}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	dialer := &net.Dialer{Timeout: c.Timeout, KeepAlive: 30 * time.Second}
	return &Client{
		types: types,
		transport: &http.Transport{
			Proxy: http.ProxyFromEnvironment, DialContext: dialer.DialContext, TLSClientConfig: tlsConfig,
			TLSHandshakeTimeout: 10 * time.Second, MaxIdleConnsPerHost: 100, IdleConnTimeout: 90 * time.Second,
		},
	}, nil
}

// Transport reaches the orchlets; the streaming proxies dial through its TLS configuration.
func (c *Client) Transport() *http.Transport { return c.transport }

// Location is the URL of path on the node's orchlet server, with query.
func (c *Client) Location(node *corev1.Node, path string, query url.Values) (*url.URL, error) {
	host, err := PreferredAddress(node, c.types)
	if err != nil {
		return nil, err
	}
	port := int(node.Status.DaemonEndpoints.KubeletEndpoint.Port)
	if port <= 0 {
		port = DefaultPort
	}
	return &url.URL{Scheme: "https", Host: net.JoinHostPort(host, strconv.Itoa(port)), Path: path, RawQuery: query.Encode()}, nil
}

// PreferredAddress is the node's first address of the first type in types that it has.
func PreferredAddress(node *corev1.Node, types []corev1.NodeAddressType) (string, error) {
	for _, t := range types {
		for _, a := range node.Status.Addresses {
			if a.Type == t {
				return a.Address, nil
			}
		}
	}
	known := make([]string, len(node.Status.Addresses))
	for i, a := range node.Status.Addresses {
		known[i] = string(a.Type) + ":" + a.Address
	}
	return "", fmt.Errorf("no preferred addresses found; known addresses: [%s]", strings.Join(known, " "))
}
