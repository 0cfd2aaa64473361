package server

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/klog/v2"

	eventsv1 "orch.io/orch/components/apis/events/v1"
	"orch.io/orch/components/apiserver/admission"
	"orch.io/orch/components/apiserver/endpoints"
	"orch.io/orch/components/apiserver/registry/coordination"
	"orch.io/orch/components/apiserver/registry/core"
	"orch.io/orch/components/apiserver/registry/events"
	"orch.io/orch/components/apiserver/registry/generic"
	"orch.io/orch/components/apiserver/storage/cacher"
)

// The events' protobuf form is events.k8s.io/v1's, named by their strategy.
var _ endpoints.ProtobufForm = events.Strategy{}

// registry is every resource the server keeps.
type registry struct {
	namespaces, namespaceStatus, namespaceFinalize *generic.Store
	nodes, nodeStatus                              *generic.Store
	pods, podStatus                                *generic.Store
	leases                                         *generic.Store
	configMaps, secrets                            *generic.Store
	serviceAccounts                                *generic.Store
	nameSuffix                                     func() string // of the token volumes mounted into pods
	admission                                      admission.Chain
	events                                         *generic.Store
	csrs                                           *csrStores
	groups                                         []endpoints.GroupVersion
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
	newStore := func(s generic.Strategy) (*generic.Store, error) {
		cached, err := cacher.New(c.Storage, generic.KeyRoot(s.Resource().GroupResource()), cacher.Options{Clock: c.Clock})
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
		return generic.New(generic.Options{Strategy: s, Storage: cached, Clock: c.Clock, NewUID: c.NewUID, NameSuffix: c.NameSuffix, Admission: r.admission}), nil
	}
	if r.events, err = newStore(events.Strategy{TTL: c.EventTTL}); err != nil {
		return nil, err
	}
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
	r.namespaceFinalize = r.namespaces.WithUpdates("finalize", core.NamespaceFinalizeStrategy{}).WithoutAdmission()
	r.nodeStatus = r.nodes.WithUpdates("status", core.NodeStatusStrategy{NodeStrategy: core.NodeStrategy{Clock: c.Clock}})
	r.podStatus = r.pods.WithUpdates("status", core.PodStatusStrategy{})

	r.groups = []endpoints.GroupVersion{
		{GroupVersion: eventsv1.SchemeGroupVersion, Resources: []endpoints.Resource{
			{Store: r.events, Singular: "event", ShortNames: []string{"ev"}, SelectableFields: eventsv1.SelectableFieldLabels()},
		}},
		{GroupVersion: core.GroupVersion, Resources: []endpoints.Resource{
			{Store: r.namespaces, Status: r.namespaceStatus, Singular: "namespace", ShortNames: []string{"ns"},
				SelectableFields: []string{"metadata.name", "status.phase"},
				Subresources:     []endpoints.Subresource{core.NewFinalizeREST(r.namespaces).Subresource()}},
			{Store: r.nodes, Status: r.nodeStatus, Singular: "node", ShortNames: []string{"no"},
				SelectableFields: []string{"metadata.name", "spec.unschedulable"}},
			{Store: r.pods, Status: r.podStatus, Singular: "pod", ShortNames: []string{"po"},
				SelectableFields: core.PodSelectableFieldNames,
				Subresources:     []endpoints.Subresource{core.NewBindingREST(r.pods).Subresource(), core.NewEvictionREST(r.pods).Subresource()}},
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
	return r, nil
}

// ensureNamespaces creates the namespaces that exist from the start, where missing.
func (r *registry) ensureNamespaces(ctx context.Context) error {
	for _, name := range core.InitialNamespaces {
		_, err := r.namespaces.Create(ctx, "", &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, false)
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("server: creating namespace %s: %w", name, err)
		}
	}
	return nil
}

// retryNamespaces tries ensureNamespaces every namespaceSweepInterval until it succeeds.
func (r *registry) retryNamespaces(ctx context.Context, c Config) {
	ticker := c.Clock.Ticker(namespaceSweepInterval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
			if err := r.ensureNamespaces(ctx); err == nil {
				return
			}
		}
	}
}

// namespaceSweepInterval is how often terminating namespaces are emptied and finished.
const namespaceSweepInterval = 2 * time.Second

// runNamespaceController empties each terminating namespace (pods gracefully: a pod on a node
// goes when its agent confirms) and removes it once nothing is left, as Kubernetes' namespace
// controller does.
func (r *registry) runNamespaceController(ctx context.Context, c Config) {
	ticker := c.Clock.Ticker(namespaceSweepInterval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
			if err := r.sweepNamespaces(ctx); err != nil && ctx.Err() == nil && !closed(c.Stopping) {
				klog.ErrorS(err, "Finishing terminating namespaces")
			}
		}
	}
}

func (r *registry) sweepNamespaces(ctx context.Context) error {
	list, err := r.namespaces.List(ctx, "", generic.ListOptions{})
	if err != nil {
		return err
	}
	for _, obj := range generic.Items(list) {
		ns := obj.(*corev1.Namespace)
		if ns.DeletionTimestamp == nil {
			continue
		}
		empty, err := r.emptyNamespace(ctx, ns.Name)
		if err != nil || !empty {
			return err
		}
		_, err = r.namespaceFinalize.GuaranteedUpdate(ctx, "", ns.Name, func(obj runtime.Object) (runtime.Object, error) {
			n := obj.(*corev1.Namespace)
			n.Spec.Finalizers = slices.DeleteFunc(n.Spec.Finalizers, func(f corev1.FinalizerName) bool { return f == core.FinalizerOrch })
			return n, nil
		})
		if err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	return nil
}

// emptyNamespace deletes what namespace holds and tells whether nothing is left.
func (r *registry) emptyNamespace(ctx context.Context, namespace string) (bool, error) {
	empty := true
	for _, s := range []*generic.Store{r.events, r.pods, r.leases, r.configMaps, r.secrets, r.serviceAccounts} {
		list, err := s.DeleteCollection(ctx, namespace, generic.ListOptions{}, generic.DeleteOptions{})
		if err != nil {
			return false, err
		}
		for _, obj := range generic.Items(list) {
			if m, ok := obj.(metav1.Object); ok && m.GetDeletionTimestamp() != nil && m.GetDeletionGracePeriodSeconds() != nil && *m.GetDeletionGracePeriodSeconds() > 0 {
				empty = false // still stopping on its node
			}
		}
	}
	return empty, nil
}

// closed tells whether the server is stopping: its storage may close under a sweep at any moment
// from then on, and that failure is the shutdown's, not worth an error line.
func closed(stopping <-chan struct{}) bool {
	select {
	case <-stopping:
		return true
	default:
		return false
	}
}
