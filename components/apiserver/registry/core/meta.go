package core

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/duration"
)

// GroupVersion is the core group's: no group name, version v1.
var GroupVersion = schema.GroupVersion{Version: "v1"}

// age is kubectl's AGE column.
func age(now time.Time, t metav1.Time) string {
	if t.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(now.Sub(t.Time))
}

var nameColumn = metav1.TableColumnDefinition{Name: "Name", Type: "string", Format: "name", Description: "Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated."}

var ageColumn = metav1.TableColumnDefinition{Name: "Age", Type: "string", Description: "CreationTimestamp is a timestamp representing the server time when this object was created."}

// resetMetaForStatus keeps a status write from changing anything but status, as Kubernetes'
// ResetObjectMetaForStatus does.
func resetMetaForStatus(obj, old *metav1.ObjectMeta) {
	obj.Labels = old.Labels
	obj.Annotations = old.Annotations
	obj.Finalizers = old.Finalizers
	obj.OwnerReferences = old.OwnerReferences
}
