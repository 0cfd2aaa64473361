package serviceaccount

import (
	"context"
	"maps"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"orch.io/orch/components/apiserver/registry/core"
)

// publishRootCA keeps the namespace's orch-root-ca.crt configmap holding ca (none while it is not
// known), as Kubernetes' root CA publisher keeps kube-root-ca.crt.
func (c *Controller) publishRootCA(ctx context.Context, namespace string, ca []byte) error {
	if ca == nil {
		return nil
	}
	want := map[string]string{"ca.crt": string(ca)}
	obj, err := c.ConfigMaps.Get(ctx, namespace, core.RootCAConfigMap)
	switch {
	case apierrors.IsNotFound(err):
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: core.RootCAConfigMap, Namespace: namespace}, Data: want}
		if _, err := c.ConfigMaps.Create(ctx, namespace, cm, false); err != nil && !apierrors.IsAlreadyExists(err) && !apierrors.IsForbidden(err) {
			return err
		}
		return nil
	case err != nil:
		return err
	}
	if maps.Equal(obj.(*corev1.ConfigMap).Data, want) {
		return nil
	}
	_, err = c.ConfigMaps.GuaranteedUpdate(ctx, namespace, core.RootCAConfigMap, func(obj runtime.Object) (runtime.Object, error) {
		cm := obj.(*corev1.ConfigMap)
		cm.Data, cm.BinaryData = want, nil
		return cm, nil
	})
	return err
}
