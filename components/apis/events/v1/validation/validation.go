package validation

import (
	"errors"
	"fmt"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	eventsv1 "orch.io/orch/components/apis/events/v1"
)

// Length limits of SPEC.md's Limits table (the same as Kubernetes'). Lengths are counted in bytes,
// as Kubernetes counts them (len of the Go string), although the messages say "characters".
const (
	ReportingInstanceLengthLimit = 128
	ActionLengthLimit            = 128
	ReasonLengthLimit            = 128
	NoteLengthLimit              = 1024
)

// Namespaces in which an Event may leave regarding.namespace empty (an event about a cluster-scoped
// object). NamespaceSystem is orch's name for Kubernetes' kube-system.
const (
	NamespaceDefault = metav1.NamespaceDefault
	NamespaceSystem  = "orch-system"
)

// Messages shared with Kubernetes.
const (
	msgNeedsUnset  = "needs to be unset"
	msgNsMismatch  = "does not match event.namespace"
	msgAtLeastTwo  = "should be at least 2"
	msgImmutable   = apivalidation.FieldImmutableErrorMsg
	fmtAtMost      = "can have at most %d characters"
	fmtInvalidType = "has invalid value: %v"
)

// Field paths, as the user wrote them in events.orch.io/v1.
var (
	pathMetadata            = field.NewPath("metadata")
	pathEventTime           = field.NewPath("eventTime")
	pathSeries              = field.NewPath("series")
	pathSeriesCount         = pathSeries.Child("count")
	pathSeriesLastObserved  = pathSeries.Child("lastObservedTime")
	pathReportingController = field.NewPath("reportingController")
	pathReportingInstance   = field.NewPath("reportingInstance")
	pathAction              = field.NewPath("action")
	pathReason              = field.NewPath("reason")
	pathRegarding           = field.NewPath("regarding")
	pathRegardingNamespace  = pathRegarding.Child("namespace")
	pathRelated             = field.NewPath("related")
	pathNote                = field.NewPath("note")
	pathType                = field.NewPath("type")
	pathDeprecatedSource    = field.NewPath("deprecatedSource")
	pathDeprecatedFirst     = field.NewPath("deprecatedFirstTimestamp")
	pathDeprecatedLast      = field.NewPath("deprecatedLastTimestamp")
	pathDeprecatedCount     = field.NewPath("deprecatedCount")
)

// ValidateCreate returns every rule a new Event breaks, one cause per broken rule, in Kubernetes'
// order: the content rules (regarding.namespace, reportingController, reportingInstance, action,
// reason, note), metadata, series, eventTime, type, then the deprecated fields that must be unset.
// An empty list means the Event may be stored. The caller has already generated metadata.name from
// generateName and set metadata.namespace from the request path.
func ValidateCreate(e *eventsv1.Event) field.ErrorList {
	if e == nil {
		return field.ErrorList{field.InternalError(nil, errors.New("no event to validate"))}
	}
	var errs field.ErrorList
	errs = append(errs, validateContent(e, nil)...)
	errs = append(errs, apivalidation.ValidateObjectMeta(&e.ObjectMeta, true, apivalidation.NameIsDNSSubdomain, pathMetadata)...)
	errs = append(errs, validateSeries(e.Series)...)
	errs = append(errs, validateTimeAndType(e, nil)...)
	errs = append(errs, validateDeprecatedUnset(e)...)
	return errs
}

