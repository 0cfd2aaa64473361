package noderestriction

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"orch.io/orch/components/apiserver/registry/core"
)

// mirrorPodRefusal is why a node may not create pod: a node creates only mirror pods of its own,
// bound to it, owned by its Node, referring to no other object of the API.
func (p *Plugin) mirrorPodRefusal(ctx context.Context, node string, pod *corev1.Pod) (string, error) {
	if _, mirror := pod.Annotations[core.MirrorPodAnnotation]; !mirror {
		return fmt.Sprintf("pod does not have %q annotation, node %q can only create mirror pods", core.MirrorPodAnnotation, node), nil
	}
	if pod.Spec.NodeName != node {
		return fmt.Sprintf("node %q can only create pods with spec.nodeName set to itself", node), nil
	}
	switch refs := pod.OwnerReferences; {
	case len(refs) > 1:
		return fmt.Sprintf("node %q can only create pods with a single owner reference set to itself", node), nil
	case len(refs) == 0 || refs[0].APIVersion != "v1" || refs[0].Kind != "Node" || refs[0].Name != node:
		return fmt.Sprintf("node %q can only create pods with an owner reference set to itself", node), nil
	case refs[0].Controller == nil || !*refs[0].Controller:
		return fmt.Sprintf("node %q can only create pods with a controller owner reference set to itself", node), nil
	case refs[0].BlockOwnerDeletion != nil && *refs[0].BlockOwnerDeletion:
		return fmt.Sprintf("node %q must not set blockOwnerDeletion on an owner reference", node), nil
	}
	owner, err := p.Node(ctx, node)
	if apierrors.IsNotFound(err) {
		return "", err
	}
	if err != nil {
		return fmt.Sprintf("error looking up node %s to verify uid: %v", node, err), nil
	}
	if uid := owner.UID; pod.OwnerReferences[0].UID != uid {
		return fmt.Sprintf("node %s UID mismatch: expected %s got %s", node, pod.OwnerReferences[0].UID, uid), nil
	}
	if what := referencedObjects(&pod.Spec); what != "" {
		return fmt.Sprintf("node %q can not create pods that reference %s", node, what), nil
	}
	return "", nil
}

// referencedObjects names the first kind of API object spec refers to (a service account,
// secrets, configmaps, persistent volume claims, cluster trust bundles), or "" for none: a node
// reads only the objects of pods bound to it, so a pod of its own making must refer to none.
func referencedObjects(spec *corev1.PodSpec) string {
	if spec.ServiceAccountName != "" {
		return "a service account"
	}
	var secrets, configMaps, claims, bundles bool
	secrets = len(spec.ImagePullSecrets) > 0
	for _, v := range spec.Volumes {
		s := v.VolumeSource
		secrets = secrets || s.Secret != nil || (s.CSI != nil && s.CSI.NodePublishSecretRef != nil) ||
			s.AzureFile != nil || (s.CephFS != nil && s.CephFS.SecretRef != nil) || (s.Cinder != nil && s.Cinder.SecretRef != nil) ||
			(s.FlexVolume != nil && s.FlexVolume.SecretRef != nil) || (s.ISCSI != nil && s.ISCSI.SecretRef != nil) ||
			(s.RBD != nil && s.RBD.SecretRef != nil) || (s.ScaleIO != nil && s.ScaleIO.SecretRef != nil) ||
			(s.StorageOS != nil && s.StorageOS.SecretRef != nil)
		configMaps = configMaps || s.ConfigMap != nil
		claims = claims || s.PersistentVolumeClaim != nil
		if s.Projected != nil {
			for _, p := range s.Projected.Sources {
				secrets = secrets || p.Secret != nil
				configMaps = configMaps || p.ConfigMap != nil
				bundles = bundles || p.ClusterTrustBundle != nil
			}
		}
	}
	containers := slices.Concat(spec.InitContainers, spec.Containers)
	for _, c := range spec.EphemeralContainers {
		containers = append(containers, corev1.Container(c.EphemeralContainerCommon))
	}
	for _, c := range containers {
		for _, e := range c.EnvFrom {
			secrets = secrets || e.SecretRef != nil
			configMaps = configMaps || e.ConfigMapRef != nil
		}
		for _, e := range c.Env {
			if e.ValueFrom != nil {
				secrets = secrets || e.ValueFrom.SecretKeyRef != nil
				configMaps = configMaps || e.ValueFrom.ConfigMapKeyRef != nil
			}
		}
	}
	switch {
	case secrets:
		return "secrets"
	case configMaps:
		return "configmaps"
	case bundles:
		return "clustertrustbundles"
	case claims:
		return "persistentvolumeclaims"
	}
	return ""
}
