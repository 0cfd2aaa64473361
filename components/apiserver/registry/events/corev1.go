package events

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	eventsv1 "orch.io/orch/components/apis/events/v1"
	"orch.io/orch/components/apiserver/storage"
)

// CoreKeyRoot is where the core v1 view finds events: the generic store's key root of core
// events, which CoreStorage maps onto KeyRoot.
const CoreKeyRoot = "/registry/events/"

// CoreStrategy is the core v1 view of the stored events, as Kubernetes serves v1 Events beside
// events.k8s.io/v1 over one storage: the same objects, converted both ways as Kubernetes'
// conversion does, with core Events' field selectors (involvedObject.*, reason, type, source,
// reportingComponent) and legacy validation, so kubectl describe lists what get events shows.
type CoreStrategy struct {
	// TTL is --event-ttl, as for the events the view shares.
	TTL time.Duration
}

func (s CoreStrategy) TimeToLive() time.Duration { return s.TTL }

func (CoreStrategy) Resource() schema.GroupVersionResource {
	return corev1.SchemeGroupVersion.WithResource("events")
}

func (CoreStrategy) Kind() string                             { return "Event" }
func (CoreStrategy) NamespaceScoped() bool                    { return true }
func (CoreStrategy) New() runtime.Object                      { return &corev1.Event{} }
func (CoreStrategy) NewList() runtime.Object                  { return &corev1.EventList{} }
func (CoreStrategy) AllowCreateOnUpdate() bool                { return true }
func (CoreStrategy) PrepareForCreate(runtime.Object)          {}
func (CoreStrategy) PrepareForUpdate(obj, old runtime.Object) {}
func (CoreStrategy) SchemaType() runtime.Object               { return &corev1.Event{} }
func (CoreStrategy) InvalidKind() schema.GroupKind            { return schema.GroupKind{Kind: "Event"} }

// ProtobufTypes are core v1's own Event and EventList.
func (CoreStrategy) ProtobufTypes() (object, list runtime.Object) {
	return &corev1.Event{}, &corev1.EventList{}
}

// Validate is Kubernetes' validation of a v1 Event: the legacy rules only, for the clients that
// write v1 Events without the fields events.k8s.io/v1 requires.
func (CoreStrategy) Validate(obj runtime.Object) field.ErrorList {
	return validateCoreEvent(obj.(*corev1.Event))
}

func (CoreStrategy) ValidateUpdate(obj, old runtime.Object) field.ErrorList {
	return validateCoreEvent(obj.(*corev1.Event))
}

// CoreSelectableFieldLabels are Kubernetes' field selectors of v1 Events.
var CoreSelectableFieldLabels = []string{
	"metadata.name", "metadata.namespace", "involvedObject.kind", "involvedObject.namespace", "involvedObject.name",
	"involvedObject.uid", "involvedObject.apiVersion", "involvedObject.resourceVersion", "involvedObject.fieldPath",
	"reason", "reportingComponent", "source", "type",
}

func (CoreStrategy) SelectableFields(obj runtime.Object) fields.Set {
	e := obj.(*corev1.Event)
	o := &e.InvolvedObject
	return fields.Set{
		"metadata.name": e.Name, "metadata.namespace": e.Namespace,
		"involvedObject.kind": o.Kind, "involvedObject.namespace": o.Namespace, "involvedObject.name": o.Name,
		"involvedObject.uid": string(o.UID), "involvedObject.apiVersion": o.APIVersion,
		"involvedObject.resourceVersion": o.ResourceVersion, "involvedObject.fieldPath": o.FieldPath,
		"reason": e.Reason, "reportingComponent": e.ReportingController, "source": e.Source.Component, "type": e.Type,
	}
}

func (CoreStrategy) Columns() []metav1.TableColumnDefinition { return columns }

// Row is the events' row of the same event.
func (CoreStrategy) Row(obj runtime.Object, now time.Time) []any {
	return Strategy{}.Row(FromCore(obj.(*corev1.Event)), now)
}

