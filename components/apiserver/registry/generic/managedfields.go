package generic

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
	smdschema "sigs.k8s.io/structured-merge-diff/v6/schema"
	"sigs.k8s.io/structured-merge-diff/v6/typed"
	"sigs.k8s.io/structured-merge-diff/v6/value"
)

// SchemaType is a Strategy whose objects follow the schema of a Kubernetes type other than their
// own Go type: events.orch.io Events are events.k8s.io/v1 Events, field for field.
type SchemaType interface {
	SchemaType() runtime.Object
}

// Subresource is an UpdateStrategy of a subresource: managedFields entries of its writes name it.
type Subresource interface {
	Subresource() string
}

// ResetFields is a strategy whose writes leave fields alone (a resource's status, a status
// subresource's spec), named by dotted paths: an apply does not take ownership of them.
type ResetFields interface {
	ResetFields() []string
}

type managerKey struct{}

// WithManager returns ctx naming the field manager of the writes made under it, as the request's
// fieldManager or its User-Agent names it. Writes under a context without one (the server's own
// controllers) keep the object's managedFields as they were.
func WithManager(ctx context.Context, manager string) context.Context {
	return context.WithValue(ctx, managerKey{}, manager)
}

func managerFrom(ctx context.Context) (string, bool) {
	m, ok := ctx.Value(managerKey{}).(string)
	return m, ok
}

// fieldManager records managedFields and merges server-side applies with Kubernetes' own library
// (apimachinery's managedfields over structured-merge-diff, with the schemas of the Kubernetes
// types orch's kinds share, cut from client-go's: typeschema.go).
type fieldManager struct {
	store *Store
	fm    *managedfields.FieldManager
	tc    *liveTyping
	// subresource names the entries of this view's writes; root is a value typed as the kind,
	// whose schema the field sets of ownedUpdate are reconciled with (nil if the probe failed).
	subresource string
	root        *typed.TypedValue
	checked     checkedSets
}

var (
	typeConvertersMu sync.Mutex
	typeConverters   = map[schema.GroupVersionKind]managedfields.TypeConverter{}
)

// typeConverter types the objects of gvk with the schema of example's Go type.
func typeConverter(gvk schema.GroupVersionKind, example runtime.Object) (managedfields.TypeConverter, error) {
	typeConvertersMu.Lock()
	defer typeConvertersMu.Unlock()
	if tc, ok := typeConverters[gvk]; ok {
		return tc, nil
	}
	scheme := runtime.NewScheme()
	scheme.AddKnownTypeWithName(gvk, example)
	if _, err := scheme.ToOpenAPIDefinitionName(gvk); err != nil {
		return nil, err
	}
	parser, err := typeSchema()
	if err != nil {
		return nil, fmt.Errorf("parsing the type schema: %w", err)
	}
	tc := managedfields.NewSchemeTypeConverter(scheme, parser)
	// A kind whose schema the converter lacks would only show on its first write.
	probe := example.DeepCopyObject()
	probe.GetObjectKind().SetGroupVersionKind(gvk)
	if _, err := tc.ObjectToTyped(probe); err != nil {
		return nil, fmt.Errorf("typing %v: %w", gvk, err)
	}
	typeConverters[gvk] = tc
	return tc, nil
}

