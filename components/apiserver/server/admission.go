package server

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"orch.io/orch/components/apiserver/admission"
	admissioncertificates "orch.io/orch/components/apiserver/admission/certificates"
	"orch.io/orch/components/apiserver/admission/namespacelifecycle"
	"orch.io/orch/components/apiserver/admission/noderestriction"
	"orch.io/orch/components/apiserver/admission/serviceaccount"
	"orch.io/orch/components/apiserver/registry/generic"
)

// admissionChain is every admission plugin the server runs, in Kubernetes' order: those it always
// runs over its own stores (NamespaceLifecycle; ServiceAccount when it issues tokens;
// NodeRestriction with the Node authorization mode; the certificate plugins) and those enabled by
// flag (c.Admission). The plugins read the stores through r, filled once the chain is built.
func (r *registry) admissionChain(c Config) (admission.Chain, error) {
	plugins := map[string]admission.Interface{
		namespacelifecycle.PluginName: namespacelifecycle.New(func(ctx context.Context, name string) (*corev1.Namespace, error) {
			return get[*corev1.Namespace](ctx, r.namespaces, "", name)
		}),
		admissioncertificates.ApprovalPluginName:           admissioncertificates.Approval{Authorizer: c.Authorizer},
		admissioncertificates.SigningPluginName:            admissioncertificates.Signing{Authorizer: c.Authorizer},
		admissioncertificates.SubjectRestrictionPluginName: admissioncertificates.SubjectRestriction{},
	}
	if sa := c.ServiceAccounts; sa != nil {
		plugins[serviceaccount.PluginName] = serviceaccount.New(serviceaccount.Config{
			ServiceAccount: func(ctx context.Context, namespace, name string) (*corev1.ServiceAccount, error) {
				return get[*corev1.ServiceAccount](ctx, r.serviceAccounts, namespace, name)
			},
			RootCAKnown: func() bool { return sa.rootCA.Load() != nil },
			NameSuffix:  r.nameSuffix,
		})
	}
	if c.Node != nil {
		plugins[noderestriction.PluginName] = noderestriction.New(noderestriction.Config{
			Pod:        c.Node.Pod,
			Authorizer: c.Authorizer,
			Node: func(ctx context.Context, name string) (*corev1.Node, error) {
				return get[*corev1.Node](ctx, r.nodes, "", name)
			},
		})
	}
	for name, p := range c.Admission {
		if _, always := plugins[name]; always {
			return nil, fmt.Errorf("server: admission plugin %s runs always; it is not enabled by configuration", name)
		}
		plugins[name] = p
	}
	return admission.NewChain(plugins)
}

// get reads namespace/name from store as a T.
func get[T runtime.Object](ctx context.Context, store *generic.Store, namespace, name string) (T, error) {
	obj, err := store.Get(ctx, namespace, name)
	if err != nil {
		var none T
		return none, err
	}
	return obj.(T), nil
}