// validateCoreEvent is Kubernetes' legacyValidateEvent for v1 requests.
func validateCoreEvent(e *corev1.Event) field.ErrorList {
	var errs field.ErrorList
	if e.Namespace == "" {
		errs = append(errs, field.Required(field.NewPath("metadata", "namespace"), ""))
	}
	if e.Name == "" && e.GenerateName == "" {
		errs = append(errs, field.Required(field.NewPath("metadata", "name"), "name or generateName is required"))
	}
	if e.InvolvedObject.Namespace != "" && e.InvolvedObject.Namespace != e.Namespace {
		errs = append(errs, field.Invalid(field.NewPath("involvedObject", "namespace"), e.InvolvedObject.Namespace, "does not match event.namespace"))
	}
	if len(e.ReportingController) > 0 {
		for _, msg := range validation.IsQualifiedName(e.ReportingController) {
			errs = append(errs, field.Invalid(field.NewPath("reportingComponent"), e.ReportingController, msg))
		}
	}
	if len(e.ReportingInstance) > 128 {
		errs = append(errs, field.Invalid(field.NewPath("reportingInstance"), "", "can have at most 128 characters"))
	}
	if len(e.Action) > 128 {
		errs = append(errs, field.Invalid(field.NewPath("action"), "", "can have at most 128 characters"))
	}
	if len(e.Reason) > 128 {
		errs = append(errs, field.Invalid(field.NewPath("reason"), "", "can have at most 128 characters"))
	}
	if len(e.Message) > 4*1024 {
		errs = append(errs, field.Invalid(field.NewPath("message"), "", "can have at most 4096 characters"))
	}
	return errs
}

// ToCore is Kubernetes' conversion of an events.k8s.io/v1 Event to a v1 Event.
func ToCore(e *eventsv1.Event) *corev1.Event {
	out := &corev1.Event{
		TypeMeta: metav1.TypeMeta{Kind: "Event", APIVersion: "v1"}, ObjectMeta: e.ObjectMeta,
		InvolvedObject: e.Regarding, Related: e.Related, Reason: e.Reason, Message: e.Note, Type: e.Type,
		Action: e.Action, EventTime: e.EventTime, ReportingController: e.ReportingController, ReportingInstance: e.ReportingInstance,
		Source: e.DeprecatedSource, FirstTimestamp: e.DeprecatedFirstTimestamp, LastTimestamp: e.DeprecatedLastTimestamp, Count: e.DeprecatedCount,
	}
	if e.Series != nil {
		out.Series = &corev1.EventSeries{Count: e.Series.Count, LastObservedTime: e.Series.LastObservedTime}
	}
	return out
}

// FromCore is Kubernetes' conversion of a v1 Event to an events.k8s.io/v1 Event.
func FromCore(e *corev1.Event) *eventsv1.Event {
	out := &eventsv1.Event{
		TypeMeta: metav1.TypeMeta{Kind: "Event", APIVersion: eventsv1.SchemeGroupVersion.String()}, ObjectMeta: e.ObjectMeta,
		Regarding: e.InvolvedObject, Related: e.Related, Reason: e.Reason, Note: e.Message, Type: e.Type,
		Action: e.Action, EventTime: e.EventTime, ReportingController: e.ReportingController, ReportingInstance: e.ReportingInstance,
		DeprecatedSource: e.Source, DeprecatedFirstTimestamp: e.FirstTimestamp, DeprecatedLastTimestamp: e.LastTimestamp, DeprecatedCount: e.Count,
	}
	if e.Series != nil {
		out.Series = &eventsv1.EventSeries{Count: e.Series.Count, LastObservedTime: e.Series.LastObservedTime}
	}
	return out
}

// CoreStorage is the stored events seen as v1 Events: keys under CoreKeyRoot map to KeyRoot,
// values are converted on the way in and out, revisions are the events' own, so the two views
// share one history and one watch cache.
func CoreStorage(events storage.Interface) storage.Interface { return coreStorage{events} }

type coreStorage struct{ events storage.Interface }

func toEventsKey(key string) string {
	return KeyRoot + strings.TrimPrefix(key, CoreKeyRoot)
}

