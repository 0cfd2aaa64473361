package images

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"

	"orch.io/orch/components/orchlet/events"
	"orch.io/orch/components/orchlet/pods/credentialprovider"
)

// defaultRegistryHost is where an image without a registry comes from, as the kubelet's keyring
// names Docker Hub.
const defaultRegistryHost = "index.docker.io"

// pullAuths are the credentials that match image, in the order the kubelet's union keyring tries
// them: those of the pod's image pull secrets (read from the API server), then those the
// credential provider plugins give. A secret that cannot be read is skipped with the kubelet's
// FailedToRetrieveImagePullSecret event; one whose configuration is not JSON fails the pull, as
// MakeDockerKeyring does.
func (p *Puller) pullAuths(ctx context.Context, pod *corev1.Pod, image string) ([]*runtimeapi.AuthConfig, error) {
	repo := repository(image)
	var out []*runtimeapi.AuthConfig
	if p.objects != nil && len(pod.Spec.ImagePullSecrets) > 0 {
		var k keyring
		var failed []string
		for _, ref := range pod.Spec.ImagePullSecrets {
			if ref.Name == "" {
				continue // validation lets empty names through; the kubelet ignores them
			}
			s, err := p.objects.GetSecret(ctx, pod.Namespace, ref.Name)
			if err != nil {
				p.log.Info("Unable to retrieve pull secret, the image pull may not succeed.", "pod", klog.KObj(pod), "secret", ref.Name, "err", err)
				failed = append(failed, ref.Name)
				continue
			}
			if err := k.addSecret(s); err != nil {
				return nil, err
			}
		}
		if len(failed) > 0 {
			p.rec.Eventf(events.PodReference(pod), corev1.EventTypeWarning, ReasonFailedToRetrieveImagePullSecret, "Pull",
				"Unable to retrieve some image pull secrets (%s); attempting to pull the image may not succeed.", strings.Join(failed, ", "))
		}
		out = k.lookup(repo)
	}
	if p.plugins != nil {
		var k keyring
		who := credentialprovider.Pod{Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID, ServiceAccountName: pod.Spec.ServiceAccountName}
		for _, auths := range p.plugins.Provide(ctx, who, repo) {
			cfg := map[string]dockerEntry{}
			for loc, a := range auths {
				cfg[loc] = dockerEntry{Username: a.Username, Password: a.Password}
			}
			k.add(cfg)
		}
		out = append(out, k.lookup(repo)...)
	}
	return out, nil
}

// pullImage pulls with each credential in turn until one succeeds, or without any when there are
// none, as the kubelet's image puller; the failures of all are the error.
func (p *Puller) pullImage(ctx context.Context, spec *runtimeapi.ImageSpec, auths []*runtimeapi.AuthConfig, sbCfg *runtimeapi.PodSandboxConfig) (string, error) {
	if len(auths) == 0 {
		return p.img.PullImage(ctx, spec, nil, sbCfg)
	}
	var errs []error
	for _, auth := range auths {
		ref, err := p.img.PullImage(ctx, spec, auth, sbCfg)
		if err == nil {
			return ref, nil
		}
		errs = append(errs, err)
	}
	if len(errs) == 1 {
		return "", errs[0]
	}
	return "", fmt.Errorf("%v", errs) // utilerrors.Aggregate's [a, b] form
}

// keyring is the kubelet's BasicDockerKeyring: credentials by registry location.
type keyring struct {
	index []string
	creds map[string][]*runtimeapi.AuthConfig
}

// dockerEntry is one location of a docker configuration: a user and password, or auth as
// base64(user:password).
type dockerEntry struct {
	Username string `json:"username,omitempty"`
	Password string `json:"password,omitempty"`
	Email    string `json:"email,omitempty"`
	Auth     string `json:"auth,omitempty"`
}

// addSecret adds a kubernetes.io/dockerconfigjson or kubernetes.io/dockercfg secret's entries;
// secrets of other types hold no credentials.
func (k *keyring) addSecret(s *corev1.Secret) error {
	var cfg map[string]dockerEntry
	switch data := s.Data; {
	case s.Type == corev1.SecretTypeDockerConfigJson && len(data[corev1.DockerConfigJsonKey]) > 0:
		var file struct {
			Auths map[string]dockerEntry `json:"auths"`
		}
		if err := json.Unmarshal(data[corev1.DockerConfigJsonKey], &file); err != nil {
			return err
		}
		cfg = file.Auths
	case s.Type == corev1.SecretTypeDockercfg && len(data[corev1.DockerConfigKey]) > 0:
		if err := json.Unmarshal(data[corev1.DockerConfigKey], &cfg); err != nil {
			return err
		}
	default:
		return nil
	}
	for _, e := range cfg {
		if e.Auth == "" {
			continue
		}
		if _, _, err := decodeAuth(e.Auth); err != nil {
			return err
		}
	}
	k.add(cfg)
	return nil
}

