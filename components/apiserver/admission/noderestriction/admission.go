package noderestriction

import (
	"context"
	"errors"
	"fmt"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"orch.io/orch/components/apiserver/admission"
	"orch.io/orch/components/authz"
)

// PluginName is the plugin's name in the chain.
const PluginName = "NodeRestriction"

// Config is what the plugin reads.
type Config struct {
	// Pod reads a pod: the pod a node's request names, or binds its token to.
	Pod authz.PodGetter
	// Node reads a node: the owner of a mirror pod.
	Node func(ctx context.Context, name string) (*corev1.Node, error)
	// Authorizer is the server's: it may grant a node service account tokens for audiences its
	// pods do not project (RequestAudienceVerb). Without one, only the pods' audiences are issued.
	Authorizer authz.Authorizer
}

// Plugin judges the writes of nodes; anyone else's pass.
type Plugin struct {
	Config
}

var (
	_ admission.MutationInterface = (*Plugin)(nil)
	_ admission.RequestInterface  = (*Plugin)(nil)
)

// New returns the plugin.
func New(c Config) *Plugin { return &Plugin{Config: c} }

// Handles is true for creates and updates.
func (*Plugin) Handles(op admission.Operation) bool {
	return op == admission.Create || op == admission.Update
}

// AdmitRequest refuses a node's request by its path, before its body is read: another node's Node
// or Lease, a pod not bound to it, a pod operation or subresource a node has no use for
// (authz.NodeRestriction's rules).
func (p *Plugin) AdmitRequest(ctx context.Context, a authz.Attributes) error {
	if _, isNode := authz.NodeIdentity(a.User); !isNode {
		return nil
	}
	reason, err := authz.NodeRestriction(ctx, a, p.Pod)
	switch {
	case err != nil:
		return apierrors.NewInternalError(err)
	case reason != "":
		return apierrors.NewForbidden(schema.GroupResource{Group: a.APIGroup, Resource: a.Resource}, a.Name, errors.New(reason))
	}
	return nil
}

var serviceAccounts = corev1.Resource("serviceaccounts")

// Admit refuses what a node may not write, judged on the object: it creates only its own Node and
// Lease and mirror pods of its own, changes neither the taints of its Node nor labels an agent does
// not set, and requests only tokens bound to its pods (see tokenRefusal).
func (p *Plugin) Admit(ctx context.Context, a admission.Attributes) error {
	node, isNode := authz.NodeIdentity(a.User)
	if !isNode {
		return nil
	}
	if node == "" {
		return apierrors.NewForbidden(a.Resource, a.Name, fmt.Errorf("could not determine node from user %q", a.User.Name))
	}
	if a.Resource == serviceAccounts && a.Subresource == "token" {
		return p.admitToken(ctx, node, a)
	}
	var reason string
	switch o := a.Object.(type) {
	case *corev1.Pod:
		if a.OldObject == nil {
			var err error
			if reason, err = p.mirrorPodRefusal(ctx, node, o); err != nil {
				return err
			}
		}
	case *corev1.Node:
		old, _ := a.OldObject.(*corev1.Node)
		reason = nodeRefusal(node, o, old)
	case *coordinationv1.Lease:
		if o.Name != node {
			reason = "can only access node lease with the same name as the requesting node"
		}
	}
	if reason == "" {
		return nil
	}
	return apierrors.NewForbidden(a.Resource, a.Name, errors.New(reason))
}
