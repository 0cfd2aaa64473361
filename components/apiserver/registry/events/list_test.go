package events

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"

	eventsv1 "orch.io/orch/components/apis/events/v1"
	"orch.io/orch/components/apiserver/registry/generic"
	"orch.io/orch/components/apiserver/storage"
	"orch.io/orch/components/apiserver/storage/memory"
)

func newStore(t testing.TB) (*generic.Store, storage.Interface) {
	t.Helper()
	clk := clock.NewMock()
	clk.Set(time.Date(2026, 11, 21, 23, 0, 0, 0, time.UTC))
	st := memory.New(clk)
	return generic.New(generic.Options{Strategy: Strategy{}, Storage: st, Clock: clk, TTL: time.Hour}), st
}

func event(name string, labels map[string]string) *eventsv1.Event {
	return &eventsv1.Event{
		ObjectMeta:          metav1.ObjectMeta{Name: name, Labels: labels, Annotations: map[string]string{"note": `quoted "creationTimestamp": text`}},
		EventTime:           metav1.NewMicroTime(time.Date(2026, 11, 21, 23, 3, 57, 523342000, time.UTC)),
		ReportingController: "orch.io/orchlet",
		ReportingInstance:   "node-1",
		Action:              "Started",
		Reason:              "Pulled",
		Type:                eventsv1.EventTypeNormal,
		Regarding:           corev1.ObjectReference{Kind: "Pod", Namespace: "default", Name: "web-0"},
		Related:             &corev1.ObjectReference{Kind: "Node", Name: "n1"},
		Note:                "pulled \u00e9\u4e16 <b>&</b>",
	}
}

// ListJSON splices stored bytes instead of decoding them; whatever the options, it must answer
// exactly the bytes of encoding List's answer. Events are the resource listed by the thousand.
func TestListJSONEqualsEncodedList(t *testing.T) {
	ctx := context.Background()
	s, st := newStore(t)
	for i := 0; i < 5; i++ {
		e := event(fmt.Sprintf("e%d", i), map[string]string{"app": []string{"web", "db"}[i%2]})
		if i == 3 {
			e.Series = &eventsv1.EventSeries{Count: 2, LastObservedTime: e.EventTime}
		}
		if _, err := s.Create(ctx, "default", e, false); err != nil {
			t.Fatal(err)
		}
	}
	// One object written by something else, in another key order: it must take the general way.
	foreign := []byte(`{"metadata":{"creationTimestamp":"2026-11-21T23:00:00Z","name":"f","namespace":"default"},"apiVersion":"events.orch.io/v1","kind":"Event","eventTime":"2026-11-21T23:03:57.523342Z","type":"Normal"}`)
	if _, err := st.Create(ctx, KeyRoot+"default/f", foreign, 0); err != nil {
		t.Fatal(err)
	}
	app := labels.SelectorFromSet(labels.Set{"app": "web"})
	for name, o := range map[string]generic.ListOptions{
		"everything":        {},
		"a page":            {Limit: 2},
		"a label selector":  {Labels: app},
		"a field selector":  {Fields: fields.OneTermEqualSelector("metadata.name", "e3")},
		"selector and page": {Labels: app, Limit: 1},
	} {
		t.Run(name, func(t *testing.T) {
			list, err := s.List(ctx, "default", o)
			if err != nil {
				t.Fatal(err)
			}
			want, err := json.Marshal(list)
			if err != nil {
				t.Fatal(err)
			}
			got, err := s.ListJSON(ctx, "default", o)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("ListJSON:\n%s\nwant (encoded List):\n%s", got, want)
			}
		})
	}
}

func BenchmarkList10k(b *testing.B) {
	ctx := context.Background()
	s, _ := newStore(b)
	for i := 0; i < 10000; i++ {
		if _, err := s.Create(ctx, "default", event(fmt.Sprintf("e%05d", i), nil), false); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("List+Marshal", func(b *testing.B) {
		for b.Loop() {
			list, _ := s.List(ctx, "default", generic.ListOptions{})
			_, _ = json.Marshal(list)
		}
	})
	b.Run("ListJSON", func(b *testing.B) {
		for b.Loop() {
			_, _ = s.ListJSON(ctx, "default", generic.ListOptions{})
		}
	})
}
