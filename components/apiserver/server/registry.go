package server

import (
	"fmt"

	utilrand "k8s.io/apimachinery/pkg/util/rand"

	eventsv1 "orch.io/orch/components/apis/events/v1"
	"orch.io/orch/components/apiserver/admission"
	"orch.io/orch/components/apiserver/endpoints"
	"orch.io/orch/components/apiserver/nodeproxy"
	"orch.io/orch/components/apiserver/openapi"
	"orch.io/orch/components/apiserver/registry/certificates"
	"orch.io/orch/components/apiserver/registry/coordination"
	"orch.io/orch/components/apiserver/registry/core"
	"orch.io/orch/components/apiserver/registry/events"
	"orch.io/orch/components/apiserver/registry/generic"
	rbacregistry "orch.io/orch/components/apiserver/registry/rbac"
	"orch.io/orch/components/apiserver/storage"
	"orch.io/orch/components/apiserver/storage/cacher"
	"orch.io/orch/components/authz/rbac"
)

// The events' strategy names their protobuf form, events.k8s.io/v1's, and documents them.
var (
	_ endpoints.ProtobufForm = events.Strategy{}
	_ openapi.Documented     = events.Strategy{}
)

// registry is every resource the server keeps.
type registry struct {
	namespaces, namespaceStatus *generic.Store
	nodes, nodeStatus           *generic.Store
	pods, podStatus             *generic.Store
	leases                      *generic.Store
	configMaps, secrets         *generic.Store
	serviceAccounts             *generic.Store
	nameSuffix                  func() string // of the token volumes mounted into pods
	admission                   admission.Chain
	events                      *generic.Store
	// coreEvents are the core v1 view of events, over their storage.
	coreEvents *generic.Store
	// csrs are certificatesigningrequests; csrStatus and csrApproval the views certificates and
	// approvals are written through.
	csrs, csrStatus, csrApproval *generic.Store
	groups                       []endpoints.GroupVersion
	// roles, clusterRoles, roleBindings and clusterRoleBindings are RBAC's; rbacIndex is what
	// the RBAC authorizer and the escalation checks read of them.
	roles, clusterRoles, roleBindings, clusterRoleBindings *generic.Store
	rbacIndex                                              *rbac.Index
}

