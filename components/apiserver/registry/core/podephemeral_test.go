package core

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func ephemeralPod(ecs ...corev1.EphemeralContainer) *corev1.Pod {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", ResourceVersion: "7", Generation: 1},
		Spec: corev1.PodSpec{
			InitContainers: []corev1.Container{{Name: "setup", Image: "busybox"}},
			Containers:     []corev1.Container{{Name: "app", Image: "nginx"}},
			NodeName:       "node-1",
		},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	}
	DefaultPodSpec(&pod.Spec)
	pod.Spec.EphemeralContainers = ecs
	return pod
}

func debugger(name, target string) corev1.EphemeralContainer {
	return corev1.EphemeralContainer{TargetContainerName: target, EphemeralContainerCommon: corev1.EphemeralContainerCommon{
		Name: name, Image: "busybox:1.36", Stdin: true, TTY: true}}
}

func TestEphemeralContainersUpdate(t *testing.T) {
	probe := &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}}
	withPort := debugger("debugger", "app")
	withPort.Ports = []corev1.ContainerPort{{ContainerPort: 80}}
	withProbe := debugger("debugger", "app")
	withProbe.ReadinessProbe = probe
	withLifecycle := debugger("debugger", "app")
	withLifecycle.Lifecycle = &corev1.Lifecycle{}
	withResources := debugger("debugger", "app")
	withResources.Resources.Limits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}
	withSubPath := debugger("debugger", "app")
	withSubPath.VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/d", SubPath: "x"}}
	changed := debugger("debugger", "app")
	changed.Image = "busybox:1.37"
	for _, tc := range []struct {
		name     string
		old, new []corev1.EphemeralContainer
		want     string // "" when valid, else a fragment of the first error
	}{
		{"first added", nil, []corev1.EphemeralContainer{debugger("debugger", "app")}, ""},
		{"second added", []corev1.EphemeralContainer{debugger("debugger", "app")}, []corev1.EphemeralContainer{debugger("debugger", "app"), debugger("debugger-2", "")}, ""},
		{"targets an init container", nil, []corev1.EphemeralContainer{debugger("debugger", "setup")}, ""},
		{"named as a container", nil, []corev1.EphemeralContainer{debugger("app", "")}, `spec.ephemeralContainers[0].name: Duplicate value: "app"`},
		{"named as an init container", nil, []corev1.EphemeralContainer{debugger("setup", "")}, `spec.ephemeralContainers[0].name: Duplicate value: "setup"`},
		{"named twice", nil, []corev1.EphemeralContainer{debugger("d", ""), debugger("d", "")}, `spec.ephemeralContainers[1].name: Duplicate value: "d"`},
		{"target unknown", nil, []corev1.EphemeralContainer{debugger("debugger", "nope")}, `spec.ephemeralContainers[0].targetContainerName: Not found: "nope"`},
		{"target ephemeral", []corev1.EphemeralContainer{debugger("d1", "")}, []corev1.EphemeralContainer{debugger("d1", ""), debugger("d2", "d1")}, `spec.ephemeralContainers[1].targetContainerName: Not found: "d1"`},
		{"ports", nil, []corev1.EphemeralContainer{withPort}, "spec.ephemeralContainers[0].ports: Forbidden: cannot be set for an Ephemeral Container"},
		{"probe", nil, []corev1.EphemeralContainer{withProbe}, "spec.ephemeralContainers[0].readinessProbe: Forbidden: cannot be set for an Ephemeral Container"},
		{"lifecycle", nil, []corev1.EphemeralContainer{withLifecycle}, "spec.ephemeralContainers[0].lifecycle: Forbidden"},
		{"resources", nil, []corev1.EphemeralContainer{withResources}, "spec.ephemeralContainers[0].resources: Forbidden"},
		{"subPath", nil, []corev1.EphemeralContainer{withSubPath}, "spec.ephemeralContainers[0].volumeMounts[0].subPath: Forbidden"},
		{"no image", nil, []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "d"}}}, "spec.ephemeralContainers[0].image: Required value"},
		{"removed", []corev1.EphemeralContainer{debugger("debugger", "app")}, nil, `existing ephemeral containers "debugger" may not be removed`},
		{"changed", []corev1.EphemeralContainer{debugger("debugger", "app")}, []corev1.EphemeralContainer{changed}, `spec.ephemeralContainers[debugger]: Forbidden: existing ephemeral containers "debugger" may not be changed`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := PodEphemeralContainersStrategy{}
			old := ephemeralPod(tc.old...)
			s.PrepareForUpdate(old, ephemeralPod()) // the stored ones were defaulted when added
			obj := ephemeralPod(tc.new...)
			s.PrepareForUpdate(obj, old)
			errs := s.ValidateUpdate(obj, old)
			switch {
			case tc.want == "" && len(errs) > 0:
				t.Fatalf("refused: %v", errs.ToAggregate())
			case tc.want != "" && (len(errs) == 0 || !strings.Contains(errs.ToAggregate().Error(), tc.want)):
				t.Fatalf("errors %v, want one with %q", errs.ToAggregate(), tc.want)
			}
		})
	}
}

// Only spec.ephemeralContainers changes through the subresource: the rest of the request is the
// stored pod's, and the new containers are defaulted.
func TestEphemeralContainersKeepTheRest(t *testing.T) {
	s := PodEphemeralContainersStrategy{}
	old := ephemeralPod()
	obj := ephemeralPod(debugger("debugger", "app"))
	obj.Labels = map[string]string{"sneaked": "in"}
	obj.Spec.Containers[0].Image = "evil"
	obj.Spec.ActiveDeadlineSeconds = new(int64)
	obj.Status.Phase = corev1.PodFailed
	s.PrepareForUpdate(obj, old)
	if obj.Labels != nil || obj.Spec.Containers[0].Image != "nginx" || obj.Spec.ActiveDeadlineSeconds != nil || obj.Status.Phase != corev1.PodRunning {
		t.Fatalf("more than ephemeral containers changed: labels %v image %q deadline %v phase %s", obj.Labels, obj.Spec.Containers[0].Image, obj.Spec.ActiveDeadlineSeconds, obj.Status.Phase)
	}
	ec := obj.Spec.EphemeralContainers[0]
	if ec.ImagePullPolicy != corev1.PullIfNotPresent || ec.TerminationMessagePath != corev1.TerminationMessagePathDefault || ec.TerminationMessagePolicy != corev1.TerminationMessageReadFile {
		t.Fatalf("not defaulted: %+v", ec)
	}
	if obj.Generation != 2 || obj.ResourceVersion != "7" {
		t.Fatalf("generation %d resourceVersion %q, want 2 and the request's 7", obj.Generation, obj.ResourceVersion)
	}
}

// A pod update does not add ephemeral containers: only the subresource does.
func TestPodUpdateRefusesEphemeralContainers(t *testing.T) {
	old := ephemeralPod()
	obj := ephemeralPod(debugger("debugger", "app"))
	if errs := (PodStrategy{}).ValidateUpdate(obj, old); len(errs) == 0 {
		t.Fatal("a pod update added an ephemeral container")
	}
}
