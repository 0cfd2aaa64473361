package bootstrappolicy

import (
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	certificatesv1 "orch.io/orch/components/apis/certificates/v1"
	rbacapi "orch.io/orch/components/apis/rbac/v1"
)

// The verb sets of Kubernetes' policy.
var (
	write     = []string{"create", "update", "patch", "delete", "deletecollection"}
	readWrite = []string{"get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"}
	read      = []string{"get", "list", "watch"}
)

// Groups the rules name, by orch's names (the authorizer takes Kubernetes' names as the same).
const (
	legacyGroup         = ""
	appsGroup           = "apps"
	autoscalingGroup    = "autoscaling"
	batchGroup          = "batch"
	extensionsGroup     = "extensions"
	policyGroup         = "policy"
	networkingGroup     = "networking.k8s.io"
	discoveryGroup      = "discovery.k8s.io"
	authenticationGroup = "authentication.orch.io"
	authorizationGroup  = "authorization.orch.io"
	certificatesGroup   = "certificates.orch.io"
	coordinationGroup   = "coordination.orch.io"
	eventsGroup         = "events.orch.io"
	rbacGroup           = rbacapi.GroupName
)

// Users and groups of Kubernetes' policy.
const (
	MastersGroup         = "system:masters"
	MonitoringGroup      = "system:monitoring"
	AuthenticatedGroup   = "system:authenticated"
	UnauthenticatedGroup = "system:unauthenticated"
	// ControllerNamespace holds the service accounts the controllers' roles are bound to.
	ControllerNamespace = "orch-system"
	// controllerRolePrefix starts the names of the controllers' roles.
	controllerRolePrefix = "system:controller:"
)

// aggregateTo are the labels a cluster role carries to have its rules gathered into the default
// role of that name: orch's label, and Kubernetes' one, so that roles written for Kubernetes are
// gathered too.
func aggregateTo(role string) []metav1.LabelSelector {
	return []metav1.LabelSelector{
		{MatchLabels: map[string]string{rbacapi.AggregateToLabel + role: "true"}},
		{MatchLabels: map[string]string{"rbac.authorization.k8s.io/aggregate-to-" + role: "true"}},
	}
}

func rule(verbs ...string) *ruleBuilder { return &ruleBuilder{rbacv1.PolicyRule{Verbs: verbs}} }

type ruleBuilder struct{ r rbacv1.PolicyRule }

func (b *ruleBuilder) groups(g ...string) *ruleBuilder    { b.r.APIGroups = g; return b }
func (b *ruleBuilder) resources(r ...string) *ruleBuilder { b.r.Resources = r; return b }
func (b *ruleBuilder) names(n ...string) *ruleBuilder     { b.r.ResourceNames = n; return b }
func (b *ruleBuilder) urls(u ...string) rbacv1.PolicyRule { b.r.NonResourceURLs = u; return b.r }
func (b *ruleBuilder) rule() rbacv1.PolicyRule            { return b.r }

func eventsRule() rbacv1.PolicyRule {
	return rule("create", "update", "patch").groups(legacyGroup, eventsGroup).resources("events").rule()
}

