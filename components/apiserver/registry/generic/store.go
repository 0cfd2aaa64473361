package generic

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/google/uuid"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"orch.io/orch/components/apiserver/admission"
	"orch.io/orch/components/apiserver/jsoncopy"
	"orch.io/orch/components/apiserver/storage"
	"orch.io/orch/components/authn"
)

// generateNameAttempts bounds retries when a generated name collides with an existing one.
const generateNameAttempts = 8

// Options configure a Store.
type Options struct {
	Strategy Strategy
	Storage  storage.Interface
	Clock    clock.Clock
	// NewUID makes object uids; a simulator passes a seeded source.
	NewUID func() types.UID
	// NameSuffix makes the random part of generated names.
	NameSuffix func() string
	// Admission, when set, judges each create and update (see Admission).
	Admission Admission
}

// Admission is the server's admission chain as a store runs it. Admit may change or refuse a
// create before the object is validated (its namespace set), and refuse an update once the
// update's own rules hold; Validate judges either once the object passed validation (dry runs too,
// as in Kubernetes), before it is stored. A refusal is a Status error.
type Admission interface {
	Admit(ctx context.Context, a admission.Attributes) error
	Validate(ctx context.Context, a admission.Attributes) error
}

// Store serves one resource from storage. Errors it returns are *apierrors.StatusError.
type Store struct {
	strategy Strategy
	// updates is the strategy of writes through this view: the resource's own, or its status's.
	updates    UpdateStrategy
	storage    storage.Interface
	clock      clock.Clock
	newUID     func() types.UID
	nameSuffix func() string
	admission  Admission
	// subresource names the view's writes to admission: "" for the resource's own, "status".
	subresource string
	ttl         time.Duration
	keyRoot     string
	gvk         schema.GroupVersionKind
	lazyFields  *lazyFields
	shapes      *createShapes
	// decoded keeps what the stored bytes of the store's updates decode to, for their next read;
	// shared by every view of the store.
	decoded *decodedCache
	// lastChange is the JSON of the latest change a JSON watch sent: every watcher sends the same
	// change at about the same time, and all but the first reuse it.
	lastChange *lastChangeJSON
}

// UpdateStrategy is what differs between writes to an object and to one of its subresources.
type UpdateStrategy interface {
	PrepareForUpdate(obj, old runtime.Object)
	ValidateUpdate(obj, old runtime.Object) field.ErrorList
}

// New returns a Store; NewUID and NameSuffix default to random sources.
func New(o Options) *Store {
	gvr := o.Strategy.Resource()
	s := &Store{
		strategy: o.Strategy, updates: o.Strategy, storage: o.Storage, clock: o.Clock,
		newUID: o.NewUID, nameSuffix: o.NameSuffix, admission: o.Admission,
		keyRoot:    KeyRoot(gvr.GroupResource()),
		gvk:        gvr.GroupVersion().WithKind(o.Strategy.Kind()),
		lazyFields: &lazyFields{},
		shapes:     &createShapes{},
		lastChange: &lastChangeJSON{},
		decoded:    &decodedCache{},
	}
	if e, ok := o.Strategy.(ExpiringStrategy); ok {
		s.ttl = e.TimeToLive()
	}
	if s.newUID == nil {
		s.newUID = func() types.UID { return types.UID(uuid.NewString()) }
	}
	if s.nameSuffix == nil {
		s.nameSuffix = func() string { return utilrand.String(5) }
	}
	return s
}

// KeyRoot is where a resource's objects live in storage: Kubernetes' layout, /registry/<resource>/
// for the core group and /registry/<group>/<resource>/ for the others.
func KeyRoot(gr schema.GroupResource) string {
	if gr.Group == "" {
		return "/registry/" + gr.Resource + "/"
	}
	return "/registry/" + gr.Group + "/" + gr.Resource + "/"
}

// WithUpdates returns a view of s whose updates follow u: the subresource named subresource
// ("status"), admitted as such.
func (s *Store) WithUpdates(subresource string, u UpdateStrategy) *Store {
	view := *s
	view.updates = u
	view.subresource = subresource
	view.lazyFields = &lazyFields{}
	return &view
}

