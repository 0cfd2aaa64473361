package coordination

import (
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"orch.io/orch/components/apiserver/registry/generic"
)

// GroupVersion is coordination.orch.io/v1.
var GroupVersion = schema.GroupVersion{Group: "coordination.orch.io", Version: "v1"}

// LeaseStrategy is the rules of leases.
type LeaseStrategy struct{}

func (LeaseStrategy) Resource() schema.GroupVersionResource {
	return GroupVersion.WithResource("leases")
}
func (LeaseStrategy) Kind() string                             { return "Lease" }
func (LeaseStrategy) NamespaceScoped() bool                    { return true }
func (LeaseStrategy) New() runtime.Object                      { return &coordinationv1.Lease{} }
func (LeaseStrategy) NewList() runtime.Object                  { return &coordinationv1.LeaseList{} }
func (LeaseStrategy) AllowCreateOnUpdate() bool                { return false }
func (LeaseStrategy) PrepareForCreate(runtime.Object)          {}
func (LeaseStrategy) PrepareForUpdate(obj, old runtime.Object) {}

func (LeaseStrategy) Validate(obj runtime.Object) field.ErrorList {
	l := obj.(*coordinationv1.Lease)
	errs := apivalidation.ValidateObjectMeta(&l.ObjectMeta, true, apivalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	return append(errs, validateSpec(&l.Spec)...)
}

func (LeaseStrategy) ValidateUpdate(obj, old runtime.Object) field.ErrorList {
	l, o := obj.(*coordinationv1.Lease), old.(*coordinationv1.Lease)
	errs := generic.ValidateObjectMetaUpdate(&l.ObjectMeta, &o.ObjectMeta, field.NewPath("metadata"))
	return append(errs, validateSpec(&l.Spec)...)
}

func validateSpec(s *coordinationv1.LeaseSpec) field.ErrorList {
	var errs field.ErrorList
	path := field.NewPath("spec")
	if d := s.LeaseDurationSeconds; d != nil && *d <= 0 {
		errs = append(errs, field.Invalid(path.Child("leaseDurationSeconds"), *d, "must be greater than 0"))
	}
	if t := s.LeaseTransitions; t != nil && *t < 0 {
		errs = append(errs, field.Invalid(path.Child("leaseTransitions"), *t, "must be greater than or equal to 0"))
	}
	return errs
}

func (LeaseStrategy) SelectableFields(obj runtime.Object) fields.Set {
	l := obj.(*coordinationv1.Lease)
	return fields.Set{"metadata.name": l.Name, "metadata.namespace": l.Namespace}
}

func (LeaseStrategy) Columns() []metav1.TableColumnDefinition {
	return []metav1.TableColumnDefinition{
		{Name: "Name", Type: "string", Format: "name", Description: "Name must be unique within a namespace."},
		{Name: "Holder", Type: "string", Description: "holderIdentity contains the identity of the holder of a current lease."},
		{Name: "Age", Type: "string", Description: "CreationTimestamp is a timestamp representing the server time when this object was created."},
	}
}

func (LeaseStrategy) Row(obj runtime.Object, now time.Time) []any {
	l := obj.(*coordinationv1.Lease)
	holder := "<none>"
	if l.Spec.HolderIdentity != nil {
		holder = *l.Spec.HolderIdentity
	}
	return []any{l.Name, holder, duration.HumanDuration(now.Sub(l.CreationTimestamp.Time))}
}