func viewRules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		rule(read...).groups(legacyGroup).resources("pods", "replicationcontrollers", "replicationcontrollers/scale", "serviceaccounts",
			"services", "services/status", "endpoints", "persistentvolumeclaims", "persistentvolumeclaims/status", "configmaps").rule(),
		rule(read...).groups(legacyGroup).resources("limitranges", "resourcequotas", "bindings", "events",
			"pods/status", "resourcequotas/status", "namespaces/status", "replicationcontrollers/status", "pods/log").rule(),
		// Reading namespaces at the namespace scope reads that namespace: which ones a user may use.
		rule(read...).groups(legacyGroup).resources("namespaces").rule(),
		// orch's events are events.orch.io's, which Kubernetes' view leaves to the core group.
		rule(read...).groups(eventsGroup).resources("events").rule(),
		rule(read...).groups(discoveryGroup).resources("endpointslices").rule(),
		rule(read...).groups(appsGroup).resources("controllerrevisions", "statefulsets", "statefulsets/status", "statefulsets/scale",
			"daemonsets", "daemonsets/status", "deployments", "deployments/status", "deployments/scale",
			"replicasets", "replicasets/status", "replicasets/scale").rule(),
		rule(read...).groups(autoscalingGroup).resources("horizontalpodautoscalers", "horizontalpodautoscalers/status").rule(),
		rule(read...).groups(batchGroup).resources("jobs", "cronjobs", "cronjobs/status", "jobs/status").rule(),
		rule(read...).groups(extensionsGroup).resources("daemonsets", "daemonsets/status", "deployments", "deployments/scale", "deployments/status",
			"ingresses", "ingresses/status", "replicasets", "replicasets/scale", "replicasets/status", "replicationcontrollers/scale",
			"networkpolicies").rule(),
		rule(read...).groups(policyGroup).resources("poddisruptionbudgets", "poddisruptionbudgets/status").rule(),
		rule(read...).groups(networkingGroup).resources("networkpolicies", "ingresses", "ingresses/status").rule(),
	}
}

func editRules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		// Reading what can escalate: exec, attach, proxies, secrets.
		rule(read...).groups(legacyGroup).resources("pods/attach", "pods/proxy", "pods/exec", "pods/portforward", "secrets", "services/proxy").rule(),
		rule("impersonate").groups(legacyGroup).resources("serviceaccounts").rule(),
		rule(write...).groups(legacyGroup).resources("pods", "pods/attach", "pods/proxy", "pods/exec", "pods/portforward").rule(),
		rule("create").groups(legacyGroup).resources("pods/eviction").rule(),
		rule(write...).groups(legacyGroup).resources("replicationcontrollers", "replicationcontrollers/scale", "serviceaccounts",
			"services", "services/proxy", "persistentvolumeclaims", "configmaps", "secrets", "events").rule(),
		rule("create").groups(legacyGroup).resources("serviceaccounts/token").rule(),
		rule(write...).groups(eventsGroup).resources("events").rule(),
		rule(write...).groups(appsGroup).resources("statefulsets", "statefulsets/scale", "daemonsets",
			"deployments", "deployments/scale", "deployments/rollback", "replicasets", "replicasets/scale").rule(),
		rule(write...).groups(autoscalingGroup).resources("horizontalpodautoscalers").rule(),
		rule(write...).groups(batchGroup).resources("jobs", "cronjobs").rule(),
		rule(write...).groups(extensionsGroup).resources("daemonsets", "deployments", "deployments/scale", "deployments/rollback", "ingresses",
			"replicasets", "replicasets/scale", "replicationcontrollers/scale", "networkpolicies").rule(),
		rule(write...).groups(policyGroup).resources("poddisruptionbudgets").rule(),
		rule(write...).groups(networkingGroup).resources("networkpolicies", "ingresses").rule(),
		rule(readWrite...).groups(coordinationGroup).resources("leases").rule(),
	}
}

// NodeRules are the rules of system:node, Kubernetes' node role: what a node agent needs, which the
// Node authorizer and NodeRestriction narrow to its own objects. No one is bound to it.
func NodeRules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		rule("create").groups(authenticationGroup).resources("tokenreviews").rule(),
		rule("create").groups(authorizationGroup).resources("subjectaccessreviews", "localsubjectaccessreviews").rule(),
		rule(read...).groups(legacyGroup).resources("services").rule(),
		rule("create", "get", "list", "watch").groups(legacyGroup).resources("nodes").rule(),
		rule("update", "patch").groups(legacyGroup).resources("nodes/status").rule(),
		rule("update", "patch").groups(legacyGroup).resources("nodes").rule(),
		rule("create", "update", "patch").groups(legacyGroup, eventsGroup).resources("events").rule(),
		rule(read...).groups(legacyGroup).resources("pods").rule(),
		rule("create", "delete").groups(legacyGroup).resources("pods").rule(),
		rule("update", "patch").groups(legacyGroup).resources("pods/status").rule(),
		rule("create").groups(legacyGroup).resources("pods/eviction").rule(),
		rule("get", "list", "watch").groups(legacyGroup).resources("secrets", "configmaps").rule(),
		rule("get").groups(legacyGroup).resources("persistentvolumeclaims", "persistentvolumes").rule(),
		rule("get").groups(legacyGroup).resources("endpoints").rule(),
		rule("create", "get", "list", "watch").groups(certificatesGroup).resources("certificatesigningrequests").rule(),
		rule("get", "create", "update", "patch", "delete").groups(coordinationGroup).resources("leases").rule(),
		rule("create").groups(legacyGroup).resources("serviceaccounts/token").rule(),
		rule("get").groups(legacyGroup).resources("serviceaccounts").rule(),
	}
}

