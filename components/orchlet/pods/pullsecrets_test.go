package pods

import (
	"encoding/base64"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"orch.io/orch/fakecri"
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

// In API mode a pull carries the credentials of the pod's image pull secrets for the image's
// registry, trying each until one works; a registry that wants credentials refuses a pull
// without them; a secret that cannot be read gets the kubelet's warning.
func TestPullWithImagePullSecrets(t *testing.T) {
	script := &fakecri.Script{Images: []fakecri.ImageRule{{Match: "registry.example.com/*", Auth: &fakecri.Auth{Username: "right", Password: "pw"}}}}
	for _, tc := range []struct {
		name    string
		secrets []string
		pulls   []string // auth_user of each pull, "-" for none
		waiting string
		events  string
	}{
		{"the right credentials after wrong ones", []string{"wrong", "right"}, []string{"wrong", "right"}, "", ""},
		{"no credentials", nil, []string{"-"}, "ImagePullBackOff", ""},
		{"a secret missing", []string{"missing", "right"}, []string{"right"}, "",
			"Unable to retrieve some image pull secrets (missing); attempting to pull the image may not succeed."},
		{"credentials for another registry", []string{"elsewhere"}, []string{"-"}, "ImagePullBackOff", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, script, config(nil), nil)
			h.m.SetObjects(&fakeObjects{secrets: map[string]*corev1.Secret{
				"default/wrong":     dockerConfigJSON(`{"registry.example.com": {"username": "wrong", "password": "x"}}`),
				"default/right":     dockerConfigJSON(`{"https://registry.example.com/v1/": {"auth": "` + basic("right", "pw") + `"}}`),
				"default/elsewhere": dockerConfigJSON(`{"quay.io": {"username": "right", "password": "pw"}}`),
			}})
			pod := newPod("p", ctr("c", "registry.example.com/app:1"))
			for _, s := range tc.secrets {
				pod.Spec.ImagePullSecrets = append(pod.Spec.ImagePullSecrets, corev1.LocalObjectReference{Name: s})
			}
			h.add(pod)
			h.runUntil(time.Second)
			var users []string
			for _, q := range sent[*runtimeapi.PullImageRequest](h, "PullImage") {
				u := q.GetAuth().GetUsername()
				if u == "" {
					u = "-"
				}
				users = append(users, u)
			}
			if strings.Join(users, ",") != strings.Join(tc.pulls, ",") {
				t.Errorf("pulls with %v, want %v", users, tc.pulls)
			}
			st := h.pod("p").Status.ContainerStatuses[0]
			if tc.waiting == "" && st.State.Running == nil {
				t.Errorf("container %+v, want running", st.State)
			}
			if tc.waiting != "" && (st.State.Waiting == nil || st.State.Waiting.Reason != tc.waiting) {
				t.Errorf("container %+v, want waiting %s", st.State, tc.waiting)
			}
			evs := h.rec.reasons(ReasonFailedToRetrieveImagePullSecret)
			if tc.events == "" && len(evs) != 0 || tc.events != "" && (len(evs) == 0 || evs[0].note != tc.events) {
				t.Errorf("events %v, want %q", h.rec.lines(), tc.events)
			}
		})
	}
}
