package events

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/google/uuid"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/validation/field"

	eventsv1 "orch.io/orch/components/apis/events/v1"
	"orch.io/orch/components/apis/events/v1/validation"
	"orch.io/orch/components/apiserver/admission"
	"orch.io/orch/components/apiserver/registry/generic"
	"orch.io/orch/components/apiserver/storage"
	"orch.io/orch/components/authn"
)

// KeyRoot is where events live in storage: <KeyRoot><namespace>/<name>.
const KeyRoot = "/registry/events.orch.io/events/"

// generateNameAttempts bounds retries when a generated name collides with an existing one.
const generateNameAttempts = 8

// eventKind has no group in 422 answers: Kubernetes reports the internal kind, `Event "x" is invalid`.
var eventKind = schema.GroupKind{Kind: "Event"}

// Options configure a Store.
type Options struct {
	Storage storage.Interface
	Clock   clock.Clock
	// TTL is how long an event is kept after its last write.
	TTL time.Duration
	// NewUID makes object uids; a simulator passes a seeded source.
	NewUID func() types.UID
	// NameSuffix makes the random part of generated names.
	NameSuffix func() string
	// Admit, when set, is the admission chain: it judges each create and update (dry runs too,
	// as in Kubernetes) after the event passed validation and before it is stored.
	Admit func(context.Context, admission.Attributes) error
}

// Store serves Events from a storage.Interface. Errors it returns are *apierrors.StatusError.
type Store struct {
	storage    storage.Interface
	clock      clock.Clock
	ttl        time.Duration
	newUID     func() types.UID
	nameSuffix func() string
	admit      func(context.Context, admission.Attributes) error
}

// randomSuffix is Kubernetes' generateName suffix: five characters from a consonant-heavy alphabet.
func randomSuffix() string { return utilrand.String(5) }

// New returns a Store; NewUID and NameSuffix default to random sources.
func New(o Options) *Store {
	s := &Store{storage: o.Storage, clock: o.Clock, ttl: o.TTL, newUID: o.NewUID, nameSuffix: o.NameSuffix, admit: o.Admit}
	if s.newUID == nil {
		s.newUID = func() types.UID { return types.UID(uuid.NewString()) }
	}
	if s.nameSuffix == nil {
		s.nameSuffix = randomSuffix
	}
	return s
}

func key(namespace, name string) string { return KeyRoot + namespace + "/" + name }

func listPrefix(namespace string) string {
	if namespace == "" {
		return KeyRoot
	}
	return KeyRoot + namespace + "/"
}

func notFound(name string) error { return apierrors.NewNotFound(eventsv1.Resource, name) }

func conflict(name string, msg string) error {
	return apierrors.NewConflict(eventsv1.Resource, name, errors.New(msg))
}

func internal(err error) error { return apierrors.NewInternalError(err) }

// checkNamespace applies the path's namespace to the object, refusing a body naming another.
func checkNamespace(e *eventsv1.Event, namespace string) error {
	if e.Namespace == "" {
		e.Namespace = namespace
		return nil
	}
	if e.Namespace != namespace {
		return apierrors.NewBadRequest("the namespace of the provided object does not match the namespace sent on the request")
	}
	return nil
}

// Create stores a new event in namespace. With dryRun it validates and answers without storing.
func (s *Store) Create(ctx context.Context, namespace string, in *eventsv1.Event, dryRun bool) (*eventsv1.Event, error) {
	if err := checkNamespace(in, namespace); err != nil {
		return nil, err
	}
	if in.ResourceVersion != "" {
		return nil, apierrors.NewBadRequest("resourceVersion should not be set on objects to be created")
	}
	generate := in.Name == "" && in.GenerateName != ""
	for attempt := 0; ; attempt++ {
		obj := *in
		if generate {
			obj.Name = in.GenerateName + s.nameSuffix()
		}
		s.prepareForCreate(&obj)
		if errs := validation.ValidateCreate(&obj); len(errs) > 0 {
			return nil, apierrors.NewInvalid(eventKind, obj.Name, errs)
		}
		if err := s.admitWrite(ctx, admission.Create, &obj); err != nil {
			return nil, err
		}
		if dryRun {
			return &obj, nil
		}
		data, err := encode(&obj)
		if err != nil {
			return nil, internal(err)
		}
		rev, err := s.storage.Create(ctx, key(obj.Namespace, obj.Name), data, s.ttl)
		if errors.Is(err, storage.ErrKeyExists) {
			if generate && attempt+1 < generateNameAttempts {
				continue
			}
			return nil, apierrors.NewAlreadyExists(eventsv1.Resource, obj.Name)
		}
		if err != nil {
			return nil, generic.StorageError(err)
		}
		obj.ResourceVersion = strconv.FormatInt(rev, 10)
		obj.TypeMeta = eventTypeMeta
		return &obj, nil
	}
}

