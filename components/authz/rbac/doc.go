// Package rbac is role-based access control as Kubernetes' RBAC authorizer decides it: rules by API
// group, resource, subresource, resource name, non-resource URL and verb (with "*"), gathered from
// the roles a user's bindings name. Index holds the roles and bindings, kept by the API server from
// its stores, and answers both authorization (Authorizer) and the rules a user holds (RulesFor);
// ConfirmNoEscalation keeps a user from granting what they do not hold; Aggregate gathers an
// aggregated cluster role's rules; Reconcile brings a role or binding of the bootstrap policy up to
// what the server expects. A group's Kubernetes name and orch's name are one group here.
package rbac
