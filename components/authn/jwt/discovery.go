package jwt

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	utilnet "k8s.io/apimachinery/pkg/util/net"
)

const (
	wellKnownPath = "/.well-known/openid-configuration"
	// httpTimeout bounds one call to the provider, as Kubernetes' OIDC client does.
	httpTimeout = 30 * time.Second
	// maxResponseBytes bounds what a provider's discovery document or key set may hold, so a broken
	// or hostile endpoint cannot exhaust the server's memory. Real ones are a few kilobytes.
	maxResponseBytes = 1 << 20
)

// newClient is the HTTP client of one issuer: TLS verified with the PEM bundle ca, or with the
// system roots when ca is empty.
func newClient(ca string) (*http.Client, error) {
	var roots *x509.CertPool
	if ca != "" {
		roots = x509.NewCertPool()
		if !roots.AppendCertsFromPEM([]byte(ca)) {
			return nil, errors.New("issuer.certificateAuthority: no PEM-encoded certificate in it")
		}
	}
	tr := utilnet.SetTransportDefaults(&http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12},
	})
	return &http.Client{Transport: tr, Timeout: httpTimeout}, nil
}

// discoveryLocation is where an issuer's OpenID configuration is read: discoveryURL exactly as
// written, or {url}/.well-known/openid-configuration.
func discoveryLocation(url, discoveryURL string) string {
	if discoveryURL != "" {
		return discoveryURL
	}
	return strings.TrimSuffix(url, "/") + wellKnownPath
}

// discover reads the OpenID configuration at location and answers its jwks_uri. The document's
// issuer must be exactly issuer: it is what the tokens' iss is checked against.
func discover(ctx context.Context, client *http.Client, location, issuer string) (string, error) {
	body, err := get(ctx, client, location)
	if err != nil {
		return "", err
	}
	var doc struct {
		Issuer  string `json:"issuer"`
		JWKSURI string `json:"jwks_uri"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		return "", fmt.Errorf("oidc: failed to decode provider discovery object: %w", err)
	}
	if doc.Issuer != issuer {
		return "", fmt.Errorf("oidc: issuer did not match the issuer returned by provider, expected %q got %q", issuer, doc.Issuer)
	}
	if doc.JWKSURI == "" {
		return "", errors.New("oidc: provider discovery object has no jwks_uri")
	}
	return doc.JWKSURI, nil
}

// get fetches url and answers its body, requiring 200 OK and at most maxResponseBytes.
func get(ctx context.Context, client *http.Client, url string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", url, err)
	}
	if len(body) > maxResponseBytes {
		return nil, fmt.Errorf("%s: response larger than %d bytes", url, maxResponseBytes)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: %s: %s", url, resp.Status, truncate(body))
	}
	return body, nil
}

// truncate keeps an error body short enough for a log line.
func truncate(body []byte) string {
	const max = 256
	if len(body) > max {
		return string(body[:max]) + "..."
	}
	return string(body)
}