func (s *Store) newFieldManager() (*fieldManager, error) {
	example := s.strategy.New()
	if st, ok := s.strategy.(SchemaType); ok {
		example = st.SchemaType()
	}
	tc, err := typeConverter(s.gvk, example)
	if err != nil {
		return nil, err
	}
	subresource := ""
	if sub, ok := s.updates.(Subresource); ok {
		subresource = sub.Subresource()
	}
	var reset map[fieldpath.APIVersion]fieldpath.Filter
	if r, ok := s.updates.(ResetFields); ok {
		set := fieldpath.NewSet()
		for _, f := range r.ResetFields() {
			parts := strings.Split(f, ".")
			elems := make([]any, len(parts))
			for i, p := range parts {
				elems[i] = p
			}
			set.Insert(fieldpath.MakePathOrDie(elems...))
		}
		reset = map[fieldpath.APIVersion]fieldpath.Filter{fieldpath.APIVersion(s.gvk.GroupVersion().String()): fieldpath.NewExcludeSetFilter(set)}
	}
	conv := objectConverter{s}
	lt := &liveTyping{TypeConverter: tc}
	probe := s.strategy.New()
	s.setTypeMeta(probe)
	tv, err := tc.ObjectToTyped(probe)
	if err == nil {
		lt.tree = pruneTreeOf(probe, tv)
		lt.unvalidated = unvalidatedTypingOf(s.gvk, probe, tv)
	}
	fm, err := managedfields.NewDefaultFieldManager(lt, conv, conv, conv, s.gvk, s.gvk.GroupVersion(), subresource, reset)
	if err != nil {
		return nil, err
	}
	return &fieldManager{store: s, fm: fm, tc: lt, subresource: subresource, root: tv}, nil
}

// liveTyping types the live object of an update without its managedFields. The library types
// the live object whole but the new one without them (it removes them first), so the comparison
// of the two finds metadata.managedFields removed, after walking every entry's fieldsV1 (as large
// as the fields they name: a node's status manager names all of its status) in the validation
// and again in the comparison, and parsing each entry's JSON twice. What it finds there changes
// nothing when no manager's field set names metadata.managedFields (the library strips it from
// every set it records): the sets are changed only by the comparison's paths they contain. So
// for an update whose managedFields name no such field and hold only JSON objects (which the
// untyped schema of fieldsV1 accepts whole), the live object is typed without them: the same
// managedFields for 15% less CPU a node status post and a quarter fewer allocations
// (BenchmarkNodeStatusPost, reports/speed.md). Anything else is typed as the library types it.
//
// It also leaves out of both objects of such an update the fields equal in them (pruneTree).
type liveTyping struct {
	managedfields.TypeConverter
	// updates holds the live (and, when pruned, the new) objects of the updates under way that
	// are typed as something else: each names its update's typing.
	updates sync.Map
	tree    *pruneTree   // the kind's fields that may be left out; nil if none
	typed   atomic.Int64 // how many live objects were typed without managedFields, for the tests
	pruned  atomic.Int64 // how many updates left a field out, for the tests
	// unvalidated types an update's objects without the validation no value of the kind can
	// fail; nil for a kind some value of which may fail it.
	unvalidated *unvalidatedTyping
}

// unvalidatedTypings counts the objects every store's updates typed without validation, for the
// tests.
var unvalidatedTypings atomic.Int64

// unvalidatedTyping is the type a kind's objects are typed as, when the kind's Go type is one no
// value of which the typing can fail (safe, the test the pruning of equal fields uses: every Go
// field is in the schema, every item of a keyed list has a key or its default). The library
// types both objects of an update with a validation walk, then compares them in a second walk:
// for such a kind the first can find nothing, and it was 6% of the 1,000-node run's CPU
// (reports/speed.md). The typed value is the same either way (typed.AsTyped is
// AsTypedUnvalidated and the walk); where the walk could fail, it is kept.
type unvalidatedTyping struct {
	goType  reflect.Type
	gvk     schema.GroupVersionKind
	schema  *smdschema.Schema
	typeRef smdschema.TypeRef
}

func unvalidatedTypingOf(gvk schema.GroupVersionKind, probe runtime.Object, tv *typed.TypedValue) *unvalidatedTyping {
	t := reflect.TypeOf(probe)
	if t.Kind() != reflect.Pointer || t.Elem().Kind() != reflect.Struct || !safe(t.Elem(), tv.Schema(), tv.TypeRef(), map[typeAs]bool{}) {
		return nil
	}
	return &unvalidatedTyping{goType: t, gvk: gvk, schema: tv.Schema(), typeRef: tv.TypeRef()}
}

// skipValidationOfSafeKinds is off only in the tests that compare the managedFields written with
// and without it.
var skipValidationOfSafeKinds = true

