package generic_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sync/atomic"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"

	eventsv1 "orch.io/orch/components/apis/events/v1"
	"orch.io/orch/components/apiserver/registry/core"
	"orch.io/orch/components/apiserver/registry/events"
	"orch.io/orch/components/apiserver/registry/generic"
	"orch.io/orch/components/apiserver/storage"
	"orch.io/orch/components/apiserver/storage/cacher"
	"orch.io/orch/components/apiserver/storage/memory"
)

func event(i int) runtime.Object {
	e := &eventsv1.Event{
		ObjectMeta: metav1.ObjectMeta{
			Name: fmt.Sprintf("e%05d", i), Labels: map[string]string{"app": []string{"web", "db"}[i%2]},
			Annotations: map[string]string{"note": `quoted "creationTimestamp": and "generation": text`},
		},
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
	if i == 3 {
		e.Series = &eventsv1.EventSeries{Count: 2, LastObservedTime: e.EventTime}
	}
	return e
}

func pod(i int) runtime.Object {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p%d", i), Labels: map[string]string{"app": []string{"web", "db"}[i%2]}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
	}
}

func namespace(i int) runtime.Object {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("ns%d", i), Labels: map[string]string{"app": []string{"web", "db"}[i%2]}}}
}

func newStore(t testing.TB, s generic.Strategy) (*generic.Store, *memory.Store) {
	clk, st := newMemory()
	return generic.New(generic.Options{Strategy: s, Storage: st, Clock: clk}), st
}

func newMemory() (*clock.Mock, *memory.Store) {
	clk := clock.NewMock()
	clk.Set(time.Date(2026, 11, 25, 11, 0, 0, 0, time.UTC))
	return clk, memory.New(clk)
}

// packedLists counts the LISTs a store answered with packed values.
type packedLists struct {
	storage.Interface
	n atomic.Int64
}

func (p *packedLists) List(ctx context.Context, prefix string, o storage.ListOptions) (storage.ListResult, error) {
	res, err := p.Interface.List(ctx, prefix, o)
	if res.Values != nil {
		p.n.Add(1)
	}
	return res, err
}

// newCachedStore is newStore with a watch cache between the store and its storage, as the server
// builds it, counting the LISTs the cache answered packed.
func newCachedStore(t testing.TB, s generic.Strategy) (*generic.Store, *memory.Store, *packedLists) {
	clk, st := newMemory()
	cached, err := cacher.New(st, generic.KeyRoot(s.Resource().GroupResource()), cacher.Options{Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cached.Close() })
	counted := &packedLists{Interface: cached}
	return generic.New(generic.Options{Strategy: s, Storage: counted, Clock: clk}), st, counted
}

