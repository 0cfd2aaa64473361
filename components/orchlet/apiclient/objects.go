package apiclient

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Objects reads the configmaps and secrets of the node's pods from the API server, a get each
// time (the kubelet's Get strategy); a missing one is NotFound in the kubelet's words
// (`configmap "x" not found`), which a container waiting on it shows.
type Objects struct {
	Client *CoreV1Client
}

func (o Objects) GetConfigMap(ctx context.Context, namespace, name string) (*corev1.ConfigMap, error) {
	cm, err := o.Client.ConfigMaps(namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, apierrors.NewNotFound(corev1.Resource("configmap"), name)
	}
	return cm, err
}

func (o Objects) GetSecret(ctx context.Context, namespace, name string) (*corev1.Secret, error) {
	s, err := o.Client.Secrets(namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, apierrors.NewNotFound(corev1.Resource("secret"), name)
	}
	return s, err
}

// GetServiceAccount reads a service account, for credential provider plugins in service account
// token mode.
func (o Objects) GetServiceAccount(ctx context.Context, namespace, name string) (*corev1.ServiceAccount, error) {
	return o.Client.ServiceAccounts(namespace).Get(ctx, name, metav1.GetOptions{})
}
