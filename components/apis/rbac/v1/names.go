package v1

import "k8s.io/apimachinery/pkg/runtime/schema"

// GroupName is orch's RBAC group; KubernetesGroupName, Kubernetes' name of it, is served too and
// accepted wherever a role reference or subject names the group.
const (
	GroupName           = "rbac.authorization.orch.io"
	KubernetesGroupName = "rbac.authorization.k8s.io"
)

// SchemeGroupVersion is rbac.authorization.orch.io/v1.
var SchemeGroupVersion = schema.GroupVersion{Group: GroupName, Version: "v1"}

// The kinds a binding's role reference and subjects name.
const (
	RoleKind           = "Role"
	ClusterRoleKind    = "ClusterRole"
	UserKind           = "User"
	GroupKind          = "Group"
	ServiceAccountKind = "ServiceAccount"
)

// IsGroup tells whether group is the RBAC group under either of its names.
func IsGroup(group string) bool {
	return group == GroupName || group == KubernetesGroupName
}

// The bootstrap policy's label, Kubernetes' renamed, on every object of the policy. (Its autoupdate
// annotation is Kubernetes' own, rbacv1.AutoUpdateAnnotationKey, which kubectl auth reconcile
// honours too.)
const (
	BootstrappingLabel = "orch.io/bootstrapping"
	BootstrappingValue = "rbac-defaults"
)

// AggregateToLabel is the label prefix of the cluster roles whose rules the default roles admin,
// edit and view gather: rbac.authorization.orch.io/aggregate-to-<role>: "true".
const AggregateToLabel = "rbac.authorization.orch.io/aggregate-to-"
