package core

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
)

// PodObjectNames are the names of the secrets and configmaps spec refers to, as Kubernetes'
// VisitPodSecretNames and VisitPodConfigmapNames find them.
func PodObjectNames(spec *corev1.PodSpec) (secrets, configMaps []string) {
	for _, s := range spec.ImagePullSecrets {
		secrets = append(secrets, s.Name)
	}
	ref := func(r *corev1.LocalObjectReference) {
		if r != nil {
			secrets = append(secrets, r.Name)
		}
	}
	for _, v := range spec.Volumes {
		s := v.VolumeSource
		switch {
		case s.Secret != nil:
			secrets = append(secrets, s.Secret.SecretName)
		case s.ConfigMap != nil:
			configMaps = append(configMaps, s.ConfigMap.Name)
		case s.Projected != nil:
			for _, p := range s.Projected.Sources {
				if p.Secret != nil {
					secrets = append(secrets, p.Secret.Name)
				}
				if p.ConfigMap != nil {
					configMaps = append(configMaps, p.ConfigMap.Name)
				}
			}
		case s.AzureFile != nil:
			secrets = append(secrets, s.AzureFile.SecretName)
		case s.CephFS != nil:
			ref(s.CephFS.SecretRef)
		case s.Cinder != nil:
			ref(s.Cinder.SecretRef)
		case s.FlexVolume != nil:
			ref(s.FlexVolume.SecretRef)
		case s.ISCSI != nil:
			ref(s.ISCSI.SecretRef)
		case s.RBD != nil:
			ref(s.RBD.SecretRef)
		case s.ScaleIO != nil:
			ref(s.ScaleIO.SecretRef)
		case s.StorageOS != nil:
			ref(s.StorageOS.SecretRef)
		case s.CSI != nil:
			ref(s.CSI.NodePublishSecretRef)
		}
	}
	containers := slices.Concat(spec.InitContainers, spec.Containers)
	for _, c := range spec.EphemeralContainers {
		containers = append(containers, corev1.Container(c.EphemeralContainerCommon))
	}
	for _, c := range containers {
		for _, e := range c.EnvFrom {
			if e.SecretRef != nil {
				secrets = append(secrets, e.SecretRef.Name)
			}
			if e.ConfigMapRef != nil {
				configMaps = append(configMaps, e.ConfigMapRef.Name)
			}
		}
		for _, e := range c.Env {
			if e.ValueFrom == nil {
				continue
			}
			if e.ValueFrom.SecretKeyRef != nil {
				secrets = append(secrets, e.ValueFrom.SecretKeyRef.Name)
			}
			if e.ValueFrom.ConfigMapKeyRef != nil {
				configMaps = append(configMaps, e.ValueFrom.ConfigMapKeyRef.Name)
			}
		}
	}
	return secrets, configMaps
}
