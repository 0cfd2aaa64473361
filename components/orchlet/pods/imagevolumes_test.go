package pods

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"orch.io/orch/components/apis/orchlet/v1beta1"
	"orch.io/orch/components/orchlet/pods/images"
	"orch.io/orch/components/orchlet/pods/podsync"
	fakescript "orch.io/orch/fakecri/script"
)

func imageVolumesOn(c *v1beta1.OrchletConfiguration) {
	c.FeatureGates = map[string]bool{"ImageVolume": true}
}

// With ImageVolume, an image volume's image is pulled by its own policy before the container that
// mounts it is created, and reaches the runtime as an image mount, read-only, with its subPath.
func TestImageVolumeMountedFromItsImage(t *testing.T) {
	h := newHarness(t, nil, config(imageVolumesOn), nil)
	app := ctr("app", "nginx:1.27")
	app.VolumeMounts = []corev1.VolumeMount{
		{Name: "models", MountPath: "/models"},
		{Name: "models", MountPath: "/weights", SubPath: "v2/weights"},
	}
	pod := newPod("web", app)
	pod.Spec.Volumes = []corev1.Volume{{Name: "models", VolumeSource: corev1.VolumeSource{Image: &corev1.ImageVolumeSource{Reference: "registry.example/models:1"}}}}
	h.add(pod)
	h.runUntil(time.Second)

	pulls := sent[*runtimeapi.PullImageRequest](h, "PullImage")
	if len(pulls) != 2 || pulls[0].Image.Image != "nginx:1.27" || pulls[1].Image.Image != "registry.example/models:1" {
		t.Fatalf("pulls %v, want the container's image, then the volume's", pulls)
	}
	ctrs := sent[*runtimeapi.CreateContainerRequest](h, "CreateContainer")
	if len(ctrs) != 1 {
		t.Fatalf("%d containers created; events %q", len(ctrs), h.rec.lines())
	}
	var mounts []*runtimeapi.Mount
	for _, m := range ctrs[0].Config.Mounts {
		if m.Image != nil {
			mounts = append(mounts, m)
		}
	}
	pulled := h.calls("PullImage", "registry.example/models:1")
	if len(pulled) != 1 {
		t.Fatalf("the volume's image pulled %d times", len(pulled))
	}
	ref := pulled[0].Response
	priv := runtimeapi.MountPropagation_PROPAGATION_PRIVATE
	want := []*runtimeapi.Mount{
		{ContainerPath: "/models", Image: &runtimeapi.ImageSpec{Image: ref, UserSpecifiedImage: "registry.example/models:1"}, Readonly: true, Propagation: priv},
		{ContainerPath: "/weights", Image: &runtimeapi.ImageSpec{Image: ref, UserSpecifiedImage: "registry.example/models:1"}, ImageSubPath: "v2/weights", Readonly: true, Propagation: priv},
	}
	if len(mounts) != len(want) {
		t.Fatalf("image mounts %v, want %v", mounts, want)
	}
	for i := range want {
		diffProto(t, "mount "+want[i].ContainerPath, want[i], mounts[i])
	}
	var onPod bool
	for _, e := range h.rec.reasons(images.ReasonPulling) {
		onPod = onPod || (e.object == "default/web" && e.note == `Pulling image "registry.example/models:1"`)
	}
	if !onPod {
		t.Errorf("no Pulling event about the pod for the volume's image: %q", h.rec.lines())
	}
}

// A volume image that cannot be pulled fails as a container's own image would (ErrImagePull, then
// ImagePullBackOff) and holds back the container that mounts it, while a container without it runs.
func TestImageVolumePullFailureHoldsItsContainer(t *testing.T) {
	script := &fakescript.Script{Images: []fakescript.ImageRule{{Match: "missing:*", PullError: &fakescript.PullError{Code: "NotFound", Message: "not found"}}}}
	h := newHarness(t, script, config(imageVolumesOn), nil)
	app := ctr("app", "nginx:1.27")
	app.VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
	pod := newPod("web", app, ctr("side", "busybox:1.36"))
	pod.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{Image: &corev1.ImageVolumeSource{Reference: "missing:1", PullPolicy: corev1.PullIfNotPresent}}}}
	h.add(pod)
	h.runUntil(time.Second)
	waiting := func() string {
		for _, cs := range h.pod("web").Status.ContainerStatuses {
			if cs.Name == "app" && cs.State.Waiting != nil {
				return cs.State.Waiting.Reason
			}
		}
		return ""
	}
	var failed bool
	for _, e := range h.rec.reasons(podsync.ReasonFailed) {
		failed = failed || (e.object == "default/web" && e.note == "Error: "+images.WaitErrImagePull)
	}
	if !failed {
		t.Fatalf("no ErrImagePull event about the pod; events %q", h.rec.lines())
	}
	if got := waiting(); got != images.WaitImageBackOff {
		t.Fatalf("app waits with %q after its volume's pull failed, want %s", got, images.WaitImageBackOff)
	}
	if created := sent[*runtimeapi.CreateContainerRequest](h, "CreateContainer"); len(created) != 1 || created[0].Config.Metadata.Name != "side" {
		t.Fatalf("containers created %v, want only side", created)
	}
}