// typedWithoutValidation types obj, one of an update's objects, without the validation walk
// when its kind's values cannot fail it.
func (t *liveTyping) typedWithoutValidation(obj runtime.Object) (*typed.TypedValue, bool) {
	u := t.unvalidated
	if u == nil || !skipValidationOfSafeKinds || reflect.TypeOf(obj) != u.goType || obj.GetObjectKind().GroupVersionKind() != u.gvk {
		return nil, false
	}
	v, err := value.NewValueReflect(obj)
	if err != nil {
		return nil, false
	}
	unvalidatedTypings.Add(1)
	//lint:ignore SA1019 the walk is still one over every field (6% of the 1,000-node run's CPU), and for these kinds it can find nothing
	return typed.AsTypedUnvalidated(v, u.schema, u.typeRef), true
}

// typeLiveWithoutManagedFields and pruneEqualFields are off only in the tests that compare the
// managedFields written with and without them.
var (
	typeLiveWithoutManagedFields = true
	pruneEqualFields             = true
)

// typing is what the two objects of one update are typed as, made at the first typing of either:
// the library types the new object first, once it has removed its managedFields.
type typing struct {
	live, next     runtime.Object
	prune          bool
	once           sync.Once
	liveAs, nextAs runtime.Object
}

// watch registers the update of live to next: live typed without managedFields, and, if prune,
// both without the fields equal in them. The returned func ends it.
func (t *liveTyping) watch(live, next runtime.Object, prune bool) func() {
	u := &typing{live: live, next: next, prune: prune}
	t.updates.Store(live, u)
	if prune {
		t.updates.Store(next, u)
	}
	return func() {
		t.updates.Delete(live)
		if prune {
			t.updates.Delete(next)
		}
	}
}

func (t *liveTyping) ObjectToTyped(obj runtime.Object, opts ...typed.ValidationOptions) (*typed.TypedValue, error) {
	if v, ok := t.updates.Load(obj); ok {
		u := v.(*typing)
		u.once.Do(func() { t.make(u) })
		if obj == u.live {
			obj = u.liveAs
			t.typed.Add(1)
		} else {
			obj = u.nextAs
		}
		if tv, ok := t.typedWithoutValidation(obj); ok {
			return tv, nil
		}
	}
	return t.TypeConverter.ObjectToTyped(obj, opts...)
}

func (t *liveTyping) make(u *typing) {
	u.liveAs, u.nextAs = withoutManagedFields(u.live), u.next
	if !u.prune {
		return
	}
	u.nextAs = withoutManagedFields(u.next) // as the library has made it
	if t.tree.prune(reflect.ValueOf(u.liveAs).Elem(), reflect.ValueOf(u.nextAs).Elem()) {
		t.pruned.Add(1)
	}
}

// withoutManagedFields is a shallow copy of obj, a pointer to a typed object, with no
// managedFields: the library reads, never writes, what it types.
func withoutManagedFields(obj runtime.Object) runtime.Object {
	v := reflect.ValueOf(obj)
	cp := reflect.New(v.Elem().Type())
	cp.Elem().Set(v.Elem())
	out := cp.Interface().(runtime.Object)
	accessor(out).SetManagedFields(nil)
	return out
}

// namesManagedFields reports whether a field set of entries may name metadata.managedFields.
func namesManagedFields(entries []metav1.ManagedFieldsEntry) bool {
	for _, e := range entries {
		if bytes.Contains(e.FieldsV1.GetRawBytes(), []byte("managedFields")) {
			return true
		}
	}
	return false
}

// typedAsObjects reports whether every field set of entries is typed as a JSON object, one that
// fieldsV1's untyped schema takes whole. The live objects of updates are decoded from their
// stored JSON (Store.get), whose decoder checked every fieldsV1 to be valid JSON before it kept
// its bytes: what is left to see is that each is an object (json.Valid again was 3% of a node
// status post's CPU).
func typedAsObjects(entries []metav1.ManagedFieldsEntry) bool {
	for _, e := range entries {
		if raw := e.FieldsV1.GetRawBytes(); len(raw) > 0 && raw[0] != '{' {
			return false
		}
	}
	return true
}

