package server

import (
	"context"

	"k8s.io/klog/v2"

	csrcontroller "orch.io/orch/components/apiserver/controllers/certificates"
	"orch.io/orch/components/apiserver/controllers/namespace"
	"orch.io/orch/components/apiserver/controllers/serviceaccount"
	"orch.io/orch/components/apiserver/registry/generic"
)

// startControllers starts the controllers that run beside the request path, until ctx ends: the
// namespace controller, the service account controller when the server issues tokens, and the
// certificate signing requests' approver and signer.
func (r *registry) startControllers(ctx context.Context, c Config) {
	// The initial namespaces are made at once when storage can take them; otherwise (a KMS plugin
	// not answering yet) they are retried in the background, as Kubernetes' bootstrap hook does.
	if err := namespace.EnsureInitial(ctx, r.namespaces); err != nil {
		klog.ErrorS(err, "Creating the initial namespaces failed; retrying")
		go namespace.RetryInitial(ctx, c.Clock, r.namespaces)
	}
	namespaces := &namespace.Controller{
		Clock: c.Clock, Namespaces: r.namespaces, Stopping: c.Stopping,
		Contents: []*generic.Store{r.events, r.pods, r.leases, r.configMaps, r.secrets, r.serviceAccounts},
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
}
