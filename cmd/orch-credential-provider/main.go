// Command orch-credential-provider is orch's reference image credential provider plugin, for tests
// and to copy: asked by the agent (or Kubernetes' kubelet) with a CredentialProviderRequest on
// stdin, it answers on stdout with the credentials of a file whose registry globs match the
// image, cached for the registry.
//
//	# /etc/orch/registry-credentials.yaml
//	registry.example.com:5000: {username: puller, password: s3cret}
//	"*.corp.example": {username: ci, password: token}
//
// and in --image-credential-provider-config:
//
//   - name: orch-credential-provider
//     matchImages: ["registry.example.com:5000", "*.corp.example"]
//     defaultCacheDuration: 5m
//     apiVersion: credentialprovider.kubelet.k8s.io/v1
//     args: [--credentials=/etc/orch/registry-credentials.yaml]
package main

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"

	"github.com/spf13/pflag"
	"sigs.k8s.io/yaml"

	"orch.io/orch/components/orchlet/pods/credentialprovider"
)

func main() {
	if err := run(os.Args[1:], os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "orch-credential-provider:", err)
		os.Exit(1)
	}
}

type request struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Image      string `json:"image"`
}

type response struct {
	APIVersion    string                             `json:"apiVersion"`
	Kind          string                             `json:"kind"`
	CacheKeyType  string                             `json:"cacheKeyType"`
	CacheDuration string                             `json:"cacheDuration,omitempty"`
	Auth          map[string]credentialprovider.Auth `json:"auth"`
}

func run(args []string, stdin io.Reader, stdout io.Writer) error {
	fs := pflag.NewFlagSet("orch-credential-provider", pflag.ContinueOnError)
	file := fs.String("credentials", "", "YAML or JSON file of registry credentials: each key a registry glob as matchImages has them (host[:port][/path], * in host parts), each value {username, password}. Read at every request.")
	cache := fs.Duration("cache-duration", 0, "How long the agent may keep an answer, for the image's registry; 0 leaves it to the provider's defaultCacheDuration.")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *file == "" {
		return fmt.Errorf("--credentials is required")
	}
	data, err := os.ReadFile(*file)
	if err != nil {
		return err
	}
	var creds map[string]credentialprovider.Auth
	if err := yaml.UnmarshalStrict(data, &creds); err != nil {
		return fmt.Errorf("%s: %w", *file, err)
	}
	var req request
	if err := json.NewDecoder(stdin).Decode(&req); err != nil {
		return fmt.Errorf("reading the CredentialProviderRequest on stdin: %w", err)
	}
	if req.Kind != "CredentialProviderRequest" || !slices.Contains(credentialprovider.PluginAPIVersions, req.APIVersion) {
		return fmt.Errorf("want a CredentialProviderRequest of %v, got kind %q apiVersion %q", credentialprovider.PluginAPIVersions, req.Kind, req.APIVersion)
	}
	resp := response{APIVersion: req.APIVersion, Kind: "CredentialProviderResponse", CacheKeyType: credentialprovider.CacheKeyRegistry, Auth: map[string]credentialprovider.Auth{}}
	if *cache > 0 {
		resp.CacheDuration = cache.String()
	}
	for _, glob := range slices.Sorted(maps.Keys(creds)) {
		if credentialprovider.URLsMatch(glob, req.Image) {
			resp.Auth[glob] = creds[glob]
		}
	}
	return json.NewEncoder(stdout).Encode(resp)
}
