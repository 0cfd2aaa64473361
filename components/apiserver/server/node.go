package server

import (
	"context"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

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
