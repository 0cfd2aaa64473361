package images

import (
	"encoding/base64"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func dockerConfigJSON(auths string) *corev1.Secret {
	return &corev1.Secret{Type: corev1.SecretTypeDockerConfigJson, Data: map[string][]byte{corev1.DockerConfigJsonKey: []byte(`{"auths":` + auths + `}`)}}
}

func basic(user, pass string) string {
	return base64.StdEncoding.EncodeToString([]byte(user + ":" + pass))
}

// The keyring matches an image's registry as the kubelet's credentialprovider keyring does: host
// globs part by part, the same port, a path prefix, the most specific path first, and Docker
// Hub's entry for images of the default registry.
func TestKeyringLookup(t *testing.T) {
	var k keyring
	for _, s := range []*corev1.Secret{
		dockerConfigJSON(`{"registry.example.com": {"auth": "` + basic("host", "p") + `"},
			"https://registry.example.com/team/": {"username": "team", "password": "p"},
			"*.corp.example": {"username": "glob", "password": "p"},
			"registry.example.com:5000": {"username": "port", "password": "p"},
			"https://index.docker.io/v1/": {"username": "hub", "password": "p"}}`),
		{Type: corev1.SecretTypeDockercfg, Data: map[string][]byte{corev1.DockerConfigKey: []byte(`{"registry.example.com": {"username": "second", "password": "p"}}`)}},
		{Type: corev1.SecretTypeOpaque, Data: map[string][]byte{corev1.DockerConfigJsonKey: []byte(`{"auths": {"registry.example.com": {"username": "opaque"}}}`)}},
	} {
		if err := k.addSecret(s); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		image string
		users string
	}{
		{"registry.example.com/app:1", "host,second"},
		{"registry.example.com/team/app@sha256:abc", "team,host,second"},
		{"registry.example.com:5000/app", "port"},
		{"eu.corp.example/app", "glob"},
		{"a.eu.corp.example/app", ""},
		{"nginx", "hub"},
		{"library/nginx:1.27", "hub"},
		{"docker.io/me/app", "hub"},
		{"quay.io/app", ""},
	} {
		var users []string
		for _, a := range k.lookup(repository(tc.image)) {
			users = append(users, a.Username)
		}
		if got := strings.Join(users, ","); got != tc.users {
			t.Errorf("%s (%s): credentials of %q, want %q", tc.image, repository(tc.image), got, tc.users)
		}
	}
	for _, tc := range []struct {
		name string
		s    *corev1.Secret
		err  string
	}{
		{"not JSON", dockerConfigJSON(`nope`), "invalid character"},
		{"auth without a colon", dockerConfigJSON(`{"r.io": {"auth": "` + base64.StdEncoding.EncodeToString([]byte("user")) + `"}}`), "unable to parse auth field, must be formatted as base64(username:password)"},
	} {
		if err := (&keyring{}).addSecret(tc.s); err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.err)
		}
	}
}
