package rbac

import (
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/apimachinery/pkg/util/validation/field"

	rbacapi "orch.io/orch/components/apis/rbac/v1"
	"orch.io/orch/components/apiserver/registry/generic"
)

// GroupVersion is rbac.authorization.orch.io/v1.
var GroupVersion = rbacapi.SchemeGroupVersion

// The four strategies share their guard: the authorizer and the roles the escalation checks read.
type (
	// RoleStrategy is the rules of roles.
	RoleStrategy struct{ Guard }
	// ClusterRoleStrategy is the rules of cluster roles.
	ClusterRoleStrategy struct{ Guard }
	// RoleBindingStrategy is the rules of role bindings.
	RoleBindingStrategy struct{ Guard }
	// ClusterRoleBindingStrategy is the rules of cluster role bindings.
	ClusterRoleBindingStrategy struct{ Guard }
)

func (RoleStrategy) Resource() schema.GroupVersionResource { return GroupVersion.WithResource("roles") }
func (RoleStrategy) Kind() string                          { return rbacapi.RoleKind }
func (RoleStrategy) NamespaceScoped() bool                 { return true }
func (RoleStrategy) New() runtime.Object                   { return &rbacv1.Role{} }
func (RoleStrategy) NewList() runtime.Object               { return &rbacv1.RoleList{} }
func (RoleStrategy) AllowCreateOnUpdate() bool             { return true }
func (RoleStrategy) PrepareForCreate(runtime.Object)       {}
func (RoleStrategy) PrepareForUpdate(_, _ runtime.Object)  {}
func (RoleStrategy) Validate(obj runtime.Object) field.ErrorList {
	return validateRole(obj.(*rbacv1.Role))
}
func (RoleStrategy) ValidateUpdate(obj, old runtime.Object) field.ErrorList {
	r, o := obj.(*rbacv1.Role), old.(*rbacv1.Role)
	return append(validateRole(r), generic.ValidateObjectMetaUpdate(&r.ObjectMeta, &o.ObjectMeta, field.NewPath("metadata"))...)
}
func (RoleStrategy) SelectableFields(obj runtime.Object) fields.Set { return metaFields(obj) }

func (ClusterRoleStrategy) Resource() schema.GroupVersionResource {
	return GroupVersion.WithResource("clusterroles")
}
func (ClusterRoleStrategy) Kind() string                         { return rbacapi.ClusterRoleKind }
func (ClusterRoleStrategy) NamespaceScoped() bool                { return false }
func (ClusterRoleStrategy) New() runtime.Object                  { return &rbacv1.ClusterRole{} }
func (ClusterRoleStrategy) NewList() runtime.Object              { return &rbacv1.ClusterRoleList{} }
func (ClusterRoleStrategy) AllowCreateOnUpdate() bool            { return true }
func (ClusterRoleStrategy) PrepareForCreate(runtime.Object)      {}
func (ClusterRoleStrategy) PrepareForUpdate(_, _ runtime.Object) {}
func (ClusterRoleStrategy) Validate(obj runtime.Object) field.ErrorList {
	return validateClusterRole(obj.(*rbacv1.ClusterRole))
}
func (ClusterRoleStrategy) ValidateUpdate(obj, old runtime.Object) field.ErrorList {
	r, o := obj.(*rbacv1.ClusterRole), old.(*rbacv1.ClusterRole)
	return append(validateClusterRole(r), generic.ValidateObjectMetaUpdate(&r.ObjectMeta, &o.ObjectMeta, field.NewPath("metadata"))...)
}
func (ClusterRoleStrategy) SelectableFields(obj runtime.Object) fields.Set { return metaFields(obj) }

func (RoleBindingStrategy) Resource() schema.GroupVersionResource {
	return GroupVersion.WithResource("rolebindings")
}
func (RoleBindingStrategy) Kind() string              { return "RoleBinding" }
func (RoleBindingStrategy) NamespaceScoped() bool     { return true }
func (RoleBindingStrategy) New() runtime.Object       { return &rbacv1.RoleBinding{} }
func (RoleBindingStrategy) NewList() runtime.Object   { return &rbacv1.RoleBindingList{} }
func (RoleBindingStrategy) AllowCreateOnUpdate() bool { return true }
func (RoleBindingStrategy) PrepareForCreate(obj runtime.Object) {
	b := obj.(*rbacv1.RoleBinding)
	defaultGroups(&b.RoleRef, b.Subjects)
}
func (s RoleBindingStrategy) PrepareForUpdate(obj, _ runtime.Object) { s.PrepareForCreate(obj) }
func (RoleBindingStrategy) Validate(obj runtime.Object) field.ErrorList {
	b := obj.(*rbacv1.RoleBinding)
	return validateBinding(&b.ObjectMeta, b.RoleRef, b.Subjects, true)
}
func (s RoleBindingStrategy) ValidateUpdate(obj, old runtime.Object) field.ErrorList {
	b, o := obj.(*rbacv1.RoleBinding), old.(*rbacv1.RoleBinding)
	errs := append(s.Validate(obj), generic.ValidateObjectMetaUpdate(&b.ObjectMeta, &o.ObjectMeta, field.NewPath("metadata"))...)
	return append(errs, validateRefUnchanged(b.RoleRef, o.RoleRef)...)
}
func (RoleBindingStrategy) SelectableFields(obj runtime.Object) fields.Set { return metaFields(obj) }

