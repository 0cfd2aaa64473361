package events

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	eventsv1 "orch.io/orch/components/apis/events/v1"
	"orch.io/orch/components/apiserver/storage"
	"orch.io/orch/components/apiserver/storage/memory"
)

// Every field survives the trip to v1 and back, in Kubernetes' correspondence.
func TestCoreConversionRoundTrip(t *testing.T) {
	at := metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	micro := metav1.NewMicroTime(at.Time)
	e := &eventsv1.Event{
		TypeMeta:   metav1.TypeMeta{Kind: "Event", APIVersion: eventsv1.SchemeGroupVersion.String()},
		ObjectMeta: metav1.ObjectMeta{Name: "web.1", Namespace: "default", UID: "u1", Labels: map[string]string{"a": "b"}},
		EventTime:  micro, Series: &eventsv1.EventSeries{Count: 4, LastObservedTime: micro},
		ReportingController: "orch.io/orchlet", ReportingInstance: "node-a", Action: "Pulling", Reason: "Pulled",
		Regarding: corev1.ObjectReference{Kind: "Pod", Name: "web"}, Related: &corev1.ObjectReference{Kind: "Node", Name: "node-a"},
		Note: "pulled", Type: "Normal", DeprecatedSource: corev1.EventSource{Component: "orchlet", Host: "node-a"},
		DeprecatedFirstTimestamp: at, DeprecatedLastTimestamp: at, DeprecatedCount: 2,
	}
	core := ToCore(e)
	if core.Message != "pulled" || core.InvolvedObject.Name != "web" || core.Source.Host != "node-a" || core.Count != 2 ||
		core.Series.Count != 4 || core.ReportingController != "orch.io/orchlet" || core.APIVersion != "v1" {
		t.Fatalf("ToCore: %+v", core)
	}
	if back := FromCore(core); !reflect.DeepEqual(back, e) {
		t.Fatalf("round trip:\n got %+v\nwant %+v", back, e)
	}
}

// The storage view maps keys and values both ways, in gets, lists, watches and writes.
func TestCoreStorage(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	mem := memory.New(clock.NewMock())
	defer mem.Close()
	view := CoreStorage(mem)
	w, err := view.Watch(ctx, CoreKeyRoot+"default/", 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := view.Create(ctx, CoreKeyRoot+"default/web.1", []byte(`{"apiVersion":"v1","kind":"Event","metadata":{"name":"web.1","namespace":"default"},"message":"hi","count":2}`), 0); err != nil {
		t.Fatal(err)
	}
	kv, err := mem.Get(ctx, KeyRoot+"default/web.1")
	if err != nil || !strings.Contains(string(kv.Value), `"note":"hi"`) || !strings.Contains(string(kv.Value), `"deprecatedCount":2`) {
		t.Fatalf("stored: %s, %v", kv.Value, err)
	}
	got, err := view.Get(ctx, CoreKeyRoot+"default/web.1")
	if err != nil || got.Key != CoreKeyRoot+"default/web.1" || !strings.Contains(string(got.Value), `"message":"hi"`) {
		t.Fatalf("get: %+v, %v", got, err)
	}
	page, err := view.List(ctx, CoreKeyRoot+"default/", storage.ListOptions{Packed: true})
	if err != nil || len(page.Items) != 1 || page.Values != nil || !strings.Contains(string(page.Items[0].Value), `"message":"hi"`) {
		t.Fatalf("list: %+v, %v", page, err)
	}
	select {
	case ev := <-w:
		if ev.Err != nil || ev.KV.Key != CoreKeyRoot+"default/web.1" || !strings.Contains(string(ev.KV.Value), `"message":"hi"`) {
			t.Fatalf("watch: %+v", ev)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no watch event")
	}
}
