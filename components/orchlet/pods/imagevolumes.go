package pods

import (
	"context"

	"orch.io/orch/components/orchlet/events"

	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"orch.io/orch/components/orchlet/pods/backoff"
)

// ensureImageVolumes makes present the images of the image volumes c mounts (the ImageVolume
// gate), as the kubelet's getImageVolumes: each pulled by its own policy, events on the pod, and a
// container whose volume image cannot be had waits as it would for its own image.
func (m *Manager) ensureImageVolumes(ctx context.Context, p *podState, c *corev1.Container, cs *ctrState, sbCfg *runtimeapi.PodSandboxConfig) bool {
	for _, vm := range c.VolumeMounts {
		v := podVolume(p.pod, vm.Name)
		if v == nil || v.Image == nil {
			continue
		}
		if p.volumePulls == nil {
			p.volumePulls, p.imageVolumes = map[string]*backoff.Backoff{}, map[string]string{}
		}
		back := p.volumePulls[v.Name]
		if back == nil {
			back = &backoff.Backoff{}
			p.volumePulls[v.Name] = back
		}
		image := v.Image.Reference
		ref, ok := m.ensureImage(ctx, p, pullTarget{
			image: image, policy: defaultPullPolicy(v.Image.PullPolicy, image), ref: events.PodReference(p.pod),
			key: pullKey{uid: p.pod.UID, container: "volume:" + v.Name, image: image}, back: back,
		}, cs, sbCfg)
		if !ok {
			return false
		}
		p.imageVolumes[v.Name] = ref
	}
	return true
}

func podVolume(pod *corev1.Pod, name string) *corev1.Volume {
	for i := range pod.Spec.Volumes {
		if pod.Spec.Volumes[i].Name == name {
			return &pod.Spec.Volumes[i]
		}
	}
	return nil
}
