package core

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"orch.io/orch/components/apiserver/registry/generic"
)

// DefaultServiceAccountName is the service account every namespace gets and a pod naming none
// runs as, as in Kubernetes.
const DefaultServiceAccountName = "default"

// RootCAConfigMap is the configmap of every namespace that holds the certificates pods verify the
// server with, Kubernetes' kube-root-ca.crt renamed: the root CA publisher keeps it, and the
// token volume mounted into pods projects it.
const RootCAConfigMap = "orch-root-ca.crt"

// ServiceAccountStrategy is the rules of serviceaccounts, as Kubernetes' ValidateServiceAccount:
// a DNS subdomain name and valid metadata; secrets and imagePullSecrets are the user's.
type ServiceAccountStrategy struct{}

func (ServiceAccountStrategy) Resource() schema.GroupVersionResource {
	return GroupVersion.WithResource("serviceaccounts")
}
func (ServiceAccountStrategy) Kind() string              { return "ServiceAccount" }
func (ServiceAccountStrategy) NamespaceScoped() bool     { return true }
func (ServiceAccountStrategy) New() runtime.Object       { return &corev1.ServiceAccount{} }
func (ServiceAccountStrategy) NewList() runtime.Object   { return &corev1.ServiceAccountList{} }
func (ServiceAccountStrategy) AllowCreateOnUpdate() bool { return false }

// PrepareForCreate and PrepareForUpdate keep only the names of the secrets a service account
// lists, as Kubernetes' cleanSecretReferences.
func (ServiceAccountStrategy) PrepareForCreate(obj runtime.Object) {
	cleanSecretReferences(obj.(*corev1.ServiceAccount))
}

func (ServiceAccountStrategy) PrepareForUpdate(obj, _ runtime.Object) {
	cleanSecretReferences(obj.(*corev1.ServiceAccount))
}

func cleanSecretReferences(sa *corev1.ServiceAccount) {
	for i, s := range sa.Secrets {
		sa.Secrets[i] = corev1.ObjectReference{Name: s.Name}
	}
}

func (ServiceAccountStrategy) Validate(obj runtime.Object) field.ErrorList {
	sa := obj.(*corev1.ServiceAccount)
	return apivalidation.ValidateObjectMeta(&sa.ObjectMeta, true, apivalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
}

func (s ServiceAccountStrategy) ValidateUpdate(obj, old runtime.Object) field.ErrorList {
	sa, o := obj.(*corev1.ServiceAccount), old.(*corev1.ServiceAccount)
	errs := generic.ValidateObjectMetaUpdate(&sa.ObjectMeta, &o.ObjectMeta, field.NewPath("metadata"))
	return append(errs, s.Validate(obj)...)
}

func (ServiceAccountStrategy) SelectableFields(obj runtime.Object) fields.Set {
	sa := obj.(*corev1.ServiceAccount)
	return fields.Set{"metadata.name": sa.Name, "metadata.namespace": sa.Namespace}
}

func (ServiceAccountStrategy) Columns() []metav1.TableColumnDefinition {
	return []metav1.TableColumnDefinition{nameColumn,
		{Name: "Secrets", Type: "string", Description: "Secrets is a list of the secrets in the same namespace that pods running using this ServiceAccount are allowed to use."}, ageColumn}
}

func (ServiceAccountStrategy) Row(obj runtime.Object, now time.Time) []any {
	sa := obj.(*corev1.ServiceAccount)
	return []any{sa.Name, int64(len(sa.Secrets)), age(now, sa.CreationTimestamp)}
}
