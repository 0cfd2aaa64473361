package core

import (
	"strings"

	"github.com/benbjohnson/clock"
	"time"

	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"orch.io/orch/components/apiserver/registry/generic"
)

// NodeStrategy is the rules of nodes. A node is created with its status (the agent registers it
// so), and afterwards status changes only through nodes/status.
type NodeStrategy struct {
	// Clock dates the condition taints the server sets; without one they go undated.
	Clock clock.Clock
}

func (NodeStrategy) Resource() schema.GroupVersionResource { return GroupVersion.WithResource("nodes") }
func (NodeStrategy) Kind() string                          { return "Node" }
func (NodeStrategy) NamespaceScoped() bool                 { return false }
func (NodeStrategy) New() runtime.Object                   { return &corev1.Node{} }
func (NodeStrategy) NewList() runtime.Object               { return &corev1.NodeList{} }
func (NodeStrategy) AllowCreateOnUpdate() bool             { return false }

func (s NodeStrategy) PrepareForCreate(obj runtime.Object) {
	syncConditionTaints(obj.(*corev1.Node), s.Clock)
}

func (s NodeStrategy) PrepareForUpdate(obj, old runtime.Object) {
	n := obj.(*corev1.Node)
	n.Status = old.(*corev1.Node).Status
	syncConditionTaints(n, s.Clock)
}