// Subresource is the subresource a view made by WithUpdates serves, "" for the resource itself.
func (s *Store) Subresource() string { return s.subresource }

// WithoutAdmission returns a view of s whose writes are not admitted: the view a subresource's
// REST handler writes through once it admitted the request itself, or a controller's.
func (s *Store) WithoutAdmission() *Store {
	view := *s
	view.admission = nil
	return &view
}

// Strategy returns the resource's strategy.
func (s *Store) Strategy() Strategy { return s.strategy }

// KeyRoot returns where the store's objects live.
func (s *Store) KeyRoot() string { return s.keyRoot }

// GroupVersionKind is the kind of the store's objects.
func (s *Store) GroupVersionKind() schema.GroupVersionKind { return s.gvk }

func (s *Store) key(namespace, name string) string {
	if s.strategy.NamespaceScoped() {
		return s.keyRoot + namespace + "/" + name
	}
	return s.keyRoot + name
}

func (s *Store) listPrefix(namespace string) string {
	if namespace == "" || !s.strategy.NamespaceScoped() {
		return s.keyRoot
	}
	return s.keyRoot + namespace + "/"
}

func (s *Store) groupResource() schema.GroupResource { return s.strategy.Resource().GroupResource() }

func (s *Store) notFound(name string) error { return apierrors.NewNotFound(s.groupResource(), name) }

func (s *Store) conflict(name, msg string) error {
	return apierrors.NewConflict(s.groupResource(), name, errors.New(msg))
}

// InvalidKind is a Strategy whose 422 answers name another kind than its own: Kubernetes reports
// events.k8s.io Events by their internal kind, without a group (`Event "x" is invalid`).
type InvalidKind interface {
	InvalidKind() schema.GroupKind
}

func (s *Store) invalid(name string, errs field.ErrorList) error {
	if k, ok := s.strategy.(InvalidKind); ok {
		return apierrors.NewInvalid(k.InvalidKind(), name, errs)
	}
	return apierrors.NewInvalid(s.gvk.GroupKind(), name, errs)
}

// validate runs the configured admission chain over a write that passed validation.
// attributes describe a write of obj (over old, nil for a create) to admission.
func (s *Store) attributes(ctx context.Context, op admission.Operation, obj, old runtime.Object) admission.Attributes {
	m := accessor(obj)
	user, _ := authn.UserFrom(ctx)
	return admission.Attributes{
		Operation: op, Kind: s.gvk.GroupKind(), Resource: s.groupResource(), Subresource: s.subresource,
		Namespace: m.GetNamespace(), Name: m.GetName(), Object: obj, OldObject: old, User: user,
	}
}

// confirm runs a GuardedStrategy's judgement of a user's write of obj over old (nil for a create).
func (s *Store) confirm(ctx context.Context, obj, old runtime.Object) error {
	g, ok := s.strategy.(GuardedStrategy)
	if !ok {
		return nil
	}
	user, ok := authn.UserFrom(ctx)
	if !ok || user == nil {
		return nil
	}
	return g.ConfirmWrite(ctx, user, obj, old)
}

// admit runs the mutating admission of a write of obj over old (nil for a create).
func (s *Store) admit(ctx context.Context, op admission.Operation, obj, old runtime.Object) error {
	if s.admission == nil {
		return nil
	}
	return s.admission.Admit(ctx, s.attributes(ctx, op, obj, old))
}

// validate runs the validating admission of a write of obj over old (nil for a create).
func (s *Store) validate(ctx context.Context, op admission.Operation, obj, old runtime.Object) error {
	if s.admission == nil {
		return nil
	}
	return s.admission.Validate(ctx, s.attributes(ctx, op, obj, old))
}

func internal(err error) error { return apierrors.NewInternalError(err) }

func accessor(obj runtime.Object) metav1.Object {
	m, err := meta.Accessor(obj)
	if err != nil {
		panic(fmt.Sprintf("generic: %T has no object metadata", obj)) // a strategy bug, not input
	}
	return m
}

// setTypeMeta writes the resource's kind and version into obj, as every answer carries them.
func (s *Store) setTypeMeta(obj runtime.Object) {
	obj.GetObjectKind().SetGroupVersionKind(s.gvk)
}