// ValidateUpdate returns every rule the update of oldEvent (as stored) to newEvent breaks:
//
//   - The create rules on content (regarding.namespace, reportingController, reportingInstance,
//     action, reason, note, eventTime, type) are ratcheted: each applies only when its field changed.
//     Kubernetes runs legacyValidateEvent on update too, so the same rules apply to a changed value;
//     but a value the store already holds is never re-judged. SPEC.md caps note at 1 kB yet tells
//     clients to be prepared for 64 kB, so a stored Event may carry a longer note (written before the
//     limit, or by another writer of the store). Rejecting every update of such an Event would make
//     its series heartbeat impossible for a field the user is not allowed to change anyway; so an
//     unchanged note of any length passes, and a changed one is reported as immutable and, when too
//     long, as too long. The deprecated-fields-unset rules are create-only, as in Kubernetes.
//   - metadata as Kubernetes validates it on update: name, namespace, uid, creationTimestamp,
//     deletionTimestamp and deletionGracePeriodSeconds immutable, generation not decremented, labels,
//     annotations, owner references and managed fields valid, and resourceVersion set. As Kubernetes'
//     registry does, the caller fills metadata.resourceVersion of an unconditional update from the
//     stored object before calling ValidateUpdate.
//   - series, when it changed, again against the series rules (it may be removed).
//   - every other field immutable, each reported once with its new value.
func ValidateUpdate(newEvent, oldEvent *eventsv1.Event) field.ErrorList {
	if newEvent == nil || oldEvent == nil {
		return field.ErrorList{field.InternalError(nil, errors.New("no event to validate"))}
	}
	var errs field.ErrorList
	errs = append(errs, validateContent(newEvent, oldEvent)...)
	errs = append(errs, apivalidation.ValidateObjectMetaUpdate(&newEvent.ObjectMeta, &oldEvent.ObjectMeta, pathMetadata)...)
	if !apiequality.Semantic.DeepEqual(newEvent.Series, oldEvent.Series) {
		errs = append(errs, validateSeries(newEvent.Series)...)
	}
	errs = append(errs, validateTimeAndType(newEvent, oldEvent)...)
	errs = append(errs, validateImmutable(newEvent, oldEvent)...)
	return errs
}

// validateContent checks the rules of Kubernetes' legacyValidateEvent (the ones it applies on create
// and on update). With old set, a rule is checked only when its field changed.
func validateContent(e, old *eventsv1.Event) field.ErrorList {
	var errs field.ErrorList
	// unchanged tells, on update, that a field holds the value already stored.
	unchanged := func(get func(*eventsv1.Event) string) bool { return old != nil && get(e) == get(old) }

	// regarding.namespace, as Kubernetes' legacyValidateEvent has it: an event with eventTime (every
	// valid one) may be about an object in any namespace, but may leave regarding.namespace empty (a
	// cluster-scoped object) only in default or orch-system; one without eventTime must name its own
	// namespace, or none from default. An event without a namespace is reported at
	// metadata.namespace only; on update the rule follows regarding.namespace (a changed
	// metadata.namespace is reported as immutable, once).
	if !unchanged(func(x *eventsv1.Event) string { return x.Regarding.Namespace }) && e.Namespace != "" {
		rn := e.Regarding.Namespace
		var mismatch bool
		if e.EventTime.IsZero() {
			mismatch = (rn == "" && e.Namespace != NamespaceDefault) || (rn != "" && rn != e.Namespace)
		} else {
			mismatch = rn == "" && e.Namespace != NamespaceDefault && e.Namespace != NamespaceSystem
		}
		if mismatch {
			errs = append(errs, field.Invalid(pathRegardingNamespace, rn, msgNsMismatch))
		}
	}

	// reportingController: a qualified name (as label keys are: an optional DNS-subdomain prefix and a
	// name part); an empty one is reported as Required only.
	if !unchanged(func(x *eventsv1.Event) string { return x.ReportingController }) {
		if e.ReportingController == "" {
			errs = append(errs, field.Required(pathReportingController, ""))
		} else {
			for _, msg := range utilvalidation.IsQualifiedName(e.ReportingController) {
				errs = append(errs, field.Invalid(pathReportingController, e.ReportingController, msg))
			}
		}
	}
	errs = append(errs, requiredAtMost(pathReportingInstance, e.ReportingInstance, ReportingInstanceLengthLimit, true,
		unchanged(func(x *eventsv1.Event) string { return x.ReportingInstance }))...)
	errs = append(errs, requiredAtMost(pathAction, e.Action, ActionLengthLimit, true,
		unchanged(func(x *eventsv1.Event) string { return x.Action }))...)
	errs = append(errs, requiredAtMost(pathReason, e.Reason, ReasonLengthLimit, true,
		unchanged(func(x *eventsv1.Event) string { return x.Reason }))...)
	errs = append(errs, requiredAtMost(pathNote, e.Note, NoteLengthLimit, false,
		unchanged(func(x *eventsv1.Event) string { return x.Note }))...)
	return errs
}