func (NodeStrategy) Validate(obj runtime.Object) field.ErrorList {
	n := obj.(*corev1.Node)
	errs := apivalidation.ValidateObjectMeta(&n.ObjectMeta, false, apivalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	errs = append(errs, validateTaints(n.Spec.Taints, field.NewPath("spec", "taints"))...)
	return append(errs, validateNodeStatus(&n.Status)...)
}

// ValidateUpdate follows Kubernetes: providerID and podCIDR may be set once, never changed.
func (NodeStrategy) ValidateUpdate(obj, old runtime.Object) field.ErrorList {
	n, o := obj.(*corev1.Node), old.(*corev1.Node)
	errs := generic.ValidateObjectMetaUpdate(&n.ObjectMeta, &o.ObjectMeta, field.NewPath("metadata"))
	errs = append(errs, validateTaints(n.Spec.Taints, field.NewPath("spec", "taints"))...)
	if o.Spec.ProviderID != "" && n.Spec.ProviderID != o.Spec.ProviderID {
		errs = append(errs, field.Forbidden(field.NewPath("spec", "providerID"), "node updates may not change providerID except from \"\" to valid"))
	}
	if o.Spec.PodCIDR != "" && n.Spec.PodCIDR != o.Spec.PodCIDR {
		errs = append(errs, field.Forbidden(field.NewPath("spec", "podCIDR"), "node updates may not change podCIDR except from \"\" to valid"))
	}
	return append(errs, validateNodeStatus(&n.Status)...)
}

var taintEffects = []string{string(corev1.TaintEffectNoSchedule), string(corev1.TaintEffectPreferNoSchedule), string(corev1.TaintEffectNoExecute)}

func validateTaints(taints []corev1.Taint, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := map[string]bool{}
	for i, t := range taints {
		p := path.Index(i)
		for _, msg := range validation.IsQualifiedName(t.Key) {
			errs = append(errs, field.Invalid(p.Child("key"), t.Key, msg))
		}
		if t.Value != "" {
			for _, msg := range validation.IsValidLabelValue(t.Value) {
				errs = append(errs, field.Invalid(p.Child("value"), t.Value, msg))
			}
		}
		switch t.Effect {
		case "":
			errs = append(errs, field.Required(p.Child("effect"), ""))
		case corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute:
		default:
			errs = append(errs, field.NotSupported(p.Child("effect"), t.Effect, taintEffects))
		}
		k := t.Key + "/" + string(t.Effect)
		if seen[k] {
			errs = append(errs, field.Duplicate(p, "taints must be unique by key and effect pair"))
		}
		seen[k] = true
	}
	return errs
}

func validateNodeStatus(s *corev1.NodeStatus) field.ErrorList {
	var errs field.ErrorList
	path := field.NewPath("status")
	for name, q := range s.Capacity {
		if q.Sign() < 0 {
			errs = append(errs, field.Invalid(path.Child("capacity").Key(string(name)), q.String(), "must be greater than or equal to 0"))
		}
	}
	for name, q := range s.Allocatable {
		if q.Sign() < 0 {
			errs = append(errs, field.Invalid(path.Child("allocatable").Key(string(name)), q.String(), "must be greater than or equal to 0"))
		}
	}
	return errs
}

func (NodeStrategy) SelectableFields(obj runtime.Object) fields.Set {
	n := obj.(*corev1.Node)
	return fields.Set{"metadata.name": n.Name, "spec.unschedulable": boolString(n.Spec.Unschedulable)}
}

func boolString(b bool) string {
	if b {
		return "true"
	}
	return "false"
}

func (NodeStrategy) Columns() []metav1.TableColumnDefinition {
	return []metav1.TableColumnDefinition{nameColumn,
		{Name: "Status", Type: "string", Description: "The status of the node"},
		{Name: "Roles", Type: "string", Description: "The roles of the node"},
		ageColumn,
		{Name: "Version", Type: "string", Description: "Orchlet Version reported by the node."},
		{Name: "Internal-IP", Type: "string", Priority: 1, Description: "List of addresses reachable to the node. Queried from cloud provider, if available."},
		{Name: "External-IP", Type: "string", Priority: 1, Description: "List of addresses reachable to the node. Queried from cloud provider, if available."},
		{Name: "OS-Image", Type: "string", Priority: 1, Description: "OS Image reported by the node from /etc/os-release (e.g. Debian GNU/Linux 7 (wheezy))."},
		{Name: "Kernel-Version", Type: "string", Priority: 1, Description: "Kernel Version reported by the node from 'uname -r' (e.g. 3.16.0-0.bpo.4-amd64)."},
		{Name: "Container-Runtime", Type: "string", Priority: 1, Description: "ContainerRuntime Version reported by the node through runtime remote API (e.g. containerd://1.4.2)."},
	}
}

// Row is kubectl's node line: Ready/NotReady/Unknown, then SchedulingDisabled when cordoned.
func (NodeStrategy) Row(obj runtime.Object, now time.Time) []any {
	n := obj.(*corev1.Node)
	status := "Unknown"
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			switch c.Status {
			case corev1.ConditionTrue:
				status = "Ready"
			case corev1.ConditionFalse:
				status = "NotReady"
			}
		}
	}
	if n.Spec.Unschedulable {
		status += ",SchedulingDisabled"
	}
	var roles []string
	for k := range n.Labels {
		if r, ok := strings.CutPrefix(k, "node-role.orch.io/"); ok && r != "" {
			roles = append(roles, r)
		}
	}
	role := "<none>"
	if len(roles) > 0 {
		role = strings.Join(roles, ",")
	}
	address := func(t corev1.NodeAddressType) string {
		for _, a := range n.Status.Addresses {
			if a.Type == t {
				return a.Address
			}
		}
		return "<none>"
	}
	info := n.Status.NodeInfo
	return []any{n.Name, status, role, age(now, n.CreationTimestamp), info.KubeletVersion,
		address(corev1.NodeInternalIP), address(corev1.NodeExternalIP), orNone(info.OSImage), orNone(info.KernelVersion), orNone(info.ContainerRuntimeVersion)}
}

func orNone(s string) string {
	if s == "" {
		return "<unknown>"
	}
	return s
}

// NodeStatusStrategy is nodes/status: only status changes.
type NodeStatusStrategy struct{ NodeStrategy }

func (s NodeStatusStrategy) PrepareForUpdate(obj, old runtime.Object) {
	n, o := obj.(*corev1.Node), old.(*corev1.Node)
	resetMetaForStatus(&n.ObjectMeta, &o.ObjectMeta)
	n.Spec = *o.Spec.DeepCopy()
	syncConditionTaints(n, s.Clock)
}