// encode writes the stored form: kind and apiVersion set, resourceVersion left out because the
// store's revision is the resourceVersion.
func (s *Store) encode(obj runtime.Object) ([]byte, error) {
	m := accessor(obj)
	rv := m.GetResourceVersion()
	m.SetResourceVersion("")
	s.setTypeMeta(obj)
	data, err := json.Marshal(obj)
	m.SetResourceVersion(rv)
	return data, err
}

// spliceStoredForms is off only in the tests that compare the stored bytes with and without it.
var spliceStoredForms = true

// splicedWrites counts the stored forms spliced, for the tests.
var splicedWrites atomic.Int64

// encodeOver is encode of an update of old, read as from: when from's bytes are old's encoding
// (from.kept), the update's is spliced from them (jsoncopy.SplicedDecoded), the same bytes, and
// the copy the decoded cache keeps of them is made from a deep copy of old (copied: nil if not
// made there). old is read only: no strategy, admission or validation changes the object an
// update replaces.
func (s *Store) encodeOver(obj, old runtime.Object, from stored) (data []byte, copied *decodedCopy, err error) {
	if !from.kept || !spliceStoredForms {
		data, err = s.encode(obj)
		return data, nil, err
	}
	m, om := accessor(obj), accessor(old)
	rv, orv := m.GetResourceVersion(), om.GetResourceVersion()
	m.SetResourceVersion("")
	om.SetResourceVersion("")
	s.setTypeMeta(obj)
	var into runtime.Object
	if keepDecodedCopies {
		into = old.DeepCopyObject()
	}
	data, decoded, same, ok := jsoncopy.SplicedDecoded(obj, old, from.data, into)
	m.SetResourceVersion(rv)
	om.SetResourceVersion(orv)
	if !ok {
		data, err = s.encode(obj)
		return data, nil, err
	}
	splicedWrites.Add(1)
	return data, &decodedCopy{obj: decoded, same: same}, nil
}

func (s *Store) decode(kv storage.KeyValue) (runtime.Object, error) {
	obj := s.strategy.New()
	if err := json.Unmarshal(kv.Value, obj); err != nil {
		return nil, internal(fmt.Errorf("stored object at %s is corrupt: %w", kv.Key, err))
	}
	s.setTypeMeta(obj)
	accessor(obj).SetResourceVersion(strconv.FormatInt(kv.ModRevision, 10))
	return obj, nil
}

// checkNamespace applies the path's namespace to the object, refusing a body naming another.
func (s *Store) checkNamespace(m metav1.Object, namespace string) error {
	if !s.strategy.NamespaceScoped() {
		m.SetNamespace("")
		return nil
	}
	if m.GetNamespace() == "" {
		m.SetNamespace(namespace)
		return nil
	}
	if m.GetNamespace() != namespace {
		return apierrors.NewBadRequest("the namespace of the provided object does not match the namespace sent on the request")
	}
	return nil
}

// Create stores a new object. With dryRun it validates and answers without storing.
func (s *Store) Create(ctx context.Context, namespace string, in runtime.Object, dryRun bool) (runtime.Object, error) {
	obj, _, err := s.create(ctx, namespace, in, dryRun, true)
	return obj, err
}

// CreateJSON is Create also answering the created object's JSON, cut from the bytes stored rather
// than encoded a second time; nil for a dry run, or when the stored form cannot be cut.
func (s *Store) CreateJSON(ctx context.Context, namespace string, in runtime.Object, dryRun bool) (runtime.Object, []byte, error) {
	return s.create(ctx, namespace, in, dryRun, true)
}

