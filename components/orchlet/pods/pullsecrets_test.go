package pods

import (
	"context"
	"encoding/base64"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"orch.io/orch/components/orchlet/pods/credentialprovider"
	"orch.io/orch/components/orchlet/pods/images"
	fakescript "orch.io/orch/fakecri/script"
)

func dockerConfigJSON(auths string) *corev1.Secret {
	return &corev1.Secret{Type: corev1.SecretTypeDockerConfigJson, Data: map[string][]byte{corev1.DockerConfigJsonKey: []byte(`{"auths":` + auths + `}`)}}
}

func basic(user, pass string) string {
	return base64.StdEncoding.EncodeToString([]byte(user + ":" + pass))
}

// In API mode a pull carries the credentials of the pod's image pull secrets for the image's
// registry, trying each until one works; a registry that wants credentials refuses a pull
// without them; a secret that cannot be read gets the kubelet's warning.
func TestPullWithImagePullSecrets(t *testing.T) {
	script := &fakescript.Script{Images: []fakescript.ImageRule{{Match: "registry.example.com/*", Auth: &fakescript.Auth{Username: "right", Password: "pw"}}}}
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
			evs := h.rec.reasons(images.ReasonFailedToRetrieveImagePullSecret)
			if tc.events == "" && len(evs) != 0 || tc.events != "" && (len(evs) == 0 || evs[0].note != tc.events) {
				t.Errorf("events %v, want %q", h.rec.lines(), tc.events)
			}
		})
	}
}

// fakePlugins gives the same credentials for every image, as a credential provider plugin.
type fakePlugins map[string]credentialprovider.Auth

func (f fakePlugins) Provide(context.Context, credentialprovider.Pod, string) []map[string]credentialprovider.Auth {
	return []map[string]credentialprovider.Auth{f}
}

// The credential provider plugins' credentials are tried after the pod's pull secrets', as the
// kubelet's union keyring orders them; without an API server they are all there is.
func TestPullWithCredentialPlugins(t *testing.T) {
	script := &fakescript.Script{Images: []fakescript.ImageRule{{Match: "registry.example.com/*", Auth: &fakescript.Auth{Username: "right", Password: "pw"}}}}
	plugins := fakePlugins{"registry.example.com": {Username: "right", Password: "pw"}, "quay.io": {Username: "other", Password: "x"}}
	for _, tc := range []struct {
		name    string
		secrets []string // nil: no API server
		pulls   string
	}{
		{"standalone: the plugin's", nil, "right"},
		{"a pull secret's first, then the plugin's", []string{"wrong"}, "wrong,right"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, script, config(nil), func(o *Options) { o.Node.Credentials = plugins })
			pod := newPod("p", ctr("c", "registry.example.com/app:1"))
			if tc.secrets != nil {
				h.m.SetObjects(&fakeObjects{secrets: map[string]*corev1.Secret{
					"default/wrong": dockerConfigJSON(`{"registry.example.com": {"username": "wrong", "password": "x"}}`),
				}})
				for _, s := range tc.secrets {
					pod.Spec.ImagePullSecrets = append(pod.Spec.ImagePullSecrets, corev1.LocalObjectReference{Name: s})
				}
			}
			h.add(pod)
			h.runUntil(time.Second)
			var users []string
			for _, q := range sent[*runtimeapi.PullImageRequest](h, "PullImage") {
				users = append(users, q.GetAuth().GetUsername())
			}
			if strings.Join(users, ",") != tc.pulls {
				t.Errorf("pulls with %v, want %s", users, tc.pulls)
			}
			if st := h.pod("p").Status.ContainerStatuses[0]; st.State.Running == nil {
				t.Errorf("container %+v, want running", st.State)
			}
		})
	}
}
