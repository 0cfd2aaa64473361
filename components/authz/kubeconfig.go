package authz

import (
	"fmt"
	"net/http"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// WebhookConnection returns the HTTP client and URL of the webhook a kubeconfig file describes, read
// as Kubernetes reads an authorization webhook's kubeconfig: the current context's cluster is the
// remote service, its server URL (path included) the exact address reviews are posted to and its
// certificate authority what verifies it; the context's user holds the credentials presented
// (client certificate, token). Relative paths in the file are relative to the file.
func WebhookConnection(kubeconfigFile string) (*http.Client, string, error) {
	loader := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
		&clientcmd.ClientConfigLoadingRules{ExplicitPath: kubeconfigFile}, &clientcmd.ConfigOverrides{})
	cfg, err := loader.ClientConfig()
	if err != nil {
		return nil, "", fmt.Errorf("kubeconfig %s: %w", kubeconfigFile, err)
	}
	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, "", fmt.Errorf("kubeconfig %s: %w", kubeconfigFile, err)
	}
	server, _, err := rest.DefaultServerUrlFor(cfg)
	if err != nil {
		return nil, "", fmt.Errorf("kubeconfig %s: %w", kubeconfigFile, err)
	}
	return client, server.String(), nil
}