// create is CreateJSON; record tells whether the write's manager is recorded in managedFields (an
// apply has recorded itself).
func (s *Store) create(ctx context.Context, namespace string, in runtime.Object, dryRun, record bool) (runtime.Object, []byte, error) {
	m := accessor(in)
	if err := s.checkNamespace(m, namespace); err != nil {
		return nil, nil, err
	}
	if m.GetResourceVersion() != "" {
		return nil, nil, apierrors.NewBadRequest("resourceVersion should not be set on objects to be created")
	}
	if err := s.admit(ctx, admission.Create, in, nil); err != nil {
		return nil, nil, err
	}
	generate := m.GetName() == "" && m.GetGenerateName() != ""
	for attempt := 0; ; attempt++ {
		obj := in.DeepCopyObject()
		om := accessor(obj)
		if generate {
			om.SetName(m.GetGenerateName() + s.nameSuffix())
		}
		s.setTypeMeta(obj)
		om.SetUID(s.newUID())
		om.SetCreationTimestamp(metav1.NewTime(s.clock.Now().Truncate(time.Second)))
		om.SetDeletionTimestamp(nil)
		om.SetDeletionGracePeriodSeconds(nil)
		om.SetGeneration(0)
		if record {
			var err error
			if obj, err = s.recordUpdate(ctx, nil, obj); err != nil {
				return nil, nil, err
			}
			om = accessor(obj)
		}
		s.strategy.PrepareForCreate(obj)
		if rs, ok := s.strategy.(RequesterStrategy); ok {
			user, _ := authn.UserFrom(ctx)
			rs.SetRequester(obj, user)
		}
		if errs := s.strategy.Validate(obj); len(errs) > 0 {
			return nil, nil, s.invalid(om.GetName(), errs)
		}
		if err := s.confirm(ctx, obj, nil); err != nil {
			return nil, nil, err
		}
		if err := s.validate(ctx, admission.Create, obj, nil); err != nil {
			return nil, nil, err
		}
		if dryRun {
			return obj, nil, nil
		}
		data, err := s.encode(obj)
		if err != nil {
			return nil, nil, internal(err)
		}
		rev, err := s.storage.Create(ctx, s.key(om.GetNamespace(), om.GetName()), data, s.ttl)
		if errors.Is(err, storage.ErrKeyExists) {
			if generate && attempt+1 < generateNameAttempts {
				continue
			}
			return nil, nil, apierrors.NewAlreadyExists(s.groupResource(), om.GetName())
		}
		if err != nil {
			return nil, nil, StorageError(err)
		}
		om.SetResourceVersion(strconv.FormatInt(rev, 10))
		out, _ := s.objectJSON(storage.KeyValue{Value: data, ModRevision: rev})
		return obj, out, nil
	}
}

// Get returns the object namespace/name.
func (s *Store) Get(ctx context.Context, namespace, name string) (runtime.Object, error) {
	obj, _, err := s.get(ctx, namespace, name)
	return obj, err
}

// stored is what storage held of an object read for a write: its bytes, which the write compares
// its own with, whether that form is stale (see storage.KeyValue.Stale), and whether they are the
// encoding of the object read (kept: the decoded cache's copy, which encodes as they are).
type stored struct {
	data  []byte
	stale bool
	kept  bool
}

// get is Get, also answering the stored form.
func (s *Store) get(ctx context.Context, namespace, name string) (runtime.Object, stored, error) {
	key := s.key(namespace, name)
	kv, err := s.storage.Get(ctx, key)
	if errors.Is(err, storage.ErrNotFound) {
		return nil, stored{}, s.notFound(name)
	}
	if err != nil {
		return nil, stored{}, StorageError(err)
	}
	if obj, same := s.decoded.take(key, kv); obj != nil {
		s.setTypeMeta(obj)
		accessor(obj).SetResourceVersion(strconv.FormatInt(kv.ModRevision, 10))
		return obj, stored{data: kv.Value, stale: kv.Stale, kept: same}, nil
	}
	obj, err := s.decode(kv)
	return obj, stored{data: kv.Value, stale: kv.Stale}, err
}