// ClusterRoles are the cluster roles the server keeps, each labelled as the bootstrap policy's.
func ClusterRoles() []rbacv1.ClusterRole {
	roles := []rbacv1.ClusterRole{
		{
			// Anything, on anything.
			ObjectMeta: metav1.ObjectMeta{Name: "cluster-admin"},
			Rules:      []rbacv1.PolicyRule{rule("*").groups("*").resources("*").rule(), rule("*").urls("*")},
		},
		{
			// Enough to find out whether the server is ready and what it serves.
			ObjectMeta: metav1.ObjectMeta{Name: "system:discovery"},
			Rules: []rbacv1.PolicyRule{rule("get").urls("/livez", "/readyz", "/healthz", "/version", "/version/",
				"/openapi", "/openapi/*", "/api", "/api/*", "/apis", "/apis/*")},
		},
		{
			ObjectMeta: metav1.ObjectMeta{Name: "system:monitoring"},
			Rules: []rbacv1.PolicyRule{
				rule("get").urls("/metrics", "/metrics/slis", "/livez", "/readyz", "/healthz", "/livez/*", "/readyz/*", "/healthz/*"),
				rule("get").groups(legacyGroup).resources("nodes/metrics").rule(),
			},
		},
		{
			// What a user learns of themselves: what they may do, who they are.
			ObjectMeta: metav1.ObjectMeta{Name: "system:basic-user"},
			Rules: []rbacv1.PolicyRule{
				rule("create").groups(authorizationGroup).resources("selfsubjectaccessreviews", "selfsubjectrulesreviews").rule(),
				rule("create").groups(authenticationGroup).resources("selfsubjectreviews").rule(),
			},
		},
		{
			ObjectMeta: metav1.ObjectMeta{Name: "system:public-info-viewer"},
			Rules:      []rbacv1.PolicyRule{rule("get").urls("/livez", "/readyz", "/healthz", "/version", "/version/")},
		},
		{
			// A namespace's administrator: edit, and the power to grant it to others in the namespace.
			ObjectMeta:      metav1.ObjectMeta{Name: "admin"},
			AggregationRule: &rbacv1.AggregationRule{ClusterRoleSelectors: aggregateTo("admin")},
		},
		{
			// Every user-level action in a namespace, but its roles, quotas and statuses.
			ObjectMeta:      metav1.ObjectMeta{Name: "edit", Labels: map[string]string{rbacapi.AggregateToLabel + "admin": "true"}},
			AggregationRule: &rbacv1.AggregationRule{ClusterRoleSelectors: aggregateTo("edit")},
		},
		{
			// Reading what does not escalate in a namespace: no secrets, no roles.
			ObjectMeta:      metav1.ObjectMeta{Name: "view", Labels: map[string]string{rbacapi.AggregateToLabel + "edit": "true"}},
			AggregationRule: &rbacv1.AggregationRule{ClusterRoleSelectors: aggregateTo("view")},
		},
		{
			ObjectMeta: metav1.ObjectMeta{Name: "system:aggregate-to-admin", Labels: map[string]string{rbacapi.AggregateToLabel + "admin": "true"}},
			Rules: []rbacv1.PolicyRule{
				rule("create").groups(authorizationGroup).resources("localsubjectaccessreviews").rule(),
				rule(readWrite...).groups(rbacGroup).resources("roles", "rolebindings").rule(),
			},
		},
		{
			ObjectMeta: metav1.ObjectMeta{Name: "system:aggregate-to-edit", Labels: map[string]string{rbacapi.AggregateToLabel + "edit": "true"}},
			Rules:      editRules(),
		},
		{
			ObjectMeta: metav1.ObjectMeta{Name: "system:aggregate-to-view", Labels: map[string]string{rbacapi.AggregateToLabel + "view": "true"}},
			Rules:      viewRules(),
		},
		{
			ObjectMeta: metav1.ObjectMeta{Name: "system:node"},
			Rules:      NodeRules(),
		},
		{
			// A node bootstrapping its client certificate: asking for it and watching it be signed.
			ObjectMeta: metav1.ObjectMeta{Name: "system:node-bootstrapper"},
			Rules:      []rbacv1.PolicyRule{rule("create", "get", "list", "watch").groups(certificatesGroup).resources("certificatesigningrequests").rule()},
		},
		{
			// Delegated authentication and authorization: asking the server about tokens and access.
			ObjectMeta: metav1.ObjectMeta{Name: "system:auth-delegator"},
			Rules: []rbacv1.PolicyRule{
				rule("create").groups(authenticationGroup).resources("tokenreviews").rule(),
				rule("create").groups(authorizationGroup).resources("subjectaccessreviews").rule(),
			},
		},
		{
			// Everything of the node agents' API.
			ObjectMeta: metav1.ObjectMeta{Name: "system:orchlet-api-admin"},
			Rules: []rbacv1.PolicyRule{
				rule("get", "list", "watch").groups(legacyGroup).resources("nodes").rule(),
				rule("proxy").groups(legacyGroup).resources("nodes").rule(),
				rule("*").groups(legacyGroup).resources("nodes/proxy", "nodes/metrics", "nodes/stats", "nodes/log").rule(),
			},
		},
		{
			// What the server's approver asks of a node's first client certificate request.
			ObjectMeta: metav1.ObjectMeta{Name: "system:certificates.orch.io:certificatesigningrequests:nodeclient"},
			Rules:      []rbacv1.PolicyRule{rule("create").groups(certificatesGroup).resources("certificatesigningrequests/nodeclient").rule()},
		},
		{
			// ... and of a node renewing its own.
			ObjectMeta: metav1.ObjectMeta{Name: "system:certificates.orch.io:certificatesigningrequests:selfnodeclient"},
			Rules:      []rbacv1.PolicyRule{rule("create").groups(certificatesGroup).resources("certificatesigningrequests/selfnodeclient").rule()},
		},
		approver(certificatesv1.NodeServingSigner, "orchlet-serving-approver"),
		approver(certificatesv1.ClientSigner, "orch-apiserver-client-approver"),
		approver(certificatesv1.NodeClientSigner, "orch-apiserver-client-orchlet-approver"),
	}
	roles = append(roles, controllerRoles()...)
	for i := range roles {
		label(&roles[i].ObjectMeta)
	}
	return roles
}

