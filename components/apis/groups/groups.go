package groups

// A Renamed group is one of Kubernetes' API groups served by orch under orch's name.
type Renamed struct {
	// Orch is orch's name of the group, primary in discovery and documentation.
	Orch string
	// Kubernetes is Kubernetes' name of it, which stock clients (kubectl's typed commands, client-go's
	// typed clients) post to.
	Kubernetes string
}

// All are the groups orch renames, in the order orch serves them.
var All = []Renamed{
	{"events.orch.io", "events.k8s.io"},
	{"coordination.orch.io", "coordination.k8s.io"},
	{"certificates.orch.io", "certificates.k8s.io"},
	{"rbac.authorization.orch.io", "rbac.authorization.k8s.io"},
	{"authentication.orch.io", "authentication.k8s.io"},
	{"authorization.orch.io", "authorization.k8s.io"},
}

var (
	toOrch       = map[string]string{}
	toKubernetes = map[string]string{}
)

func init() {
	for _, g := range All {
		toOrch[g.Kubernetes] = g.Orch
		toKubernetes[g.Orch] = g.Kubernetes
	}
}

// Orch returns orch's name of group: the group itself unless it is Kubernetes' name of a group orch
// renames. Two names of one group have the same Orch name.
func Orch(group string) string {
	if o, ok := toOrch[group]; ok {
		return o
	}
	return group
}

// Kubernetes returns Kubernetes' name of a group orch renames, and false for any other group.
func Kubernetes(group string) (string, bool) {
	k, ok := toKubernetes[group]
	return k, ok
}