// waitPacked lists until the watch cache answers packed: it does once it has caught up with the
// store, which answers until then.
func waitPacked(t testing.TB, s *generic.Store, ns string, packed *packedLists) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); packed.n.Load() == 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the watch cache never answered a LIST packed")
		}
		if _, err := listJSON(context.Background(), s, ns, generic.ListOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

// listJSON is the whole JSON of the list PrepareListJSON reads.
func listJSON(ctx context.Context, s *generic.Store, ns string, o generic.ListOptions) ([]byte, error) {
	l, err := s.PrepareListJSON(ctx, ns, o)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	_, err = l.WriteTo(&buf)
	return buf.Bytes(), err
}

// A JSONList splices stored bytes instead of decoding them; for every resource and whatever the
// options, it must answer exactly the bytes of encoding List's answer, from a store's values and
// from a watch cache's packed ones alike. Pods carry metadata.generation, which comes before
// creationTimestamp: the resourceVersion goes before it.
func TestListJSONEqualsEncodedList(t *testing.T) {
	for _, cached := range []bool{false, true} {
		t.Run(map[bool]string{false: "store", true: "watch cache"}[cached], func(t *testing.T) {
			testListJSONEqualsEncodedList(t, cached)
		})
	}
}

func testListJSONEqualsEncodedList(t *testing.T, cached bool) {
	ctx := context.Background()
	for _, tc := range []struct {
		strategy generic.Strategy
		object   func(int) runtime.Object
		// foreign is an object written by something else, in another key order: it must take
		// the general way.
		foreign string
	}{
		{events.Strategy{TTL: time.Hour}, event, `{"metadata":{"creationTimestamp":"2026-11-21T23:00:00Z","name":"f","namespace":"default"},"apiVersion":"events.orch.io/v1","kind":"Event","eventTime":"2026-11-21T23:03:57.523342Z","type":"Normal"}`},
		{core.PodStrategy{}, pod, `{"metadata":{"generation":2,"name":"f","namespace":"default","creationTimestamp":null},"apiVersion":"v1","kind":"Pod","spec":{"containers":null}}`},
		{core.NamespaceStrategy{}, namespace, ""},
	} {
		var (
			s      *generic.Store
			st     *memory.Store
			packed *packedLists
		)
		if cached {
			s, st, packed = newCachedStore(t, tc.strategy)
		} else {
			s, st = newStore(t, tc.strategy)
		}
		ns := ""
		if tc.strategy.NamespaceScoped() {
			ns = "default"
		}
		for i := 0; i < 5; i++ {
			if _, err := s.Create(ctx, ns, tc.object(i), false); err != nil {
				t.Fatal(err)
			}
		}
		if tc.foreign != "" {
			if _, err := st.Create(ctx, s.KeyRoot()+"default/f", []byte(tc.foreign), 0); err != nil {
				t.Fatal(err)
			}
		}
		if cached {
			waitPacked(t, s, ns, packed)
		}
		for name, o := range map[string]generic.ListOptions{
			"everything":        {},
			"a page":            {Limit: 2},
			"a label selector":  {Labels: labels.SelectorFromSet(labels.Set{"app": "web"})},
			"a field selector":  {Fields: fields.OneTermEqualSelector("metadata.name", "e3")},
			"selector and page": {Labels: labels.SelectorFromSet(labels.Set{"app": "web"}), Limit: 1},
		} {
			t.Run(tc.strategy.Kind()+"/"+name, func(t *testing.T) {
				list, err := s.List(ctx, ns, o)
				if err != nil {
					t.Fatal(err)
				}
				want, err := json.Marshal(list)
				if err != nil {
					t.Fatal(err)
				}
				var before int64
				if cached {
					before = packed.n.Load()
				}
				got, err := listJSON(ctx, s, ns, o)
				if err != nil {
					t.Fatal(err)
				}
				if cached && packed.n.Load() == before {
					t.Fatal("the list was not read packed")
				}
				if !bytes.Equal(got, want) {
					t.Fatalf("JSONList:\n%s\nwant (encoded List):\n%s", got, want)
				}
				// A server sends the Content-Length before the list: it must be exact.
				l, err := s.PrepareListJSON(ctx, ns, o)
				if err != nil {
					t.Fatal(err)
				}
				if l.Len() != len(want) {
					t.Fatalf("Len %d, want %d", l.Len(), len(want))
				}
			})
		}
	}
}

func BenchmarkListEvents10k(b *testing.B) {
	ctx := context.Background()
	s, _ := newStore(b, events.Strategy{TTL: time.Hour})
	for i := 0; i < 10000; i++ {
		if _, err := s.Create(ctx, "default", event(i), false); err != nil {
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
			_, _ = listJSON(ctx, s, "default", generic.ListOptions{})
		}
	})
	// Written as a server writes it, from the store and from the watch cache, whose values stay
	// packed until each is written: B/op shows whether the list is held unpacked whole.
	cs, _, packed := newCachedStore(b, events.Strategy{TTL: time.Hour})
	for i := 0; i < 10000; i++ {
		if _, err := cs.Create(ctx, "default", event(i), false); err != nil {
			b.Fatal(err)
		}
	}
	waitPacked(b, cs, "default", packed)
	for name, st := range map[string]*generic.Store{"store": s, "watch cache": cs} {
		b.Run("ListJSON written/"+name, func(b *testing.B) {
			for b.Loop() {
				l, err := st.PrepareListJSON(ctx, "default", generic.ListOptions{})
				if err != nil {
					b.Fatal(err)
				}
				if _, err := l.WriteTo(io.Discard); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkCreateEvent is one event's create through the store, with and without a field manager
// recording its managedFields (what every request's create pays, as in Kubernetes).
func BenchmarkCreateEvent(b *testing.B) {
	for _, tc := range []struct {
		name string
		ctx  context.Context
	}{
		{"no-manager", context.Background()},
		{"manager", generic.WithManager(context.Background(), "orchlet")},
	} {
		b.Run(tc.name, func(b *testing.B) {
			s, _ := newStore(b, events.Strategy{TTL: time.Hour})
			i := 0
			for b.Loop() {
				i++
				if _, err := s.Create(tc.ctx, "default", event(i), false); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// writeCounter records what a list is written to, and in how many writes.
type writeCounter struct {
	bytes.Buffer
	writes int
}

func (w *writeCounter) Write(p []byte) (int, error) {
	w.writes++
	return w.Buffer.Write(p)
}

// A list larger than one chunk goes to its writer in several writes, none larger than needed,
// which together are the encoded list.
func TestJSONListWrittenInPieces(t *testing.T) {
	ctx := context.Background()
	s, _ := newStore(t, events.Strategy{TTL: time.Hour})
	for i := 0; i < 300; i++ {
		if _, err := s.Create(ctx, "default", event(i), false); err != nil {
			t.Fatal(err)
		}
	}
	list, err := s.List(ctx, "default", generic.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want, err := json.Marshal(list)
	if err != nil {
		t.Fatal(err)
	}
	l, err := s.PrepareListJSON(ctx, "default", generic.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var w writeCounter
	n, err := l.WriteTo(&w)
	if err != nil || n != int64(len(want)) || !bytes.Equal(w.Bytes(), want) {
		t.Fatalf("WriteTo: %d bytes, %v; equal to the encoded list: %v", n, err, bytes.Equal(w.Bytes(), want))
	}
	if w.writes < len(want)/(40<<10) || w.writes > len(want)/(32<<10)+1 {
		t.Fatalf("%d bytes in %d writes, want pieces of 32-40 KiB", len(want), w.writes)
	}
}