// typesLiveWithoutManagedFields reports whether an update of live to next may type live without
// its managedFields (liveTyping). next's are never typed: the library removes them first, but
// they are the field sets it starts from when a client sends them.
func typesLiveWithoutManagedFields(live, next runtime.Object) bool {
	v := reflect.ValueOf(live)
	if _, ok := live.(*unstructured.Unstructured); ok || v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return false
	}
	entries := accessor(live).GetManagedFields()
	return typedAsObjects(entries) && !namesManagedFields(entries) && !namesManagedFields(accessor(next).GetManagedFields())
}

// lazyFields is a store view's field manager, made on first use: typing the schemas costs.
type lazyFields struct {
	once    sync.Once
	manager *fieldManager
	err     error
}

func (s *Store) fields() (*fieldManager, error) {
	s.lazyFields.once.Do(func() { s.lazyFields.manager, s.lazyFields.err = s.newFieldManager() })
	return s.lazyFields.manager, s.lazyFields.err
}

// objectConverter is the one-version scheme orch's kinds have: objects are already in their
// served version, and an applied object comes back from structured-merge-diff as unstructured.
type objectConverter struct{ s *Store }

func (c objectConverter) ConvertToVersion(in runtime.Object, _ runtime.GroupVersioner) (runtime.Object, error) {
	u, ok := in.(*unstructured.Unstructured)
	if !ok {
		return in, nil
	}
	out := c.s.strategy.New()
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.UnstructuredContent(), out); err != nil {
		return nil, err
	}
	c.s.setTypeMeta(out)
	return out, nil
}

func (c objectConverter) Convert(in, out, _ any) error {
	return fmt.Errorf("converting %T to %T: orch serves one version", in, out)
}

func (c objectConverter) ConvertFieldLabel(gvk schema.GroupVersionKind, label, value string) (string, string, error) {
	return "", "", fmt.Errorf("field label %q of %v is not converted", label, gvk)
}

func (c objectConverter) Default(runtime.Object) {}

func (c objectConverter) New(schema.GroupVersionKind) (runtime.Object, error) {
	obj := c.s.strategy.New()
	c.s.setTypeMeta(obj)
	return obj, nil
}

// recordUpdate sets next's managedFields for a write over live (nil for a create) by the manager
// in ctx; a write with none keeps live's.
func (s *Store) recordUpdate(ctx context.Context, live, next runtime.Object) (runtime.Object, error) {
	nm := accessor(next)
	manager, ok := managerFrom(ctx)
	if !ok {
		if live == nil {
			nm.SetManagedFields(nil)
		} else {
			nm.SetManagedFields(accessor(live).GetManagedFields())
		}
		return next, nil
	}
	f, err := s.fields()
	if err != nil {
		return nil, internal(err)
	}
	if live == nil {
		if nm.GetManagedFields() == nil {
			return s.recordCreate(f, next, manager)
		}
		live = s.strategy.New()
	}
	s.setTypeMeta(live)
	s.setTypeMeta(next)
	if skipOwnedUpdates {
		if entries, ok := f.ownedUpdate(live, next, manager); ok {
			ownedUpdates.Add(1)
			nm.SetManagedFields(entries)
			return next, nil
		}
	}
	if typeLiveWithoutManagedFields && typesLiveWithoutManagedFields(live, next) {
		prune := pruneEqualFields && f.tc.tree != nil && reflect.TypeOf(live) == reflect.TypeOf(next)
		defer f.tc.watch(live, next, prune)()
	}
	given := timesOf(live, next) // the library removes next's managedFields
	out := f.fm.UpdateNoErrors(live, next, manager)
	s.dateWrites(out, given)
	return out, nil
}

