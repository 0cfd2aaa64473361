package core

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"orch.io/orch/components/apiserver/registry/generic"
)

// PodEphemeralContainersStrategy is pods/ephemeralcontainers, Kubernetes'
// podEphemeralContainersStrategy: a write changes spec.ephemeralContainers and nothing else, adds
// containers and never changes or removes one.
type PodEphemeralContainersStrategy struct{ PodStrategy }

// PrepareForUpdate is Kubernetes' dropNonEphemeralContainerUpdates: the stored pod with only the
// new ephemeral containers taken from the request, defaulted as a container is.
func (PodEphemeralContainersStrategy) PrepareForUpdate(obj, old runtime.Object) {
	pod, o := obj.(*corev1.Pod), old.(*corev1.Pod)
	ephemeral := pod.Spec.EphemeralContainers
	rv := pod.ResourceVersion
	*pod = *o.DeepCopy()
	pod.ResourceVersion = rv
	pod.Spec.EphemeralContainers = ephemeral
	for i := range pod.Spec.EphemeralContainers {
		c := corev1.Container(pod.Spec.EphemeralContainers[i].EphemeralContainerCommon)
		defaultContainer(&c)
		pod.Spec.EphemeralContainers[i].EphemeralContainerCommon = corev1.EphemeralContainerCommon(c)
	}
	if !apiequality.Semantic.DeepEqual(pod.Spec.EphemeralContainers, o.Spec.EphemeralContainers) {
		pod.Generation = o.Generation + 1
	}
}

// ValidateUpdate is Kubernetes' ValidatePodEphemeralContainersUpdate: the new ephemeral
// containers valid, and each existing one still there, unchanged.
func (PodEphemeralContainersStrategy) ValidateUpdate(obj, old runtime.Object) field.ErrorList {
	pod, o := obj.(*corev1.Pod), old.(*corev1.Pod)
	errs := generic.ValidateObjectMetaUpdate(&pod.ObjectMeta, &o.ObjectMeta, field.NewPath("metadata"))
	path := field.NewPath("spec", "ephemeralContainers")
	errs = append(errs, ValidateEphemeralContainers(&pod.Spec, path)...)
	byName := map[string]*corev1.EphemeralContainer{}
	for i := range pod.Spec.EphemeralContainers {
		byName[pod.Spec.EphemeralContainers[i].Name] = &pod.Spec.EphemeralContainers[i]
	}
	for _, oc := range o.Spec.EphemeralContainers {
		if nc, ok := byName[oc.Name]; !ok {
			errs = append(errs, field.Forbidden(path, fmt.Sprintf("existing ephemeral containers %q may not be removed\n", oc.Name)))
		} else if !apiequality.Semantic.DeepEqual(oc, *nc) {
			errs = append(errs, field.Forbidden(path.Key(oc.Name), fmt.Sprintf("existing ephemeral containers %q may not be changed", oc.Name)))
		}
	}
	return errs
}

// ValidateEphemeralContainers is Kubernetes': each a valid container whose name is unique across
// every container of the pod, whose target names a regular or init container, and which sets
// none of what would make the pod rely on it (ports, probes, resources, lifecycle, restart
// policy, volume subpaths).
func ValidateEphemeralContainers(spec *corev1.PodSpec, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	volumes := sets.New[string]()
	for _, v := range spec.Volumes {
		volumes.Insert(v.Name)
	}
	names, targets := sets.New[string](), sets.New[string]()
	for _, list := range [][]corev1.Container{spec.Containers, spec.InitContainers} {
		for _, c := range list {
			names.Insert(c.Name)
			targets.Insert(c.Name)
		}
	}
	common := make([]corev1.Container, len(spec.EphemeralContainers))
	for i, ec := range spec.EphemeralContainers {
		common[i] = corev1.Container(ec.EphemeralContainerCommon)
	}
	// validateContainers reports a name already taken as Duplicate, as Kubernetes does.
	errs = append(errs, validateContainers(common, path, names, volumes)...)
	for i, ec := range spec.EphemeralContainers {
		p := path.Index(i)
		c := common[i]
		if ec.TargetContainerName != "" && !targets.Has(ec.TargetContainerName) {
			errs = append(errs, field.NotFound(p.Child("targetContainerName"), ec.TargetContainerName))
		}
		const forbidden = "cannot be set for an Ephemeral Container"
		for _, f := range []struct {
			name string
			set  bool
		}{
			{"ports", len(c.Ports) > 0},
			{"resources", !apiequality.Semantic.DeepEqual(c.Resources, corev1.ResourceRequirements{})},
			{"resizePolicy", len(c.ResizePolicy) > 0},
			{"restartPolicy", c.RestartPolicy != nil},
			{"lifecycle", c.Lifecycle != nil},
			{"livenessProbe", c.LivenessProbe != nil},
			{"readinessProbe", c.ReadinessProbe != nil},
			{"startupProbe", c.StartupProbe != nil},
		} {
			if f.set {
				errs = append(errs, field.Forbidden(p.Child(f.name), forbidden))
			}
		}
		for j, vm := range c.VolumeMounts {
			if vm.SubPath != "" {
				errs = append(errs, field.Forbidden(p.Child("volumeMounts").Index(j).Child("subPath"), forbidden))
			}
			if vm.SubPathExpr != "" {
				errs = append(errs, field.Forbidden(p.Child("volumeMounts").Index(j).Child("subPathExpr"), forbidden))
			}
		}
	}
	return errs
}

func (PodEphemeralContainersStrategy) ResetFields() []string {
	return []string{"status", "metadata.deletionTimestamp", "metadata.ownerReferences"}
}

func (PodEphemeralContainersStrategy) Subresource() string { return "ephemeralcontainers" }
