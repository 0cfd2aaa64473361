package server

import (
	"context"
	"slices"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/fields"

	"orch.io/orch/components/apiserver/registry/core"
	"orch.io/orch/components/apiserver/registry/generic"
)

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

// References tells whether a pod bound to node refers to the configmap, secret or service account namespace/name
// (an authz.ObjectRefs): the pod-to-object edges of Kubernetes' node authorizer graph, read from
// the pods store at the time of the request.
func (n *NodeAuthorization) References(ctx context.Context, node, namespace, resource, name string) (bool, error) {
	store := n.pods.Load()
	if store == nil {
		return false, apierrors.NewServiceUnavailable("the pods store is not ready yet")
	}
	list, err := store.List(ctx, namespace, generic.ListOptions{Fields: fields.OneTermEqualSelector("spec.nodeName", node)})
	if err != nil {
		return false, err
	}
	for _, obj := range generic.Items(list) {
		spec := &obj.(*corev1.Pod).Spec
		secrets, configMaps := core.PodObjectNames(spec)
		switch {
		case resource == "serviceaccounts" && spec.ServiceAccountName == name:
			return true, nil
		case resource == "secrets" && slices.Contains(secrets, name),
			resource == "configmaps" && slices.Contains(configMaps, name):
			return true, nil
		}
	}
	return false, nil
}