// admitWrite asks the admission chain, if any, about writing e.
func (s *Store) admitWrite(ctx context.Context, op admission.Operation, e *eventsv1.Event) error {
	if s.admit == nil {
		return nil
	}
	user, _ := authn.UserFrom(ctx)
	return s.admit(ctx, admission.Attributes{
		Operation: op, Kind: eventsv1.SchemeGroupVersion.WithKind("Event").GroupKind(),
		Namespace: e.Namespace, Name: e.Name, Object: e, User: user,
	})
}

// prepareForCreate sets what the server owns on a new object and drops what a client may not set.
func (s *Store) prepareForCreate(e *eventsv1.Event) {
	e.TypeMeta = eventTypeMeta
	e.UID = s.newUID()
	e.CreationTimestamp = metav1.NewTime(s.clock.Now().Truncate(time.Second))
	e.DeletionTimestamp = nil
	e.DeletionGracePeriodSeconds = nil
	e.Generation = 0
	e.ManagedFields = nil
}

// Get returns the event namespace/name.
func (s *Store) Get(ctx context.Context, namespace, name string) (*eventsv1.Event, error) {
	e, _, err := s.get(ctx, namespace, name)
	return e, err
}

// get is Get, also telling whether the stored form is stale (see storage.KeyValue.Stale).
func (s *Store) get(ctx context.Context, namespace, name string) (*eventsv1.Event, bool, error) {
	kv, err := s.storage.Get(ctx, key(namespace, name))
	if errors.Is(err, storage.ErrNotFound) {
		return nil, false, notFound(name)
	}
	if err != nil {
		return nil, false, generic.StorageError(err)
	}
	e, err := decode(kv)
	if err != nil {
		return nil, false, internal(err)
	}
	return e, kv.Stale, nil
}

// Update replaces namespace/name with in, creating it when absent (Kubernetes allows create on
// update for events). A resourceVersion in the object is a precondition; without one the update
// is unconditional and retried over concurrent writes. created reports a create.
func (s *Store) Update(ctx context.Context, namespace, name string, in *eventsv1.Event, dryRun bool) (out *eventsv1.Event, created bool, err error) {
	if in.Name != name {
		return nil, false, apierrors.NewBadRequest(fmt.Sprintf("the name of the object (%s) does not match the name on the URL (%s)", in.Name, name))
	}
	if err := checkNamespace(in, namespace); err != nil {
		return nil, false, err
	}
	for {
		old, stale, err := s.get(ctx, namespace, name)
		if apierrors.IsNotFound(err) {
			obj := *in
			obj.ResourceVersion = ""
			out, err := s.Create(ctx, namespace, &obj, dryRun)
			if apierrors.IsAlreadyExists(err) {
				continue // created concurrently: update it instead
			}
			return out, err == nil, err
		}
		if err != nil {
			return nil, false, err
		}
		out, err := s.replace(ctx, old, stale, *in, dryRun)
		if errors.Is(err, errRetry) {
			continue
		}
		return out, false, err
	}
}

// errRetry asks the caller to read the object again and redo its change.
var errRetry = errors.New("retry")