// Update replaces namespace/name with in, creating it when absent if the strategy allows. A
// resourceVersion in the object is a precondition; without one the update is unconditional and
// retried over concurrent writes. created reports a create. in is the store's from the call on:
// it may be changed and be the answer, so a caller passes an object it no longer uses (the
// handler's decoded body).
func (s *Store) Update(ctx context.Context, namespace, name string, in runtime.Object, dryRun bool) (out runtime.Object, created bool, err error) {
	m := accessor(in)
	if m.GetName() != name {
		return nil, false, apierrors.NewBadRequest(fmt.Sprintf("the name of the object (%s) does not match the name on the URL (%s)", m.GetName(), name))
	}
	if err := s.checkNamespace(m, namespace); err != nil {
		return nil, false, err
	}
	// A write changes the object it writes, and a retry starts again from in as given, so each
	// attempt writes a copy of in, unless no retry reads in: with a precondition, the one retry
	// (a delete that met a newer revision) reads the object again and answers a conflict, or a
	// not-found when it is gone and the kind is not created by an update. A heartbeat's copy was
	// 1.4% of 10,000 nodes' CPU.
	owned := m.GetResourceVersion() != "" && !s.strategy.AllowCreateOnUpdate()
	for {
		old, from, err := s.get(ctx, namespace, name)
		if apierrors.IsNotFound(err) {
			// A subresource's view never creates. (Not its strategy compared with the
			// resource's: one holding a func, as an authorizer may, panics when compared.)
			if !s.strategy.AllowCreateOnUpdate() || s.subresource != "" {
				return nil, false, err
			}
			obj := in.DeepCopyObject()
			accessor(obj).SetResourceVersion("")
			out, err := s.Create(ctx, namespace, obj, dryRun)
			if apierrors.IsAlreadyExists(err) {
				continue // created concurrently: update it instead
			}
			return out, err == nil, err
		}
		if err != nil {
			return nil, false, err
		}
		next := in
		if !owned {
			next = in.DeepCopyObject()
		}
		out, err := s.replace(ctx, old, from, next, dryRun)
		if errors.Is(err, errRetry) {
			continue
		}
		return out, false, err
	}
}

// errRetry asks the caller to read the object again and redo its change.
var errRetry = errors.New("retry")

// replace writes next over old. A resourceVersion in next must match old's; a storage conflict
// or a vanished object without such a precondition is errRetry. The manager in ctx is recorded in
// next's managedFields; replaceObject without record writes an apply, which recorded itself.
func (s *Store) replace(ctx context.Context, old runtime.Object, from stored, next runtime.Object, dryRun bool) (runtime.Object, error) {
	return s.replaceObject(ctx, old, from, next, dryRun, true)
}

func (s *Store) replaceObject(ctx context.Context, old runtime.Object, from stored, next runtime.Object, dryRun, record bool) (runtime.Object, error) {
	om, nm := accessor(old), accessor(next)
	precondition := nm.GetResourceVersion() != ""
	if precondition && nm.GetResourceVersion() != om.GetResourceVersion() {
		return nil, s.conflict(om.GetName(), OptimisticLockMessage)
	}
	if nm.GetUID() != "" && nm.GetUID() != om.GetUID() {
		return nil, s.conflict(om.GetName(), fmt.Sprintf("Precondition failed: UID in precondition: %v, UID in object meta: %v", nm.GetUID(), om.GetUID()))
	}
	s.setTypeMeta(next)
	nm.SetResourceVersion(om.GetResourceVersion())
	nm.SetUID(om.GetUID())
	nm.SetCreationTimestamp(om.GetCreationTimestamp())
	nm.SetDeletionTimestamp(om.GetDeletionTimestamp())
	nm.SetDeletionGracePeriodSeconds(om.GetDeletionGracePeriodSeconds())
	nm.SetGeneration(om.GetGeneration())
	if record {
		var err error
		if next, err = s.recordUpdate(ctx, old, next); err != nil {
			return nil, err
		}
		nm = accessor(next)
	}
	s.updates.PrepareForUpdate(next, old)
	if errs := s.updates.ValidateUpdate(next, old); len(errs) > 0 {
		return nil, s.invalid(nm.GetName(), errs)
	}
	if err := s.confirm(ctx, next, old); err != nil {
		return nil, err
	}
	if err := s.admit(ctx, admission.Update, next, old); err != nil {
		return nil, err
	}
	if err := s.validate(ctx, admission.Update, next, old); err != nil {
		return nil, err
	}
	data, copied, err := s.encodeOver(next, old, from)
	if err != nil {
		return nil, internal(err)
	}
	// An update that changes nothing is not a write (the resourceVersion stays), unless the
	// stored form is stale: rewriting is how objects move to a new encryption key. Nothing is
	// what storage holds, as kube-apiserver's GuaranteedUpdate compares with the bytes it read
	// rather than encoding the object it decoded from them again.
	if dryRun || (bytes.Equal(data, from.data) && !from.stale) {
		return next, nil
	}
	// The last finalizer gone from an object being deleted without grace deletes it.
	if ts := nm.GetDeletionTimestamp(); ts != nil && !s.finalizing(next) {
		if g := nm.GetDeletionGracePeriodSeconds(); g == nil || *g == 0 {
			return s.remove(ctx, next)
		}
	}
	oldRev, _ := strconv.ParseInt(om.GetResourceVersion(), 10, 64)
	rev, err := s.storage.Update(ctx, s.key(nm.GetNamespace(), nm.GetName()), oldRev, data, s.ttl)
	switch {
	case errors.Is(err, storage.ErrConflict) || errors.Is(err, storage.ErrNotFound):
		if precondition {
			return nil, s.conflict(nm.GetName(), OptimisticLockMessage)
		}
		return nil, errRetry
	case err != nil:
		return nil, StorageError(err)
	}
	if copied != nil {
		s.decoded.keep(s.key(nm.GetNamespace(), nm.GetName()), rev, data, *copied)
	} else {
		s.decoded.put(s.key(nm.GetNamespace(), nm.GetName()), rev, data, next)
	}
	nm.SetResourceVersion(strconv.FormatInt(rev, 10))
	return next, nil
}

