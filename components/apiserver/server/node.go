package server

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	orchletapis "orch.io/orch/components/apis/orchlet"
	"orch.io/orch/components/apiserver/registry/core"
	"orch.io/orch/components/apiserver/registry/generic"
	"orch.io/orch/components/authn"
	"orch.io/orch/components/authz"
)

// MirrorPodAnnotation marks a pod an agent created to show one of its static pods.
const MirrorPodAnnotation = "orch.io/config.mirror"

// NodeAuthorization links the Node authorization mode to the server it runs in: the mode's
// authorizer reads pods through Pod, which New binds to the pods store, and the server enforces
// Kubernetes' NodeRestriction admission, which the mode comes with.
type NodeAuthorization struct {
	pods atomic.Pointer[generic.Store]
}

// Pod reads a pod from the pods store (an authz.PodGetter).
func (n *NodeAuthorization) Pod(ctx context.Context, namespace, name string) (*corev1.Pod, error) {
	store := n.pods.Load()
	if store == nil {
		return nil, apierrors.NewServiceUnavailable("the pods store is not ready yet")
	}
	obj, err := store.Get(ctx, namespace, name)
	if err != nil {
		return nil, err
	}
	return obj.(*corev1.Pod), nil
}

// nodeRestriction is NodeRestriction's judgement of a node's request by its path, with the pods
// read from n.
func nodeRestriction(n *NodeAuthorization) func(context.Context, authz.Attributes) error {
	return func(ctx context.Context, attrs authz.Attributes) error {
		if _, isNode := authz.NodeIdentity(attrs.User); !isNode {
			return nil
		}
		reason, err := authz.NodeRestriction(ctx, attrs, n.Pod)
		switch {
		case err != nil:
			return apierrors.NewInternalError(err)
		case reason != "":
			return apierrors.NewForbidden(schema.GroupResource{Group: attrs.APIGroup, Resource: attrs.Resource}, attrs.Name, errors.New(reason))
		}
		return nil
	}
}

// admit is the server's admission of writes. A create (old nil) of a namespaced object passes
// NamespaceLifecycle; with the Node authorization mode, a node's writes pass NodeRestriction's
// rules on their content: it creates only its own Node and Lease and mirror pods of its own, and
// changes neither the taints of its Node nor labels an agent does not set.
func (r *registry) admit(ctx context.Context, gr schema.GroupResource, obj, old runtime.Object) error {
	m, err := meta.Accessor(obj)
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	if old == nil && m.GetNamespace() != "" {
		if err := r.admitNamespace(ctx, gr, obj); err != nil {
			return err
		}
		if err := r.admitServiceAccount(ctx, gr, obj); err != nil {
			return err
		}
	}
	if r.node == nil {
		return nil
	}
	user, _ := authn.UserFrom(ctx)
	node, isNode := authz.NodeIdentity(user)
	if !isNode {
		return nil
	}
	if node == "" {
		return apierrors.NewForbidden(gr, m.GetName(), fmt.Errorf("could not determine node from user %q", user.Name))
	}
	var reason string
	switch o := obj.(type) {
	case *corev1.Pod:
		if old == nil {
			if reason, err = r.mirrorPodRefusal(ctx, node, o); err != nil {
				return err
			}
		}
	case *corev1.Node:
		oldNode, _ := old.(*corev1.Node)
		reason = nodeRefusal(node, o, oldNode)
	case *coordinationv1.Lease:
		if o.Name != node {
			reason = "can only access node lease with the same name as the requesting node"
		}
	}
	if reason == "" {
		return nil
	}
	return apierrors.NewForbidden(gr, m.GetName(), errors.New(reason))
}

// nodeRefusal is why a node may not write n (over old, nil for a create): another node's Node, a
// change of its taints, or labels in the orch.io namespace beyond the ones an agent sets.
func nodeRefusal(node string, n, old *corev1.Node) string {
	if n.Name != node {
		return fmt.Sprintf("node %q is not allowed to modify node %q", node, n.Name)
	}
	var oldLabels map[string]string
	if old != nil {
		if !apiequality.Semantic.DeepEqual(ownTaints(n.Spec.Taints), ownTaints(old.Spec.Taints)) {
			return fmt.Sprintf("node %q is not allowed to modify taints", node)
		}
		oldLabels = old.Labels
	}
	var forbidden []string
	for k := range modifiedLabels(n.Labels, oldLabels) {
		if orchletapis.IsOrchLabel(k) && !orchletapis.IsOrchletLabel(k) {
			forbidden = append(forbidden, k)
		}
	}
	if len(forbidden) == 0 {
		return ""
	}
	slices.Sort(forbidden)
	if old == nil {
		return fmt.Sprintf("node %q is not allowed to set the following labels: %s", node, strings.Join(forbidden, ", "))
	}
	return fmt.Sprintf("is not allowed to modify labels: %s", strings.Join(forbidden, ", "))
}

// ownTaints are taints without those the server keeps in step with the node's conditions, which
// follow the node's status however it is written.
func ownTaints(taints []corev1.Taint) []corev1.Taint {
	var own []corev1.Taint
	for _, t := range taints {
		if t.Effect != corev1.TaintEffectNoSchedule || !core.IsConditionTaint(t.Key) {
			own = append(own, t)
		}
	}
	return own
}

// modifiedLabels are the keys added, removed or changed between a and b.
func modifiedLabels(a, b map[string]string) map[string]bool {
	modified := map[string]bool{}
	for k, v := range a {
		if w, ok := b[k]; !ok || v != w {
			modified[k] = true
		}
	}
	for k, v := range b {
		if w, ok := a[k]; !ok || v != w {
			modified[k] = true
		}
	}
	return modified
}

// mirrorPodRefusal is why a node may not create pod: a node creates only mirror pods of its own,
// bound to it, owned by its Node, referring to no other object of the API.
func (r *registry) mirrorPodRefusal(ctx context.Context, node string, pod *corev1.Pod) (string, error) {
	if _, mirror := pod.Annotations[MirrorPodAnnotation]; !mirror {
		return fmt.Sprintf("pod does not have %q annotation, node %q can only create mirror pods", MirrorPodAnnotation, node), nil
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
	obj, err := r.nodes.Get(ctx, "", node)
	if apierrors.IsNotFound(err) {
		return "", err
	}
	if err != nil {
		return fmt.Sprintf("error looking up node %s to verify uid: %v", node, err), nil
	}
	if uid := obj.(*corev1.Node).UID; pod.OwnerReferences[0].UID != uid {
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