// approver is the role of approving the requests of one signer.
func approver(signer, name string) rbacv1.ClusterRole {
	return rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "system:certificates.orch.io:" + name},
		Rules:      []rbacv1.PolicyRule{rule("approve").groups(certificatesGroup).resources("signers").names(signer).rule()},
	}
}

// controllerRoles are the roles of the controllers orch-apiserver runs, as Kubernetes' controller
// manager's are named: each is bound to a service account of its name in orch-system. orch's
// controllers run inside the server and write its stores directly; the roles say what each does,
// for a controller run outside it.
func controllerRoles() []rbacv1.ClusterRole {
	return []rbacv1.ClusterRole{
		{
			ObjectMeta: metav1.ObjectMeta{Name: controllerRolePrefix + "clusterrole-aggregation-controller"},
			Rules:      []rbacv1.PolicyRule{rule("escalate", "get", "list", "watch", "update", "patch").groups(rbacGroup).resources("clusterroles").rule()},
		},
		{
			ObjectMeta: metav1.ObjectMeta{Name: controllerRolePrefix + "namespace-controller"},
			Rules: []rbacv1.PolicyRule{
				rule("get", "list", "watch", "delete").groups(legacyGroup).resources("namespaces").rule(),
				rule("update").groups(legacyGroup).resources("namespaces/finalize", "namespaces/status").rule(),
				rule("get", "list", "watch", "delete", "deletecollection").groups("*").resources("*").rule(),
			},
		},
		{
			ObjectMeta: metav1.ObjectMeta{Name: controllerRolePrefix + "service-account-controller"},
			Rules:      []rbacv1.PolicyRule{rule("create").groups(legacyGroup).resources("serviceaccounts").rule(), eventsRule()},
		},
		{
			ObjectMeta: metav1.ObjectMeta{Name: controllerRolePrefix + "root-ca-cert-publisher"},
			Rules:      []rbacv1.PolicyRule{rule("create", "update").groups(legacyGroup).resources("configmaps").rule(), eventsRule()},
		},
		{
			ObjectMeta: metav1.ObjectMeta{Name: controllerRolePrefix + "certificate-controller"},
			Rules: []rbacv1.PolicyRule{
				rule("get", "list", "watch", "delete").groups(certificatesGroup).resources("certificatesigningrequests").rule(),
				rule("update").groups(certificatesGroup).resources("certificatesigningrequests/status", "certificatesigningrequests/approval").rule(),
				rule("approve").groups(certificatesGroup).resources("signers").names(certificatesv1.NodeClientSigner).rule(),
				rule("sign").groups(certificatesGroup).resources("signers").names(certificatesv1.ClientSigner, certificatesv1.NodeClientSigner, certificatesv1.NodeServingSigner).rule(),
				rule("create").groups(authorizationGroup).resources("subjectaccessreviews").rule(),
				eventsRule(),
			},
		},
	}
}

