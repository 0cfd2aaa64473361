// Package credentialprovider runs the kubelet's image credential provider plugins
// (--image-credential-provider-config, --image-credential-provider-bin-dir): executables asked,
// with Kubernetes' published CredentialProviderRequest on stdin, for the registry credentials of
// an image whose repository one of their matchImages globs matches, answering with a
// CredentialProviderResponse on stdout; the answers are cached, by image, registry or globally,
// on the agent's clock. A plugin written for the kubelet works unchanged.
package credentialprovider