func (ClusterRoleBindingStrategy) Resource() schema.GroupVersionResource {
	return GroupVersion.WithResource("clusterrolebindings")
}
func (ClusterRoleBindingStrategy) Kind() string              { return "ClusterRoleBinding" }
func (ClusterRoleBindingStrategy) NamespaceScoped() bool     { return false }
func (ClusterRoleBindingStrategy) New() runtime.Object       { return &rbacv1.ClusterRoleBinding{} }
func (ClusterRoleBindingStrategy) NewList() runtime.Object   { return &rbacv1.ClusterRoleBindingList{} }
func (ClusterRoleBindingStrategy) AllowCreateOnUpdate() bool { return true }
func (ClusterRoleBindingStrategy) PrepareForCreate(obj runtime.Object) {
	b := obj.(*rbacv1.ClusterRoleBinding)
	defaultGroups(&b.RoleRef, b.Subjects)
}
func (s ClusterRoleBindingStrategy) PrepareForUpdate(obj, _ runtime.Object) { s.PrepareForCreate(obj) }
func (ClusterRoleBindingStrategy) Validate(obj runtime.Object) field.ErrorList {
	b := obj.(*rbacv1.ClusterRoleBinding)
	return validateBinding(&b.ObjectMeta, b.RoleRef, b.Subjects, false)
}
func (s ClusterRoleBindingStrategy) ValidateUpdate(obj, old runtime.Object) field.ErrorList {
	b, o := obj.(*rbacv1.ClusterRoleBinding), old.(*rbacv1.ClusterRoleBinding)
	errs := append(s.Validate(obj), generic.ValidateObjectMetaUpdate(&b.ObjectMeta, &o.ObjectMeta, field.NewPath("metadata"))...)
	return append(errs, validateRefUnchanged(b.RoleRef, o.RoleRef)...)
}
func (ClusterRoleBindingStrategy) SelectableFields(obj runtime.Object) fields.Set {
	return metaFields(obj)
}

func metaFields(obj runtime.Object) fields.Set {
	m := obj.(metav1.Object)
	return fields.Set{"metadata.name": m.GetName(), "metadata.namespace": m.GetNamespace()}
}

// Columns of roles are Kubernetes' printer's: the name and when it was made.
func (RoleStrategy) Columns() []metav1.TableColumnDefinition        { return roleColumns }
func (RoleStrategy) Row(obj runtime.Object, _ time.Time) []any      { return roleRow(obj) }
func (ClusterRoleStrategy) Columns() []metav1.TableColumnDefinition { return roleColumns }
func (ClusterRoleStrategy) Row(obj runtime.Object, _ time.Time) []any {
	return roleRow(obj)
}

var roleColumns = []metav1.TableColumnDefinition{
	{Name: "Name", Type: "string", Format: "name", Description: metav1.ObjectMeta{}.SwaggerDoc()["name"]},
	{Name: "Created At", Type: "date", Description: metav1.ObjectMeta{}.SwaggerDoc()["creationTimestamp"]},
}

func roleRow(obj runtime.Object) []any {
	m := obj.(metav1.Object)
	return []any{m.GetName(), m.GetCreationTimestamp().UTC().Format(time.RFC3339)}
}

// Columns of bindings are Kubernetes' printer's: the name, the role and the age.
func (RoleBindingStrategy) Columns() []metav1.TableColumnDefinition { return bindingColumns }
func (RoleBindingStrategy) Row(obj runtime.Object, now time.Time) []any {
	b := obj.(*rbacv1.RoleBinding)
	return bindingRow(&b.ObjectMeta, b.RoleRef, now)
}
func (ClusterRoleBindingStrategy) Columns() []metav1.TableColumnDefinition { return bindingColumns }
func (ClusterRoleBindingStrategy) Row(obj runtime.Object, now time.Time) []any {
	b := obj.(*rbacv1.ClusterRoleBinding)
	return bindingRow(&b.ObjectMeta, b.RoleRef, now)
}

var bindingColumns = []metav1.TableColumnDefinition{
	{Name: "Name", Type: "string", Format: "name", Description: metav1.ObjectMeta{}.SwaggerDoc()["name"]},
	{Name: "Role", Type: "string", Description: rbacv1.RoleBinding{}.SwaggerDoc()["roleRef"]},
	{Name: "Age", Type: "string", Description: metav1.ObjectMeta{}.SwaggerDoc()["creationTimestamp"]},
}

func bindingRow(m *metav1.ObjectMeta, ref rbacv1.RoleRef, now time.Time) []any {
	return []any{m.Name, ref.Kind + "/" + ref.Name, duration.HumanDuration(now.Sub(m.CreationTimestamp.Time))}
}
