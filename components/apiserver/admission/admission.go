package admission

import (
	"context"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"orch.io/orch/components/authn"
)

// Operation is the kind of write being admitted, named as Kubernetes names it.
type Operation string

// The operations admission runs on.
const (
	Create Operation = "CREATE"
	Update Operation = "UPDATE"
)

// Attributes describe one write for the plugins to judge.
type Attributes struct {
	Operation Operation
	Kind      schema.GroupKind
	Namespace string
	Name      string
	// Object is the object as it will be stored (for example *eventsv1.Event).
	Object any
	// User is who asked; nil when the request carried no user.
	User *authn.UserInfo
}

// Plugin is a validating admission plugin.
type Plugin interface {
	// Handles tells whether the plugin judges op at all.
	Handles(op Operation) bool
	// Validate returns nil to admit the write, or the error the client is answered with
	// (a *apierrors.StatusError, such as 429 Too Many Requests).
	Validate(ctx context.Context, a Attributes) error
}

// Chain runs plugins in order; the first refusal ends the write.
type Chain []Plugin

// Validate admits a write when every plugin that handles its operation does.
func (c Chain) Validate(ctx context.Context, a Attributes) error {
	for _, p := range c {
		if !p.Handles(a.Operation) {
			continue
		}
		if err := p.Validate(ctx, a); err != nil {
			return err
		}
	}
	return nil
}
