package pods

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"

	"orch.io/orch/components/orchlet/sources"
)

// countingTokens issues no token; it counts what it was asked for.
type countingTokens struct{ asked atomic.Int32 }

func (c *countingTokens) CreateToken(context.Context, string, string, *authenticationv1.TokenRequest) (*authenticationv1.TokenRequest, error) {
	c.asked.Add(1)
	return nil, errors.New("no tokens here")
}

func tokenHarness(t *testing.T) (*harness, *countingTokens) {
	h := newHarness(t, nil, config(nil), nil)
	h.m.SetObjects(&fakeObjects{})
	tokens := &countingTokens{}
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
			if n := tokens.asked.Load(); n != 0 {
				t.Errorf("%d tokens asked for a static pod", n)
			}
		})
	}
}