// newRegistry builds the stores, each on a watch cache of its own over c.Storage.
func newRegistry(c Config) (*registry, error) {
	r := &registry{}
	r.nameSuffix = c.NameSuffix
	if r.nameSuffix == nil {
		r.nameSuffix = func() string { return utilrand.String(5) }
	}
	var err error
	if r.admission, err = r.admissionChain(c); err != nil {
		return nil, err
	}
	newStore := func(s generic.Strategy) (*generic.Store, error) { return r.newStore(c, s) }
	// Core v1 events are a view of the events' storage and watch cache.
	eventsCache, err := r.watchCache(c, events.Strategy{})
	if err != nil {
		return nil, err
	}
	r.events = r.storeOn(c, events.Strategy{TTL: c.EventTTL}, eventsCache)
	r.coreEvents = r.storeOn(c, events.CoreStrategy{TTL: c.EventTTL}, events.CoreStorage(eventsCache))
	if r.namespaces, err = newStore(core.NamespaceStrategy{}); err != nil {
		return nil, err
	}
	if r.nodes, err = newStore(core.NodeStrategy{Clock: c.Clock}); err != nil {
		return nil, err
	}
	if r.pods, err = newStore(core.PodStrategy{}); err != nil {
		return nil, err
	}
	if c.Node != nil {
		c.Node.pods.Store(r.pods)
	}
	if r.leases, err = newStore(coordination.LeaseStrategy{}); err != nil {
		return nil, err
	}
	if r.configMaps, err = newStore(core.ConfigMapStrategy{}); err != nil {
		return nil, err
	}
	if r.secrets, err = newStore(core.SecretStrategy{}); err != nil {
		return nil, err
	}
	r.namespaceStatus = r.namespaces.WithUpdates("status", core.NamespaceStatusStrategy{})
	r.nodeStatus = r.nodes.WithUpdates("status", core.NodeStatusStrategy{NodeStrategy: core.NodeStrategy{Clock: c.Clock}})
	r.podStatus = r.pods.WithUpdates("status", core.PodStatusStrategy{})

	nodes := c.Nodes
	if nodes == nil {
		if nodes, err = nodeproxy.New(nodeproxy.Config{}); err != nil {
			return nil, err
		}
	}
	connect := core.NewConnectREST(r.pods, r.nodes, nodes)
	r.groups = []endpoints.GroupVersion{
		{GroupVersion: eventsv1.SchemeGroupVersion, Resources: []endpoints.Resource{
			{Store: r.events, Singular: "event", ShortNames: []string{"ev"}, SelectableFields: eventsv1.SelectableFieldLabels()},
		}},
		{GroupVersion: core.GroupVersion, Resources: []endpoints.Resource{
			{Store: r.namespaces, Status: r.namespaceStatus, Singular: "namespace", ShortNames: []string{"ns"},
				SelectableFields: []string{"metadata.name", "status.phase"},
				Subresources:     []endpoints.Subresource{core.NewFinalizeREST(r.namespaces).Subresource()}},
			{Store: r.nodes, Status: r.nodeStatus, Singular: "node", ShortNames: []string{"no"},
				SelectableFields: []string{"metadata.name", "spec.unschedulable"}, Subresources: connect.NodeSubresources()},
			{Store: r.pods, Status: r.podStatus, Views: []*generic.Store{r.pods.WithUpdates("ephemeralcontainers", core.PodEphemeralContainersStrategy{})},
				Singular: "pod", ShortNames: []string{"po"},
				SelectableFields: core.PodSelectableFieldNames,
				Subresources: append([]endpoints.Subresource{core.NewBindingREST(r.pods).Subresource(), core.NewEvictionREST(r.pods).Subresource()},
					connect.PodSubresources()...)},
			{Store: r.coreEvents, Singular: "event", ShortNames: []string{"ev"}, SelectableFields: events.CoreSelectableFieldLabels},
			{Store: r.configMaps, Singular: "configmap", ShortNames: []string{"cm"}, SelectableFields: []string{"metadata.name", "metadata.namespace"}},
			{Store: r.secrets, Singular: "secret", SelectableFields: []string{"metadata.name", "metadata.namespace", "type"}},
		}},
		{GroupVersion: coordination.GroupVersion, Resources: []endpoints.Resource{
			{Store: r.leases, Singular: "lease", SelectableFields: []string{"metadata.name", "metadata.namespace"}},
		}},
	}
	if err := r.addServiceAccounts(c, newStore); err != nil {
		return nil, err
	}
	if err := r.addCertificates(c, newStore); err != nil {
		return nil, err
	}
	// RBAC's objects take their UIDs from a source of their own: the bootstrap policy made at
	// every start would otherwise shift every later UID of a simulator's seeded stream, and the
	// objects nothing simulated depends on.
	rbacConfig := c
	rbacConfig.NewUID = nil
	if err := r.addRBAC(c, func(s generic.Strategy) (*generic.Store, error) { return r.newStore(rbacConfig, s) }); err != nil {
		return nil, err
	}
	return r, nil
}

// newStore builds the store of s on a watch cache of its own over c.Storage.
func (r *registry) newStore(c Config, s generic.Strategy) (*generic.Store, error) {
	cached, err := r.watchCache(c, s)
	if err != nil {
		return nil, err
	}
	return r.storeOn(c, s, cached), nil
}

// watchCache is the watch cache of s's resource over c.Storage, stopped with the server.
func (r *registry) watchCache(c Config, s generic.Strategy) (storage.Interface, error) {
	cached, err := cacher.New(c.Storage, generic.KeyRoot(s.Resource().GroupResource()), cacher.Options{Clock: c.Clock, Starting: c.Starting})
	if err != nil {
		return nil, fmt.Errorf("server: loading the watch cache of %s: %w", s.Resource().Resource, err)
	}
	go func() {
		select {
		case <-c.Stopping:
			cached.Stop()
		case <-cached.Stopped():
		}
	}()
	return cached, nil
}

// storeOn is the store of s over st.
func (r *registry) storeOn(c Config, s generic.Strategy, st storage.Interface) *generic.Store {
	return generic.New(generic.Options{Strategy: s, Storage: st, Clock: c.Clock, NewUID: c.NewUID, NameSuffix: c.NameSuffix, Admission: r.admission})
}

