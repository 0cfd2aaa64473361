package core

import (
	"slices"
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

// FinalizerOrch is the namespace finalizer the server itself clears once a namespace is empty
// (Kubernetes' "kubernetes").
const FinalizerOrch corev1.FinalizerName = "orch"

// InitialNamespaces exist from the server's first start.
var InitialNamespaces = []string{"default", "orch-system", "orch-public", "orch-node-lease"}

// NamespaceStrategy is the rules of namespaces.
type NamespaceStrategy struct{}

func (NamespaceStrategy) Resource() schema.GroupVersionResource {
	return GroupVersion.WithResource("namespaces")
}
func (NamespaceStrategy) Kind() string              { return "Namespace" }
func (NamespaceStrategy) NamespaceScoped() bool     { return false }
func (NamespaceStrategy) New() runtime.Object       { return &corev1.Namespace{} }
func (NamespaceStrategy) NewList() runtime.Object   { return &corev1.NamespaceList{} }
func (NamespaceStrategy) AllowCreateOnUpdate() bool { return false }

func (NamespaceStrategy) PrepareForCreate(obj runtime.Object) {
	ns := obj.(*corev1.Namespace)
	ns.Status = corev1.NamespaceStatus{Phase: corev1.NamespaceActive}
	if !slices.Contains(ns.Spec.Finalizers, FinalizerOrch) {
		ns.Spec.Finalizers = append(ns.Spec.Finalizers, FinalizerOrch)
	}
	setNamespaceNameLabel(ns)
}

// setNamespaceNameLabel is Kubernetes' immutable kubernetes.io/metadata.name label, renamed.
func setNamespaceNameLabel(ns *corev1.Namespace) {
	if ns.Labels == nil {
		ns.Labels = map[string]string{}
	}
	ns.Labels["orch.io/metadata.name"] = ns.Name
}

// PrepareForUpdate keeps status and finalizers: they change through status and finalize.
func (NamespaceStrategy) PrepareForUpdate(obj, old runtime.Object) {
	ns, o := obj.(*corev1.Namespace), old.(*corev1.Namespace)
	ns.Spec.Finalizers = o.Spec.Finalizers
	ns.Status = o.Status
	setNamespaceNameLabel(ns)
}

func (NamespaceStrategy) Validate(obj runtime.Object) field.ErrorList {
	ns := obj.(*corev1.Namespace)
	errs := apivalidation.ValidateObjectMeta(&ns.ObjectMeta, false, apivalidation.ValidateNamespaceName, field.NewPath("metadata"))
	return append(errs, validateFinalizers(ns.Spec.Finalizers)...)
}

func validateFinalizers(finalizers []corev1.FinalizerName) field.ErrorList {
	var errs field.ErrorList
	for i, f := range finalizers {
		errs = append(errs, apivalidation.ValidateFinalizerName(string(f), field.NewPath("spec", "finalizers").Index(i))...)
	}
	return errs
}

func (NamespaceStrategy) ValidateUpdate(obj, old runtime.Object) field.ErrorList {
	ns, o := obj.(*corev1.Namespace), old.(*corev1.Namespace)
	return generic.ValidateObjectMetaUpdate(&ns.ObjectMeta, &o.ObjectMeta, field.NewPath("metadata"))
}

func (NamespaceStrategy) SelectableFields(obj runtime.Object) fields.Set {
	ns := obj.(*corev1.Namespace)
	return fields.Set{"metadata.name": ns.Name, "status.phase": string(ns.Status.Phase)}
}

// Finalizing: a namespace goes once the server has emptied it and cleared its finalizers.
func (NamespaceStrategy) Finalizing(obj runtime.Object) bool {
	return len(obj.(*corev1.Namespace).Spec.Finalizers) > 0
}

func (NamespaceStrategy) MarkDeleting(obj runtime.Object) {
	obj.(*corev1.Namespace).Status.Phase = corev1.NamespaceTerminating
}

func (NamespaceStrategy) ReturnDeletedObject() bool { return true }

func (NamespaceStrategy) Columns() []metav1.TableColumnDefinition {
	return []metav1.TableColumnDefinition{nameColumn,
		{Name: "Status", Type: "string", Description: "The status of the namespace"}, ageColumn}
}

func (NamespaceStrategy) Row(obj runtime.Object, now time.Time) []any {
	ns := obj.(*corev1.Namespace)
	return []any{ns.Name, string(ns.Status.Phase), age(now, ns.CreationTimestamp)}
}

// NamespaceStatusStrategy is namespaces/status: only status changes.
type NamespaceStatusStrategy struct{ NamespaceStrategy }

func (NamespaceStatusStrategy) PrepareForUpdate(obj, old runtime.Object) {
	ns, o := obj.(*corev1.Namespace), old.(*corev1.Namespace)
	resetMetaForStatus(&ns.ObjectMeta, &o.ObjectMeta)
	ns.Spec = o.Spec
}

// NamespaceFinalizeStrategy is namespaces/finalize: only spec.finalizers changes.
type NamespaceFinalizeStrategy struct{ NamespaceStrategy }

func (NamespaceFinalizeStrategy) PrepareForUpdate(obj, old runtime.Object) {
	ns, o := obj.(*corev1.Namespace), old.(*corev1.Namespace)
	finalizers := ns.Spec.Finalizers
	*ns = *o.DeepCopy()
	ns.Spec.Finalizers = finalizers
}

func (NamespaceFinalizeStrategy) ValidateUpdate(obj, old runtime.Object) field.ErrorList {
	return validateFinalizers(obj.(*corev1.Namespace).Spec.Finalizers)
}
