package server

import (
	"context"

	"k8s.io/klog/v2"

	csrcontroller "orch.io/orch/components/apiserver/controllers/certificates"
	"orch.io/orch/components/apiserver/controllers/namespace"
	rbaccontroller "orch.io/orch/components/apiserver/controllers/rbac"
	"orch.io/orch/components/apiserver/controllers/serviceaccount"
	"orch.io/orch/components/apiserver/registry/generic"
)

// startControllers starts the controllers that run beside the request path, until ctx ends: the
// namespace controller, the service account controller when the server issues tokens, and the
// certificate signing requests' approver and signer.
func (r *registry) startControllers(ctx context.Context, c Config) {
	// The steps made before the server serves end early with c.Starting (a shutdown asked for
	// while storage does not answer); what they did not finish is retried in the background.
	startCtx := ctx
	if c.Starting != nil {
		var endStart context.CancelFunc
		startCtx, endStart = context.WithCancel(ctx)
		defer context.AfterFunc(c.Starting, endStart)()
		defer endStart()
	}
	// The initial namespaces are made at once when storage can take them; otherwise (a KMS plugin
	// not answering yet) they are retried in the background, as Kubernetes' bootstrap hook does.
	if err := namespace.EnsureInitial(startCtx, r.namespaces); err != nil {
		klog.ErrorS(err, "Creating the initial namespaces failed; retrying")
		go namespace.RetryInitial(ctx, c.Clock, r.namespaces)
	}
	namespaces := &namespace.Controller{
		Clock: c.Clock, Namespaces: r.namespaces, Stopping: c.Stopping,
		Contents: []*generic.Store{r.events, r.pods, r.leases, r.configMaps, r.secrets, r.serviceAccounts, r.roles, r.roleBindings},
	}
	go namespaces.Run(ctx)
	if sa := c.ServiceAccounts; sa != nil {
		serviceAccounts := &serviceaccount.Controller{
			Clock: c.Clock, Namespaces: r.namespaces, ServiceAccounts: r.serviceAccounts, ConfigMaps: r.configMaps, RootCA: sa.rootCAPEM,
			Stopping: c.Stopping,
		}
		go serviceAccounts.Run(ctx)
	}
	csrs := &csrcontroller.Controller{
		Clock: c.Clock, CSRs: r.csrs, Status: r.csrStatus, Approval: r.csrApproval,
		Authorizer: c.Authorizer, Signing: c.Signing, Stopping: c.Stopping,
	}
	go csrs.Run(ctx)
	r.startRBAC(ctx, startCtx, c)
}

// startRBAC keeps the RBAC index in step with the stores, reconciles the bootstrap policy (at once,
// under startCtx, else in the background) and runs the cluster role aggregation controller.
func (r *registry) startRBAC(ctx, startCtx context.Context, c Config) {
	indexer := &rbaccontroller.Indexer{
		Clock: c.Clock, Index: r.rbacIndex, Stopping: c.Stopping,
		Roles: r.roles, ClusterRoles: r.clusterRoles, RoleBindings: r.roleBindings, ClusterRoleBindings: r.clusterRoleBindings,
	}
	go indexer.Run(ctx)
	if err := rbaccontroller.EnsurePolicy(startCtx, r.clusterRoles, r.clusterRoleBindings); err != nil {
		klog.ErrorS(err, "Reconciling the bootstrap RBAC policy failed; retrying")
		go rbaccontroller.RetryPolicy(ctx, c.Clock, r.clusterRoles, r.clusterRoleBindings)
	}
	aggregator := &rbaccontroller.Aggregator{Clock: c.Clock, ClusterRoles: r.clusterRoles, Stopping: c.Stopping}
	go aggregator.Run(ctx)
}