// ClusterRoleBindings are the cluster role bindings the server keeps, each labelled as the bootstrap
// policy's.
func ClusterRoleBindings() []rbacv1.ClusterRoleBinding {
	bindings := []rbacv1.ClusterRoleBinding{
		binding("cluster-admin", group(MastersGroup)),
		binding("system:monitoring", group(MonitoringGroup)),
		binding("system:discovery", group(AuthenticatedGroup)),
		binding("system:basic-user", group(AuthenticatedGroup)),
		binding("system:public-info-viewer", group(AuthenticatedGroup), group(UnauthenticatedGroup)),
		// Kubernetes keeps system:node bound to no one: the Node authorizer decides for nodes.
		binding("system:node"),
	}
	for _, r := range controllerRoles() {
		name := r.Name[len(controllerRolePrefix):]
		bindings = append(bindings, binding(r.Name, rbacv1.Subject{Kind: rbacapi.ServiceAccountKind, Name: name, Namespace: ControllerNamespace}))
	}
	for i := range bindings {
		label(&bindings[i].ObjectMeta)
	}
	return bindings
}

func group(name string) rbacv1.Subject {
	return rbacv1.Subject{Kind: rbacapi.GroupKind, APIGroup: rbacapi.GroupName, Name: name}
}

// binding binds the cluster role of its name to subjects.
func binding(role string, subjects ...rbacv1.Subject) rbacv1.ClusterRoleBinding {
	return rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: role},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacapi.GroupName, Kind: rbacapi.ClusterRoleKind, Name: role},
		Subjects:   subjects,
	}
}

// label marks an object as the bootstrap policy's, to be reconciled at each start unless its
// autoupdate annotation is "false" (Kubernetes' annotation, which kubectl auth reconcile also
// honours).
func label(m *metav1.ObjectMeta) {
	if m.Labels == nil {
		m.Labels = map[string]string{}
	}
	m.Labels[rbacapi.BootstrappingLabel] = rbacapi.BootstrappingValue
	m.Annotations = map[string]string{rbacv1.AutoUpdateAnnotationKey: "true"}
}
