package namespacelifecycle

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"orch.io/orch/components/apiserver/admission"
)

// A create in a namespace that is not there is answered the namespace's 404, in one being deleted
// 403 with Kubernetes' cause; cluster-scoped objects, a subresource's requests and events pass.
func TestAdmit(t *testing.T) {
	p := New(func(_ context.Context, name string) (*corev1.Namespace, error) {
		switch name {
		case "active":
			return &corev1.Namespace{Status: corev1.NamespaceStatus{Phase: corev1.NamespaceActive}}, nil
		case "leaving":
			return &corev1.Namespace{Status: corev1.NamespaceStatus{Phase: corev1.NamespaceTerminating}}, nil
		}
		return nil, apierrors.NewNotFound(corev1.Resource("namespaces"), name)
	})
	pods := corev1.Resource("pods")
	pod := schema.GroupKind{Kind: "Pod"}
	for _, tc := range []struct {
		name  string
		attrs admission.Attributes
		check func(error) bool
	}{
		{"active", admission.Attributes{Resource: pods, Kind: pod, Namespace: "active", Name: "p"}, func(err error) bool { return err == nil }},
		{"missing", admission.Attributes{Resource: pods, Kind: pod, Namespace: "gone", Name: "p"}, apierrors.IsNotFound},
		{"terminating", admission.Attributes{Resource: pods, Kind: pod, Namespace: "leaving", Name: "p"}, func(err error) bool {
			s, ok := err.(*apierrors.StatusError)
			return ok && apierrors.IsForbidden(err) && s.ErrStatus.Details.Causes[0].Type == corev1.NamespaceTerminatingCause &&
				s.ErrStatus.Message == `pods "p" is forbidden: unable to create new content in namespace leaving because it is being terminated`
		}},
		{"cluster-scoped", admission.Attributes{Resource: corev1.Resource("nodes"), Kind: schema.GroupKind{Kind: "Node"}, Name: "n"}, func(err error) bool { return err == nil }},
		{"a token", admission.Attributes{Resource: corev1.Resource("serviceaccounts"), Subresource: "token", Namespace: "gone", Name: "sa"}, func(err error) bool { return err == nil }},
		{"an event", admission.Attributes{Resource: schema.GroupResource{Group: "events.orch.io", Resource: "events"}, Kind: eventKind, Namespace: "gone", Name: "e"}, func(err error) bool { return err == nil }},
	} {
		tc.attrs.Operation = admission.Create
		if err := p.Admit(context.Background(), tc.attrs); !tc.check(err) {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
	if p.Handles(admission.Update) {
		t.Error("updates are judged")
	}
}