func toCoreKey(key string) string {
	return CoreKeyRoot + strings.TrimPrefix(key, KeyRoot)
}

// toCoreValue converts a stored event to a v1 Event's JSON.
func toCoreValue(key string, value []byte) ([]byte, error) {
	if value == nil {
		return nil, nil
	}
	var e eventsv1.Event
	if err := json.Unmarshal(value, &e); err != nil {
		return nil, fmt.Errorf("stored event at %s is corrupt: %w", key, err)
	}
	return json.Marshal(ToCore(&e))
}

func toEventsValue(value []byte) ([]byte, error) {
	var e corev1.Event
	if err := json.Unmarshal(value, &e); err != nil {
		return nil, err
	}
	return json.Marshal(FromCore(&e))
}

func (s coreStorage) coreKV(kv storage.KeyValue) (storage.KeyValue, error) {
	v, err := toCoreValue(kv.Key, kv.Value)
	kv.Key, kv.Value = toCoreKey(kv.Key), v
	return kv, err
}

func (s coreStorage) Create(ctx context.Context, key string, value []byte, ttl time.Duration) (int64, error) {
	v, err := toEventsValue(value)
	if err != nil {
		return 0, err
	}
	return s.events.Create(ctx, toEventsKey(key), v, ttl)
}

func (s coreStorage) Get(ctx context.Context, key string) (storage.KeyValue, error) {
	kv, err := s.events.Get(ctx, toEventsKey(key))
	if err != nil {
		return kv, err
	}
	return s.coreKV(kv)
}

func (s coreStorage) Update(ctx context.Context, key string, expectedRevision int64, value []byte, ttl time.Duration) (int64, error) {
	v, err := toEventsValue(value)
	if err != nil {
		return 0, err
	}
	return s.events.Update(ctx, toEventsKey(key), expectedRevision, v, ttl)
}

func (s coreStorage) Delete(ctx context.Context, key string, expectedRevision int64) (storage.KeyValue, int64, error) {
	kv, rev, err := s.events.Delete(ctx, toEventsKey(key), expectedRevision)
	if err != nil {
		return kv, rev, err
	}
	kv, err = s.coreKV(kv)
	return kv, rev, err
}

// List reads the page unpacked whatever was asked: each value is converted.
func (s coreStorage) List(ctx context.Context, prefix string, opts storage.ListOptions) (storage.ListResult, error) {
	if opts.StartKey != "" {
		opts.StartKey = toEventsKey(opts.StartKey)
	}
	opts.Packed = false
	page, err := s.events.List(ctx, toEventsKey(prefix), opts)
	if err != nil {
		return page, err
	}
	for i, kv := range page.Items {
		if page.Items[i], err = s.coreKV(kv); err != nil {
			return storage.ListResult{}, err
		}
	}
	return page, nil
}

func (s coreStorage) Watch(ctx context.Context, prefix string, fromRevision int64) (<-chan storage.WatchEvent, error) {
	in, err := s.events.Watch(ctx, toEventsKey(prefix), fromRevision)
	if err != nil {
		return nil, err
	}
	out := make(chan storage.WatchEvent)
	go func() {
		defer close(out)
		for ev := range in {
			if ev.Err == nil {
				var err error
				if ev.KV, err = s.coreKV(ev.KV); err == nil {
					ev.PrevValue, err = toCoreValue(ev.KV.Key, ev.PrevValue)
				}
				if err != nil {
					ev = storage.WatchEvent{Err: err}
				}
			}
			select {
			case out <- ev:
			case <-ctx.Done():
				return
			}
			if ev.Err != nil {
				return
			}
		}
	}()
	return out, nil
}

func (s coreStorage) Revision(ctx context.Context) (int64, error) { return s.events.Revision(ctx) }

func (s coreStorage) Compact(ctx context.Context, revision int64) error {
	return s.events.Compact(ctx, revision)
}

// Close leaves the events' storage open: its own store closes it.
func (s coreStorage) Close() error { return nil }
