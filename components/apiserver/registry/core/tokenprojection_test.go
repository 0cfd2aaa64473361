package core

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// serviceAccountToken projections get an hour by default and are checked as Kubernetes checks them.
func TestTokenProjections(t *testing.T) {
	for _, tc := range []struct {
		name string
		src  corev1.ServiceAccountTokenProjection
		want string
	}{
		{"defaults", corev1.ServiceAccountTokenProjection{Path: "token"}, ""},
		{"too short", corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: ptrInt64(599)},
			"spec.volumes[0].projected.sources[0].serviceAccountToken.expirationSeconds: Invalid value: 599: may not specify a duration less than 10 minutes"},
		{"too long", corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: ptrInt64(1<<32 + 1)}, "may not specify a duration larger than 2^32 seconds"},
		{"no path", corev1.ServiceAccountTokenProjection{}, "spec.volumes[0].projected.sources[0].serviceAccountToken.path: Required value"},
		{"absolute", corev1.ServiceAccountTokenProjection{Path: "/token"}, "must be a relative path"},
		{"climbing", corev1.ServiceAccountTokenProjection{Path: "a/../../token"}, "must not contain '..'"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default"}, Spec: corev1.PodSpec{
				Containers: []corev1.Container{{Name: "c", Image: "i"}},
				Volumes:    []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{{ServiceAccountToken: &tc.src}}}}}},
			}}
			PodStrategy{}.PrepareForCreate(pod)
			errs := PodStrategy{}.Validate(pod).ToAggregate()
			if tc.want == "" {
				if errs != nil || *pod.Spec.Volumes[0].Projected.Sources[0].ServiceAccountToken.ExpirationSeconds != 3600 {
					t.Fatalf("errors %v, projection %+v", errs, tc.src)
				}
				return
			}
			if errs == nil || !strings.Contains(errs.Error(), tc.want) {
				t.Errorf("errors %v, want %q", errs, tc.want)
			}
		})
	}
}

func ptrInt64(v int64) *int64 { return &v }