// remove deletes obj from storage if it is still at its resourceVersion.
func (s *Store) remove(ctx context.Context, obj runtime.Object) (runtime.Object, error) {
	m := accessor(obj)
	rev, _ := strconv.ParseInt(m.GetResourceVersion(), 10, 64)
	_, _, err := s.storage.Delete(ctx, s.key(m.GetNamespace(), m.GetName()), rev)
	s.decoded.drop(s.key(m.GetNamespace(), m.GetName()))
	switch {
	case errors.Is(err, storage.ErrConflict):
		return nil, errRetry
	case errors.Is(err, storage.ErrNotFound):
		return nil, s.notFound(m.GetName())
	case err != nil:
		return nil, StorageError(err)
	}
	return obj, nil
}

// PatchFunc turns the current object, as JSON with its resourceVersion, into the patched object.
type PatchFunc func(current []byte) (runtime.Object, error)

// Patch applies patch to namespace/name, re-reading and re-applying over concurrent writes unless
// the patch pins a resourceVersion.
func (s *Store) Patch(ctx context.Context, namespace, name string, patch PatchFunc, dryRun bool) (runtime.Object, error) {
	for {
		old, from, err := s.get(ctx, namespace, name)
		if err != nil {
			return nil, err
		}
		current, err := json.Marshal(old)
		if err != nil {
			return nil, internal(err)
		}
		next, err := patch(current)
		if err != nil {
			return nil, err
		}
		om, nm := accessor(old), accessor(next)
		if nm.GetName() != om.GetName() || nm.GetNamespace() != om.GetNamespace() {
			// Identity is the URL's: a patch cannot move an object.
			errs := field.ErrorList{}
			if nm.GetName() != om.GetName() {
				errs = append(errs, field.Invalid(field.NewPath("metadata", "name"), nm.GetName(), "field is immutable"))
			}
			if nm.GetNamespace() != om.GetNamespace() {
				errs = append(errs, field.Invalid(field.NewPath("metadata", "namespace"), nm.GetNamespace(), "field is immutable"))
			}
			return nil, s.invalid(om.GetName(), errs)
		}
		out, err := s.replace(ctx, old, from, next, dryRun)
		if errors.Is(err, errRetry) {
			continue
		}
		return out, err
	}
}

