package v1

import (
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A copy must equal its source and share nothing a write through it could reach.
func TestDeepCopySharesNothing(t *testing.T) {
	now := metav1.NewMicroTime(time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC))
	e := &Event{
		ObjectMeta: metav1.ObjectMeta{Name: "e", Labels: map[string]string{"a": "b"}, Finalizers: []string{"f"}},
		EventTime:  now,
		Series:     &EventSeries{Count: 2, LastObservedTime: now},
		Related:    &corev1.ObjectReference{Kind: "Node", Name: "n1"},
		Regarding:  corev1.ObjectReference{Kind: "Pod", Name: "p"},
	}
	list := &EventList{Items: []Event{*e}}
	c := list.DeepCopyObject().(*EventList)
	if !reflect.DeepEqual(c, list) {
		t.Fatalf("copy differs:\n%+v\n%+v", c, list)
	}
	got := &c.Items[0]
	got.Labels["a"] = "changed"
	got.Finalizers[0] = "changed"
	got.Series.Count = 9
	got.Related.Name = "changed"
	if e.Labels["a"] != "b" || list.Items[0].Labels["a"] != "b" || list.Items[0].Finalizers[0] != "f" ||
		list.Items[0].Series.Count != 2 || list.Items[0].Related.Name != "n1" {
		t.Fatalf("the copy shares state with its source: %+v", list.Items[0])
	}
}
