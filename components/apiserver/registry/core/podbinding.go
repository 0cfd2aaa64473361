package core

import (
	"fmt"
	"net/http"

	restful "github.com/emicklei/go-restful/v3"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"orch.io/orch/components/apiserver/endpoints"
	"orch.io/orch/components/apiserver/registry/generic"
)

// BindingREST is pods/binding: a pod gets its node once.
type BindingREST struct {
	// store is the pods' binding view. No admission plugin judges a binding (NodeRestriction
	// refuses nodes' by their path), so it writes without admission.
	store *generic.Store
}

// NewBindingREST serves the binding of the pods in pods.
func NewBindingREST(pods *generic.Store) BindingREST {
	return BindingREST{store: pods.WithUpdates("binding", PodBindingStrategy{}).WithoutAdmission()}
}

// Subresource describes pods/binding to the endpoints.
func (b BindingREST) Subresource() endpoints.Subresource {
	return endpoints.Subresource{Name: "binding", Method: http.MethodPost, Verbs: []string{"create"}, Kind: "Binding",
		Handler: endpoints.BodyHandler(corev1.SchemeGroupVersion.WithKind("Binding"), b.create)}
}

func (b BindingREST) create(req *restful.Request, binding *corev1.Binding) (int, any, error) {
	name := req.PathParameter("name")
	if binding.Target.Name == "" {
		return 0, nil, apierrors.NewInvalid(schema.GroupKind{Kind: "Binding"}, name, field.ErrorList{field.Required(field.NewPath("target.name"), "")})
	}
	_, err := b.store.GuaranteedUpdate(req.Request.Context(), req.PathParameter("namespace"), name, func(obj runtime.Object) (runtime.Object, error) {
		pod := obj.(*corev1.Pod)
		if pod.DeletionTimestamp != nil {
			return nil, apierrors.NewConflict(corev1.Resource("pods/binding"), name, fmt.Errorf("pod %s is being deleted, cannot be assigned to a host", name))
		}
		if pod.Spec.NodeName != "" {
			return nil, apierrors.NewConflict(corev1.Resource("pods/binding"), name, fmt.Errorf("pod %s is already assigned to node %q", name, pod.Spec.NodeName))
		}
		pod.Spec.NodeName = binding.Target.Name
		pod.Status.Conditions = append(pod.Status.Conditions, corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionTrue})
		return pod, nil
	})
	if err != nil {
		return 0, nil, err
	}
	return endpoints.Created()
}