// GuaranteedUpdate applies change to the current object until it is written over no concurrent
// write; change may answer an error (a Status) to give up.
func (s *Store) GuaranteedUpdate(ctx context.Context, namespace, name string, change func(runtime.Object) (runtime.Object, error)) (runtime.Object, error) {
	for {
		old, from, err := s.get(ctx, namespace, name)
		if err != nil {
			return nil, err
		}
		next, err := change(old.DeepCopyObject())
		if err != nil {
			return nil, err
		}
		accessor(next).SetResourceVersion("")
		out, err := s.replace(ctx, old, from, next, false)
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

// DeleteOptions are a delete's parameters.
type DeleteOptions struct {
	Preconditions
	// GracePeriodSeconds is the grace asked for; nil takes the object's default.
	GracePeriodSeconds *int64
	DryRun             bool
}

// Delete removes namespace/name, or starts its graceful deletion. It answers the object as it
// was removed or as it now is, and whether it is gone.
func (s *Store) Delete(ctx context.Context, namespace, name string, o DeleteOptions) (runtime.Object, bool, error) {
	for {
		old, err := s.Get(ctx, namespace, name)
		if err != nil {
			return nil, false, err
		}
		m := accessor(old)
		if o.UID != nil && *o.UID != m.GetUID() {
			return nil, false, s.conflict(name, fmt.Sprintf("Precondition failed: UID in precondition: %v, UID in object meta: %v", *o.UID, m.GetUID()))
		}
		if o.ResourceVersion != nil && *o.ResourceVersion != m.GetResourceVersion() {
			return nil, false, s.conflict(name, fmt.Sprintf("Precondition failed: ResourceVersion in precondition: %v, ResourceVersion in object meta: %v", *o.ResourceVersion, m.GetResourceVersion()))
		}
		next, pending := s.beforeDelete(old, o.GracePeriodSeconds)
		if o.DryRun {
			if pending {
				return next, false, nil
			}
			return old, true, nil
		}
		if pending {
			if next == nil {
				return old, false, nil // already being deleted, no sooner than asked
			}
			out, err := s.write(ctx, old, next)
			if errors.Is(err, errRetry) {
				continue
			}
			return out, false, err
		}
		out, err := s.remove(ctx, old)
		if errors.Is(err, errRetry) {
			continue
		}
		return out, err == nil, err
	}
}

// beforeDelete decides, as Kubernetes' BeforeDelete does, whether a delete waits: on a grace
// period or on finalizers. pending with a nil next means the object is left as it is.
func (s *Store) beforeDelete(old runtime.Object, asked *int64) (next runtime.Object, pending bool) {
	m := accessor(old)
	now := s.clock.Now().Truncate(time.Second)
	var period int64
	if g, ok := s.strategy.(GracefulStrategy); ok {
		period = g.GracePeriod(old, asked)
	}
	current := m.GetDeletionGracePeriodSeconds()
	if m.GetDeletionTimestamp() != nil {
		// Only a shorter grace period changes a deletion under way.
		if current == nil || period >= *current || asked == nil {
			if s.finalizing(old) || (current != nil && *current > 0) {
				return nil, true
			}
			return nil, false
		}
	}
	if period == 0 && !s.finalizing(old) {
		return nil, false
	}
	next = old.DeepCopyObject()
	if f, ok := s.strategy.(FinalizingStrategy); ok {
		f.MarkDeleting(next)
	}
	nm := accessor(next)
	ts := metav1.NewTime(now.Add(time.Duration(period) * time.Second))
	nm.SetDeletionTimestamp(&ts)
	nm.SetDeletionGracePeriodSeconds(&period)
	return next, true
}

// finalizing tells whether obj waits on finalizers, the server's own included.
func (s *Store) finalizing(obj runtime.Object) bool {
	if len(accessor(obj).GetFinalizers()) > 0 {
		return true
	}
	f, ok := s.strategy.(FinalizingStrategy)
	return ok && f.Finalizing(obj)
}

// write stores next over old with no validation: the server's own metadata change.
func (s *Store) write(ctx context.Context, old, next runtime.Object) (runtime.Object, error) {
	data, err := s.encode(next)
	if err != nil {
		return nil, internal(err)
	}
	m := accessor(next)
	oldRev, _ := strconv.ParseInt(accessor(old).GetResourceVersion(), 10, 64)
	rev, err := s.storage.Update(ctx, s.key(m.GetNamespace(), m.GetName()), oldRev, data, s.ttl)
	if errors.Is(err, storage.ErrConflict) || errors.Is(err, storage.ErrNotFound) {
		return nil, errRetry
	}
	if err != nil {
		return nil, StorageError(err)
	}
	m.SetResourceVersion(strconv.FormatInt(rev, 10))
	return next, nil
}
