package namespacelifecycle

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	eventsv1 "orch.io/orch/components/apis/events/v1"
	"orch.io/orch/components/apiserver/admission"
)

// PluginName is the plugin's name in the chain.
const PluginName = "NamespaceLifecycle"

// NamespaceGetter reads a namespace; its error (a 404 Status for one that does not exist) is the
// answer to a create in it.
type NamespaceGetter func(ctx context.Context, name string) (*corev1.Namespace, error)

// Plugin refuses creates in namespaces that are not there to hold them.
type Plugin struct {
	namespaces NamespaceGetter
}

var _ admission.MutationInterface = (*Plugin)(nil)

// New returns the plugin reading namespaces through namespaces.
func New(namespaces NamespaceGetter) *Plugin { return &Plugin{namespaces: namespaces} }

// Handles is true for creates.
func (*Plugin) Handles(op admission.Operation) bool { return op == admission.Create }

var eventKind = schema.GroupKind{Group: eventsv1.GroupName, Kind: "Event"}

// Admit refuses an object created in a namespace that does not exist (the namespace's 404) or is
// terminating (403, with Kubernetes' cause). Cluster-scoped objects and a subresource's requests
// (a token) are not judged, and neither are events: orch keeps an event whatever its namespace.
func (p *Plugin) Admit(ctx context.Context, a admission.Attributes) error {
	if a.Namespace == "" || a.Subresource != "" || a.Kind == eventKind {
		return nil
	}
	ns, err := p.namespaces(ctx, a.Namespace)
	if err != nil {
		return err
	}
	if ns.Status.Phase != corev1.NamespaceTerminating {
		return nil
	}
	status := apierrors.NewForbidden(a.Resource, a.Name, fmt.Errorf("unable to create new content in namespace %s because it is being terminated", a.Namespace))
	status.ErrStatus.Details.Causes = append(status.ErrStatus.Details.Causes, metav1.StatusCause{
		Type: corev1.NamespaceTerminatingCause, Message: fmt.Sprintf("namespace %s is being terminated", a.Namespace), Field: "metadata.namespace",
	})
	return status
}