// addServiceAccounts serves core/v1 serviceaccounts and, when the server issues tokens, their
// token subresource.
func (r *registry) addServiceAccounts(c Config, newStore func(generic.Strategy) (*generic.Store, error)) error {
	store, err := newStore(core.ServiceAccountStrategy{})
	if err != nil {
		return err
	}
	r.serviceAccounts = store
	res := endpoints.Resource{Store: store, Singular: "serviceaccount", ShortNames: []string{"sa"}, SelectableFields: []string{"metadata.name", "metadata.namespace"}}
	if sa := c.ServiceAccounts; sa != nil {
		sa.serviceAccounts.Store(store)
		sa.pods.Store(r.pods)
		t := core.TokenREST{
			Issuer: sa.Issuer, Audiences: sa.Audiences, MaxExpiration: sa.MaxExpiration, Clock: c.Clock,
			ServiceAccounts: store, Pods: r.pods, Nodes: r.nodes, Admission: r.admission,
		}
		res.Subresources = []endpoints.Subresource{t.Subresource()}
	}
	for i := range r.groups {
		if r.groups[i].GroupVersion == core.GroupVersion {
			r.groups[i].Resources = append(r.groups[i].Resources, res)
		}
	}
	return nil
}

// addCertificates serves certificates.orch.io/v1 certificatesigningrequests, with their status and
// approval subresources.
func (r *registry) addCertificates(c Config, newStore func(generic.Strategy) (*generic.Store, error)) error {
	csrs, err := newStore(certificates.Strategy{Clock: c.Clock})
	if err != nil {
		return err
	}
	approval := certificates.ApprovalStrategy{Clock: c.Clock}
	r.csrs = csrs
	r.csrStatus = csrs.WithUpdates("status", certificates.StatusStrategy{Clock: c.Clock})
	r.csrApproval = certificates.ApprovalView(csrs, approval)
	r.groups = append(r.groups, endpoints.GroupVersion{GroupVersion: certificates.GroupVersion, Resources: []endpoints.Resource{
		{Store: csrs, Status: r.csrStatus, Singular: "certificatesigningrequest", ShortNames: []string{"csr"},
			SelectableFields: certificates.SelectableFieldNames,
			Subresources:     []endpoints.Subresource{certificates.NewApprovalREST(csrs, r.admission, approval).Subresource()}},
	}})
	return nil
}

// addRBAC serves rbac.authorization.orch.io/v1 roles, cluster roles and their bindings, judged by
// the escalation checks against c.Roles (or an index of the server's own), the role a binding names
// read from its store.
func (r *registry) addRBAC(c Config, newStore func(generic.Strategy) (*generic.Store, error)) error {
	r.rbacIndex = c.Roles
	if r.rbacIndex == nil {
		r.rbacIndex = rbac.NewIndex()
	}
	roleStores := &rbacregistry.RoleStores{}
	guard := rbacregistry.Guard{Authorizer: c.Authorizer, Roles: r.rbacIndex, RoleStores: roleStores}
	var err error
	for _, s := range []struct {
		store    **generic.Store
		strategy generic.Strategy
	}{
		{&r.roles, rbacregistry.RoleStrategy{Guard: guard}},
		{&r.clusterRoles, rbacregistry.ClusterRoleStrategy{Guard: guard}},
		{&r.roleBindings, rbacregistry.RoleBindingStrategy{Guard: guard}},
		{&r.clusterRoleBindings, rbacregistry.ClusterRoleBindingStrategy{Guard: guard}},
	} {
		if *s.store, err = newStore(s.strategy); err != nil {
			return err
		}
	}
	roleStores.Roles, roleStores.ClusterRoles = r.roles, r.clusterRoles
	r.groups = append(r.groups, endpoints.GroupVersion{GroupVersion: rbacregistry.GroupVersion, Resources: []endpoints.Resource{
		{Store: r.clusterRoleBindings, Singular: "clusterrolebinding", SelectableFields: []string{"metadata.name"}},
		{Store: r.clusterRoles, Singular: "clusterrole", SelectableFields: []string{"metadata.name"}},
		{Store: r.roleBindings, Singular: "rolebinding", SelectableFields: []string{"metadata.name", "metadata.namespace"}},
		{Store: r.roles, Singular: "role", SelectableFields: []string{"metadata.name", "metadata.namespace"}},
	}})
	return nil
}
