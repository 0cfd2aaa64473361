package v1

import "k8s.io/apimachinery/pkg/runtime"

// DeepCopyInto copies e into out, sharing nothing.
func (e *Event) DeepCopyInto(out *Event) {
	*out = *e
	e.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	e.EventTime.DeepCopyInto(&out.EventTime)
	if e.Series != nil {
		s := *e.Series
		e.Series.LastObservedTime.DeepCopyInto(&s.LastObservedTime)
		out.Series = &s
	}
	if e.Related != nil {
		out.Related = e.Related.DeepCopy()
	}
	e.DeprecatedFirstTimestamp.DeepCopyInto(&out.DeprecatedFirstTimestamp)
	e.DeprecatedLastTimestamp.DeepCopyInto(&out.DeprecatedLastTimestamp)
}

// DeepCopy returns a copy of e sharing nothing with it.
func (e *Event) DeepCopy() *Event {
	if e == nil {
		return nil
	}
	out := &Event{}
	e.DeepCopyInto(out)
	return out
}

// DeepCopyObject makes Event a runtime.Object.
func (e *Event) DeepCopyObject() runtime.Object { return e.DeepCopy() }

// DeepCopyInto copies l into out, sharing nothing.
func (l *EventList) DeepCopyInto(out *EventList) {
	*out = *l
	l.ListMeta.DeepCopyInto(&out.ListMeta)
	if l.Items != nil {
		out.Items = make([]Event, len(l.Items))
		for i := range l.Items {
			l.Items[i].DeepCopyInto(&out.Items[i])
		}
	}
}

// DeepCopy returns a copy of l sharing nothing with it.
func (l *EventList) DeepCopy() *EventList {
	if l == nil {
		return nil
	}
	out := &EventList{}
	l.DeepCopyInto(out)
	return out
}

// DeepCopyObject makes EventList a runtime.Object.
func (l *EventList) DeepCopyObject() runtime.Object { return l.DeepCopy() }
