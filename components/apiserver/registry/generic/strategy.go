package generic

import (
	"context"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"orch.io/orch/components/authn"
)

// Strategy is what makes a resource itself: its identity and the rules of its writes.
type Strategy interface {
	// Resource names the resource in URLs, storage keys and errors.
	Resource() schema.GroupVersionResource
	// Kind is the kind of one object; Kind+"List" is the kind of a list.
	Kind() string
	NamespaceScoped() bool
	New() runtime.Object
	NewList() runtime.Object
	// PrepareForCreate sets what the server owns on a new object (uid, timestamps are set before).
	PrepareForCreate(obj runtime.Object)
	// PrepareForUpdate carries over from old what an update may not change through this endpoint.
	PrepareForUpdate(obj, old runtime.Object)
	Validate(obj runtime.Object) field.ErrorList
	ValidateUpdate(obj, old runtime.Object) field.ErrorList
	// AllowCreateOnUpdate tells whether a PUT of an absent object creates it.
	AllowCreateOnUpdate() bool
	// SelectableFields are the values a field selector matches, metadata.name and
	// metadata.namespace included.
	SelectableFields(obj runtime.Object) fields.Set
}

// GracefulStrategy is a Strategy whose objects go through a grace period when deleted.
type GracefulStrategy interface {
	// GracePeriod returns the period a delete gives obj: the one asked for (nil when the request
	// named none) or the object's default; 0 deletes at once.
	GracePeriod(obj runtime.Object, asked *int64) int64
}

// Table is a Strategy's server-side printing, for kubectl get.
type Table interface {
	Columns() []metav1.TableColumnDefinition
	// Row returns the cells of obj, one per column; now is for ages.
	Row(obj runtime.Object, now time.Time) []any
}

// ExpiringStrategy is a Strategy whose objects are kept only a while after their last write, as
// events are for the server's --event-ttl.
type ExpiringStrategy interface {
	// TimeToLive is how long an object is kept after its last write; 0 keeps it.
	TimeToLive() time.Duration
}

// DeleteReturnsObject is a Strategy whose delete answers the deleted object, as Kubernetes does
// for pods and namespaces, rather than a success Status.
type DeleteReturnsObject interface {
	ReturnDeletedObject() bool
}

// FinalizingStrategy is a Strategy whose objects, once deleted, stay until the server has finished
// them (a namespace empties first): deletion marks them, and they go when Finalizing turns false.
type FinalizingStrategy interface {
	Finalizing(obj runtime.Object) bool
	// MarkDeleting changes obj as its deletion starts (a namespace's phase becomes Terminating).
	MarkDeleting(obj runtime.Object)
}

// RequesterStrategy is a Strategy whose new objects record who asked for them (a certificate
// signing request's spec.username and groups), set after PrepareForCreate from the request's user.
type RequesterStrategy interface {
	SetRequester(obj runtime.Object, user *authn.UserInfo)
}

// GuardedStrategy is a Strategy whose writes are judged against the user asking beyond what
// authorization decided (Kubernetes' RBAC escalation checks): ConfirmWrite runs on creates and
// updates once the object is valid, before admission's validation; old is nil for a create. The
// server's own writes (no user) are not judged.
type GuardedStrategy interface {
	ConfirmWrite(ctx context.Context, user *authn.UserInfo, obj, old runtime.Object) error
}