// apply merges patch into live (an empty object for a create) as manager's apply.
func (s *Store) apply(live, patch runtime.Object, manager string, force bool) (runtime.Object, error) {
	f, err := s.fields()
	if err != nil {
		return nil, internal(err)
	}
	s.setTypeMeta(live)
	given := timesOf(live, patch)
	out, err := f.fm.Apply(live, patch, manager, force)
	if err != nil {
		if _, ok := err.(apierrors.APIStatus); ok {
			return nil, err
		}
		return nil, apierrors.NewBadRequest(err.Error())
	}
	s.dateWrites(out, given)
	return out, nil
}

// timesOf is the times of the managedFields entries of objs, as the pointers they hold.
func timesOf(objs ...runtime.Object) []*metav1.Time {
	var times []*metav1.Time
	for _, o := range objs {
		for _, e := range accessor(o).GetManagedFields() {
			if e.Time != nil {
				times = append(times, e.Time)
			}
		}
	}
	return times
}

// dateWrites dates on the store's clock the managedFields entries of out that the library dated
// with the wall clock, which a simulation does not run on, and sorts them again as the library
// does (by time among others). Those are the entries whose time is none of given, the times of
// the entries the library was handed: it keeps every entry's *metav1.Time but for the ones it
// dates (a write's entry, when its write took a field or applied: the manager's, "unknown" for an
// update without a manager name, the "before-first-apply" an apply over unmanaged fields makes),
// and the entry capManagers merges the oldest Update entries into takes one of theirs. (Which
// entries it merges it decides with the writer's at the wall clock's time: the newest, as on the
// store's clock unless that runs ahead of the wall clock.)
func (s *Store) dateWrites(out runtime.Object, given []*metav1.Time) {
	entries := accessor(out).GetManagedFields()
	dated := false
	for i := range entries {
		if t := entries[i].Time; t == nil || slices.Contains(given, t) {
			continue
		}
		now := metav1.NewTime(s.clock.Now().Truncate(time.Second))
		entries[i].Time = &now
		dated = true
	}
	if !dated {
		return
	}
	sort.Slice(entries, func(i, j int) bool { return entryBefore(entries[i], entries[j]) })
	accessor(out).SetManagedFields(entries)
}

// Apply merges patch, an applied configuration, into namespace/name as manager's server-side
// apply, creating the object when it is absent (not through a subresource). A resourceVersion in
// the patch is a precondition; without one, concurrent writes are merged over. created reports a
// create.
func (s *Store) Apply(ctx context.Context, namespace, name string, patch *unstructured.Unstructured, manager string, force, dryRun bool) (out runtime.Object, created bool, err error) {
	if patch.GetName() != name {
		return nil, false, apierrors.NewBadRequest(fmt.Sprintf("the name of the object (%s) does not match the name on the URL (%s)", patch.GetName(), name))
	}
	if s.strategy.NamespaceScoped() && patch.GetNamespace() != "" && patch.GetNamespace() != namespace {
		return nil, false, apierrors.NewBadRequest("the namespace of the provided object does not match the namespace sent on the request")
	}
	pinned := patch.GetResourceVersion() != ""
	for {
		old, from, err := s.get(ctx, namespace, name)
		if apierrors.IsNotFound(err) {
			if s.updates != UpdateStrategy(s.strategy) {
				return nil, false, err
			}
			live := s.strategy.New()
			accessor(live).SetName(name)
			if s.strategy.NamespaceScoped() {
				accessor(live).SetNamespace(namespace)
			}
			obj, err := s.apply(live, patch, manager, force)
			if err != nil {
				return nil, false, err
			}
			out, _, err := s.create(ctx, namespace, obj, dryRun, false)
			if apierrors.IsAlreadyExists(err) {
				continue // created concurrently: apply over it instead
			}
			return out, err == nil, err
		}
		if err != nil {
			return nil, false, err
		}
		obj, err := s.apply(old.DeepCopyObject(), patch, manager, force)
		if err != nil {
			return nil, false, err
		}
		if !pinned {
			accessor(obj).SetResourceVersion("")
		}
		out, err := s.replaceObject(ctx, old, from, obj, dryRun, false)
		if errors.Is(err, errRetry) {
			continue
		}
		return out, false, err
	}
}