// add is BasicDockerKeyring.Add: each location of a docker configuration keyed by its host and
// path, the more specific paths of a host first.
func (k *keyring) add(cfg map[string]dockerEntry) {
	if k.creds == nil {
		k.creds = map[string][]*runtimeapi.AuthConfig{}
	}
	// Distinct locations make distinct keys: their order matters not, sorted for repeatable runs.
	for _, loc := range slices.Sorted(maps.Keys(cfg)) {
		e := cfg[loc]
		user, pass := e.Username, e.Password
		if e.Auth != "" {
			user, pass, _ = decodeAuth(e.Auth) // checked by addSecret
		}
		value := loc
		if !strings.HasPrefix(value, "https://") && !strings.HasPrefix(value, "http://") {
			value = "https://" + value
		}
		parsed, err := url.Parse(value)
		if err != nil {
			continue // the kubelet logs and ignores such an entry
		}
		// Docker matches a host, or a host and path; /v1/ and /v2/ are the host.
		path := parsed.Path
		if strings.HasPrefix(path, "/v2/") || strings.HasPrefix(path, "/v1/") {
			path = path[3:]
		}
		key := parsed.Host
		if path != "" && path != "/" {
			key += path
		}
		k.creds[key] = append(k.creds[key], &runtimeapi.AuthConfig{Username: user, Password: pass})
		if !slices.Contains(k.index, key) {
			k.index = append(k.index, key)
		}
	}
	// Reverse order puts the more specific paths of a host first.
	sort.Sort(sort.Reverse(sort.StringSlice(k.index)))
}

// decodeAuth is decodeDockerConfigFieldAuth.
func decodeAuth(field string) (string, string, error) {
	var decoded []byte
	var err error
	if strings.HasSuffix(strings.TrimSpace(field), "=") {
		decoded, err = base64.StdEncoding.DecodeString(field)
	} else {
		decoded, err = base64.RawStdEncoding.DecodeString(field)
	}
	if err != nil {
		return "", "", err
	}
	user, pass, ok := strings.Cut(string(decoded), ":")
	if !ok {
		return "", "", errors.New("unable to parse auth field, must be formatted as base64(username:password)")
	}
	return user, pass, nil
}

// lookup is BasicDockerKeyring.Lookup: the credentials of every matching location, most
// specific first, else Docker Hub's for an image of the default registry.
func (k *keyring) lookup(image string) []*runtimeapi.AuthConfig {
	var out []*runtimeapi.AuthConfig
	for _, key := range k.index {
		if credentialprovider.URLsMatch(key, image) {
			out = append(out, k.creds[key]...)
		}
	}
	if len(out) > 0 {
		return out
	}
	if isDefaultRegistry(image) {
		return k.creds[defaultRegistryHost]
	}
	return nil
}

// isDefaultRegistry tells whether image is pulled from Docker Hub: no registry host before its
// first slash (a host has a dot or a port), or docker.io or index.docker.io.
func isDefaultRegistry(image string) bool {
	first, _, found := strings.Cut(image, "/")
	if first == "" {
		return false
	}
	if !found || first == "docker.io" || first == "index.docker.io" {
		return true
	}
	return !strings.ContainsAny(first, ".:")
}

// repository is parsers.ParseImageName's repository: the image normalized as Docker does
// (docker.io/library/ for official images), without its tag or digest.
func repository(image string) string {
	name, _, _ := strings.Cut(image, "@")
	if i := strings.LastIndex(name, ":"); i > strings.LastIndex(name, "/") {
		name = name[:i]
	}
	first, rest, found := strings.Cut(name, "/")
	if !found || (!strings.ContainsAny(first, ".:") && first != "localhost") {
		first, rest = "docker.io", name
	}
	if first == "index.docker.io" {
		first = "docker.io"
	}
	if first == "docker.io" && !strings.Contains(rest, "/") {
		rest = "library/" + rest
	}
	return first + "/" + rest
}