// replace writes next over old. A resourceVersion in next must match old's; a storage conflict
// or a vanished object without such a precondition is errRetry.
func (s *Store) replace(ctx context.Context, old *eventsv1.Event, stale bool, next eventsv1.Event, dryRun bool) (*eventsv1.Event, error) {
	precondition := next.ResourceVersion != ""
	if precondition && next.ResourceVersion != old.ResourceVersion {
		return nil, conflict(old.Name, generic.OptimisticLockMessage)
	}
	next.TypeMeta = eventTypeMeta
	next.ResourceVersion = old.ResourceVersion
	if next.UID == "" {
		next.UID = old.UID
	}
	next.CreationTimestamp = old.CreationTimestamp
	next.Generation = old.Generation
	next.ManagedFields = nil
	if errs := validation.ValidateUpdate(&next, old); len(errs) > 0 {
		return nil, apierrors.NewInvalid(eventKind, next.Name, errs)
	}
	if err := s.admitWrite(ctx, admission.Update, &next); err != nil {
		return nil, err
	}
	data, err := encode(&next)
	if err != nil {
		return nil, internal(err)
	}
	oldData, err := encode(old)
	if err != nil {
		return nil, internal(err)
	}
	// An update that changes nothing is not a write (same resourceVersion, expiry unchanged),
	// unless the stored form is stale: rewriting is how objects move to a new encryption key.
	if dryRun || (bytes.Equal(data, oldData) && !stale) {
		return &next, nil
	}
	oldRev, _ := strconv.ParseInt(old.ResourceVersion, 10, 64)
	rev, err := s.storage.Update(ctx, key(next.Namespace, next.Name), oldRev, data, s.ttl)
	switch {
	case errors.Is(err, storage.ErrConflict) || errors.Is(err, storage.ErrNotFound):
		if precondition {
			return nil, conflict(next.Name, generic.OptimisticLockMessage)
		}
		return nil, errRetry
	case err != nil:
		return nil, generic.StorageError(err)
	}
	next.ResourceVersion = strconv.FormatInt(rev, 10)
	return &next, nil
}

// PatchFunc turns the current object, as JSON with its resourceVersion, into the patched object.
type PatchFunc func(current []byte) (*eventsv1.Event, error)

// Patch applies patch to namespace/name, re-reading and re-applying over concurrent writes unless
// the patch pins a resourceVersion.
func (s *Store) Patch(ctx context.Context, namespace, name string, patch PatchFunc, dryRun bool) (*eventsv1.Event, error) {
	for {
		old, stale, err := s.get(ctx, namespace, name)
		if err != nil {
			return nil, err
		}
		current, err := jsonWithVersion(old)
		if err != nil {
			return nil, internal(err)
		}
		next, err := patch(current)
		if err != nil {
			return nil, err
		}
		if next.Name != old.Name || next.Namespace != old.Namespace {
			// Identity is the URL's: a patch cannot move an object.
			errs := field.ErrorList{}
			if next.Name != old.Name {
				errs = append(errs, field.Invalid(field.NewPath("metadata", "name"), next.Name, "field is immutable"))
			}
			if next.Namespace != old.Namespace {
				errs = append(errs, field.Invalid(field.NewPath("metadata", "namespace"), next.Namespace, "field is immutable"))
			}
			return nil, apierrors.NewInvalid(eventKind, old.Name, errs)
		}
		out, err := s.replace(ctx, old, stale, *next, dryRun)
		if errors.Is(err, errRetry) {
			continue
		}
		return out, err
	}
}

// Preconditions must hold for a delete to proceed.
type Preconditions struct {
	UID             *types.UID
	ResourceVersion *string
}

// Delete removes namespace/name, answering the object as it was.
func (s *Store) Delete(ctx context.Context, namespace, name string, pre Preconditions, dryRun bool) (*eventsv1.Event, error) {
	for {
		old, err := s.Get(ctx, namespace, name)
		if err != nil {
			return nil, err
		}
		if pre.UID != nil && *pre.UID != old.UID {
			return nil, conflict(name, fmt.Sprintf("Precondition failed: UID in precondition: %v, UID in object meta: %v", *pre.UID, old.UID))
		}
		if pre.ResourceVersion != nil && *pre.ResourceVersion != old.ResourceVersion {
			return nil, conflict(name, fmt.Sprintf("Precondition failed: ResourceVersion in precondition: %v, ResourceVersion in object meta: %v", *pre.ResourceVersion, old.ResourceVersion))
		}
		if dryRun {
			return old, nil
		}
		rev, _ := strconv.ParseInt(old.ResourceVersion, 10, 64)
		_, _, err = s.storage.Delete(ctx, key(namespace, name), rev)
		if errors.Is(err, storage.ErrConflict) {
			continue
		}
		if errors.Is(err, storage.ErrNotFound) {
			return nil, notFound(name)
		}
		if err != nil {
			return nil, generic.StorageError(err)
		}
		return old, nil
	}
}
