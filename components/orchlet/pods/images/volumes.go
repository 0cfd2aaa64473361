package images

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"orch.io/orch/components/orchlet/events"
	"orch.io/orch/components/orchlet/pods/backoff"
)

// Volumes are a pod's image volumes as the puller keeps them: the image reference made present for
// each, and each one's pull back-off.
type Volumes struct {
	Refs  map[string]string
	backs map[string]*backoff.Backoff
}

// EnsureVolumes makes present the images of the image volumes c mounts (the ImageVolume gate), as
// the kubelet's getImageVolumes: each pulled by its own policy, events on the pod, and a container
// whose volume image cannot be had waits as it would for its own image.
func (p *Puller) EnsureVolumes(ctx context.Context, pod *corev1.Pod, c *corev1.Container, vols *Volumes, sbCfg *runtimeapi.PodSandboxConfig) Result {
	for _, vm := range c.VolumeMounts {
		v := podVolume(pod, vm.Name)
		if v == nil || v.Image == nil {
			continue
		}
		if vols.backs == nil {
			vols.backs, vols.Refs = map[string]*backoff.Backoff{}, map[string]string{}
		}
		back := vols.backs[v.Name]
		if back == nil {
			back = &backoff.Backoff{}
			vols.backs[v.Name] = back
		}
		image := v.Image.Reference
		r := p.Ensure(ctx, pod, Target{
			Image: image, Policy: defaultPullPolicy(v.Image.PullPolicy, image), Ref: events.PodReference(pod),
			Key: Key{UID: pod.UID, Container: "volume:" + v.Name, Image: image}, Back: back,
		}, sbCfg)
		if !r.OK {
			return r
		}
		vols.Refs[v.Name] = r.Ref
	}
	return Result{OK: true}
}

func podVolume(pod *corev1.Pod, name string) *corev1.Volume {
	for i := range pod.Spec.Volumes {
		if pod.Spec.Volumes[i].Name == name {
			return &pod.Spec.Volumes[i]
		}
	}
	return nil
}
