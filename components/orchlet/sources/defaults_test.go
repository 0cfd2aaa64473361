package sources

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
)

// A static pod's limits stand for the requests it omits, as SetDefaults_Pod makes them for the
// kubelet's file and HTTP sources: a pod with CPU and memory limits only is Guaranteed.
func TestDecodeDefaultsRequestsFromLimits(t *testing.T) {
	q := resource.MustParse
	for _, tc := range []struct {
		name, manifest string
		init, main     corev1.ResourceList
	}{
		{
			name: "limits only",
			manifest: `{apiVersion: v1, kind: Pod, metadata: {name: p}, spec: {containers: [{name: a, image: i,
				resources: {limits: {cpu: 250m, memory: 64Mi}}}]}}`,
			main: corev1.ResourceList{corev1.ResourceCPU: q("250m"), corev1.ResourceMemory: q("64Mi")},
		},
		{
			name: "a request given is kept",
			manifest: `{apiVersion: v1, kind: Pod, metadata: {name: p}, spec: {containers: [{name: a, image: i,
				resources: {requests: {cpu: 100m}, limits: {cpu: 250m, memory: 64Mi}}}]}}`,
			main: corev1.ResourceList{corev1.ResourceCPU: q("100m"), corev1.ResourceMemory: q("64Mi")},
		},
		{
			name: "init containers too",
			manifest: `{apiVersion: v1, kind: Pod, metadata: {name: p}, spec: {
				initContainers: [{name: i, image: i, resources: {limits: {memory: 1Gi}}}],
				containers: [{name: a, image: i}]}}`,
			init: corev1.ResourceList{corev1.ResourceMemory: q("1Gi")},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pods, err := decodePods([]byte(tc.manifest), false)
			if err != nil {
				t.Fatal(err)
			}
			p := pods[0]
			if got := p.Spec.Containers[0].Resources.Requests; !equality.Semantic.DeepEqual(got, tc.main) {
				t.Errorf("container requests %v, want %v", got, tc.main)
			}
			if tc.init != nil {
				if got := p.Spec.InitContainers[0].Resources.Requests; !equality.Semantic.DeepEqual(got, tc.init) {
					t.Errorf("init container requests %v, want %v", got, tc.init)
				}
			}
		})
	}
}
