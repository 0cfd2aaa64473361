package pods

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"orch.io/orch/components/orchlet/sources"
)

// fakeTokens issues tokens tok-1, tok-2, ... expiring expirationSeconds from the clock's now,
// recording what was asked.
type fakeTokens struct {
	clock clock.Clock
	mu    sync.Mutex
	asked []string
	fail  error
}

func (f *fakeTokens) CreateToken(_ context.Context, namespace, name string, tr *authenticationv1.TokenRequest) (*authenticationv1.TokenRequest, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	ref := tr.Spec.BoundObjectRef
	f.asked = append(f.asked, fmt.Sprintf("%s/%s aud=%v exp=%d bound=%s/%s/%s/%s", namespace, name, tr.Spec.Audiences, *tr.Spec.ExpirationSeconds, ref.APIVersion, ref.Kind, ref.Name, ref.UID))
	if f.fail != nil {
		return nil, f.fail
	}
	out := tr.DeepCopy()
	out.Status = authenticationv1.TokenRequestStatus{Token: fmt.Sprintf("tok-%d", len(f.asked)),
		ExpirationTimestamp: metav1.NewTime(f.clock.Now().Add(time.Duration(*tr.Spec.ExpirationSeconds) * time.Second))}
	return out, nil
}

func (f *fakeTokens) requests() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.asked...)
}

func tokenHarness(t *testing.T) (*harness, *fakeTokens) {
	h := newHarness(t, nil, config(nil), nil)
	h.m.SetObjects(&fakeObjects{})
	tokens := &fakeTokens{clock: h.mock}
	h.m.SetTokens(tokens)
	return h, tokens
}

func tokenVolume(sources ...corev1.ServiceAccountTokenProjection) corev1.Volume {
	v := corev1.Volume{Name: "v", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{}}}
	for i := range sources {
		v.Projected.Sources = append(v.Projected.Sources, corev1.VolumeProjection{ServiceAccountToken: &sources[i]})
	}
	return v
}

// Static pods refer to no service account, by spec.serviceAccountName, its deprecated name or a
// token projection (PreventStaticPodAPIReferences).
func TestStaticPodsRefuseServiceAccounts(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*corev1.Pod)
	}{
		{"serviceAccountName", func(p *corev1.Pod) { p.Spec.ServiceAccountName = "x" }},
		{"serviceAccount", func(p *corev1.Pod) { p.Spec.DeprecatedServiceAccount = "x" }},
		{"token projection", func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{tokenVolume(corev1.ServiceAccountTokenProjection{Path: "t"})}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, tokens := tokenHarness(t)
			pod := newPod("p", ctr("c", "i"))
			pod.Annotations = map[string]string{sources.ConfigSourceAnnotation: "file"}
			tc.edit(pod)
			h.add(pod)
			h.runUntil(time.Second)
			if st := h.pod("p").Status; st.Reason != ReasonUnsupportedPodSpec || st.Message != "static pods may not reference serviceaccounts" {
				t.Errorf("status %s %q", st.Reason, st.Message)
			}
			if len(tokens.requests()) != 0 {
				t.Errorf("tokens asked for a static pod: %v", tokens.requests())
			}
		})
	}
}