// requiredAtMost reports an empty required value as Required and a value longer than limit bytes the
// way Kubernetes prints it (bad value "" so the long text is not echoed back). unchanged skips both.
func requiredAtMost(p *field.Path, v string, limit int, required, unchanged bool) field.ErrorList {
	switch {
	case unchanged:
		return nil
	case v == "" && required:
		return field.ErrorList{field.Required(p, "")}
	case len(v) > limit:
		return field.ErrorList{field.Invalid(p, "", fmt.Sprintf(fmtAtMost, limit))}
	}
	return nil
}

// validateSeries checks a series when present: count at least 2, lastObservedTime set.
func validateSeries(s *eventsv1.EventSeries) field.ErrorList {
	if s == nil {
		return nil
	}
	var errs field.ErrorList
	if s.Count < 2 {
		errs = append(errs, field.Invalid(pathSeriesCount, "", msgAtLeastTwo))
	}
	if s.LastObservedTime.IsZero() {
		errs = append(errs, field.Required(pathSeriesLastObserved, ""))
	}
	return errs
}

// validateTimeAndType checks eventTime set and type Normal or Warning (Required when empty). With old
// set, only a changed field is checked.
func validateTimeAndType(e, old *eventsv1.Event) field.ErrorList {
	var errs field.ErrorList
	if (old == nil || !e.EventTime.Equal(&old.EventTime)) && e.EventTime.IsZero() {
		errs = append(errs, field.Required(pathEventTime, ""))
	}
	if old == nil || e.Type != old.Type {
		switch e.Type {
		case eventsv1.EventTypeNormal, eventsv1.EventTypeWarning:
		case "":
			errs = append(errs, field.Required(pathType, ""))
		default:
			errs = append(errs, field.Invalid(pathType, "", fmt.Sprintf(fmtInvalidType, e.Type)))
		}
	}
	return errs
}

// validateDeprecatedUnset checks, on create, that no deprecated field is set.
func validateDeprecatedUnset(e *eventsv1.Event) field.ErrorList {
	var errs field.ErrorList
	if !e.DeprecatedFirstTimestamp.IsZero() {
		errs = append(errs, field.Invalid(pathDeprecatedFirst, "", msgNeedsUnset))
	}
	if !e.DeprecatedLastTimestamp.IsZero() {
		errs = append(errs, field.Invalid(pathDeprecatedLast, "", msgNeedsUnset))
	}
	if e.DeprecatedCount != 0 {
		errs = append(errs, field.Invalid(pathDeprecatedCount, "", msgNeedsUnset))
	}
	if e.DeprecatedSource.Component != "" || e.DeprecatedSource.Host != "" {
		errs = append(errs, field.Invalid(pathDeprecatedSource, "", msgNeedsUnset))
	}
	return errs
}

// validateImmutable reports each changed immutable field once, with its new value, in Kubernetes'
// order (metadata's immutable fields are reported by ValidateObjectMetaUpdate).
func validateImmutable(e, old *eventsv1.Event) field.ErrorList {
	checks := []struct {
		newVal, oldVal any
		path           *field.Path
	}{
		{e.Regarding, old.Regarding, pathRegarding},
		{e.Reason, old.Reason, pathReason},
		{e.Note, old.Note, pathNote},
		{e.DeprecatedSource, old.DeprecatedSource, pathDeprecatedSource},
		{e.DeprecatedFirstTimestamp, old.DeprecatedFirstTimestamp, pathDeprecatedFirst},
		{e.DeprecatedLastTimestamp, old.DeprecatedLastTimestamp, pathDeprecatedLast},
		{e.DeprecatedCount, old.DeprecatedCount, pathDeprecatedCount},
		{e.Type, old.Type, pathType},
		{e.EventTime, old.EventTime, pathEventTime},
		{e.Action, old.Action, pathAction},
		{e.Related, old.Related, pathRelated},
		{e.ReportingController, old.ReportingController, pathReportingController},
		{e.ReportingInstance, old.ReportingInstance, pathReportingInstance},
	}
	var errs field.ErrorList
	for _, c := range checks {
		if !apiequality.Semantic.DeepEqual(c.newVal, c.oldVal) {
			errs = append(errs, field.Invalid(c.path, c.newVal, msgImmutable))
		}
	}
	return errs
}
