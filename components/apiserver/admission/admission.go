package admission

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"orch.io/orch/components/authn"
	"orch.io/orch/components/authz"
)

// Operation is the kind of write being admitted, named as Kubernetes names it.
type Operation string

// The operations admission runs on.
const (
	Create Operation = "CREATE"
	Update Operation = "UPDATE"
)

// Attributes describe one write for the plugins to judge: an object created or updated through its
// resource or a subresource (a status update, a token request).
type Attributes struct {
	Operation Operation
	// Kind is the kind of Object (for example events.orch.io Event).
	Kind schema.GroupKind
	// Resource and Subresource are what the write goes through: pods and "status", serviceaccounts
	// and "token"; "" for the resource itself.
	Resource    schema.GroupResource
	Subresource string
	Namespace   string
	Name        string
	// Object is the object as it will be stored, or a subresource's request (a TokenRequest).
	Object runtime.Object
	// OldObject is the object an update writes over; nil for a create.
	OldObject runtime.Object
	// User is who asked; nil for the server's own writes (its controllers).
	User *authn.UserInfo
}

// Interface is what every admission plugin implements.
type Interface interface {
	// Handles tells whether the plugin judges op at all.
	Handles(op Operation) bool
}

// MutationInterface is a plugin that may change the object it admits, or refuse it.
type MutationInterface interface {
	Interface
	// Admit returns nil to let the write go on, or the error the client is answered with (a
	// *apierrors.StatusError).
	Admit(ctx context.Context, a Attributes) error
}

// ValidationInterface is a plugin that judges the object as validated, without changing it.
type ValidationInterface interface {
	Interface
	// Validate returns nil to admit the write, or the error the client is answered with (a
	// *apierrors.StatusError, such as 429 Too Many Requests).
	Validate(ctx context.Context, a Attributes) error
}

// RequestInterface is a plugin that also judges a request by what its method and path say, before
// its body is read: a request it refuses is refused whatever its body (orch's NodeRestriction;
// Kubernetes judges the same rules once the object is decoded).
type RequestInterface interface {
	Interface
	AdmitRequest(ctx context.Context, a authz.Attributes) error
}

// Chain is the plugins in the order they run; the first refusal ends the write.
type Chain []Interface

// Order is the order Kubernetes runs the plugins orch has (kube-apiserver's AllOrderedPlugins).
var Order = []string{
	"NamespaceLifecycle",
	"ServiceAccount",
	"NodeRestriction",
	"EventRateLimit",
	"CertificateApproval",
	"CertificateSigning",
	"CertificateSubjectRestriction",
}

// NewChain puts plugins, by name, in Kubernetes' order.
func NewChain(plugins map[string]Interface) (Chain, error) {
	var c Chain
	for _, name := range Order {
		if p, ok := plugins[name]; ok {
			c = append(c, p)
		}
	}
	if len(c) != len(plugins) {
		var unknown []string
		for name := range maps.Keys(plugins) {
			if !slices.Contains(Order, name) {
				unknown = append(unknown, name)
			}
		}
		slices.Sort(unknown)
		return nil, fmt.Errorf("admission: plugins %q have no place in the chain's order", unknown)
	}
	return c, nil
}

// Admit runs every mutating plugin that handles the write's operation.
func (c Chain) Admit(ctx context.Context, a Attributes) error {
	for _, p := range c {
		if m, ok := p.(MutationInterface); ok && m.Handles(a.Operation) {
			if err := m.Admit(ctx, a); err != nil {
				return err
			}
		}
	}
	return nil
}

// Validate runs every validating plugin that handles the write's operation.
func (c Chain) Validate(ctx context.Context, a Attributes) error {
	for _, p := range c {
		if v, ok := p.(ValidationInterface); ok && v.Handles(a.Operation) {
			if err := v.Validate(ctx, a); err != nil {
				return err
			}
		}
	}
	return nil
}

// AdmitRequest runs every plugin that judges requests by their path.
func (c Chain) AdmitRequest(ctx context.Context, a authz.Attributes) error {
	for _, p := range c {
		if r, ok := p.(RequestInterface); ok {
			if err := r.AdmitRequest(ctx, a); err != nil {
				return err
			}
		}
	}
	return nil
}

// JudgesRequests tells whether a plugin of the chain judges requests by their path.
func (c Chain) JudgesRequests() bool {
	return slices.ContainsFunc(c, func(p Interface) bool {
		_, ok := p.(RequestInterface)
		return ok
	})
}
