package generic_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strconv"
	"testing"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"

	"orch.io/orch/components/apiserver/registry/core"
	"orch.io/orch/components/apiserver/registry/events"
	"orch.io/orch/components/apiserver/registry/generic"
	"orch.io/orch/components/apiserver/storage/memory"
)

// A JSON watch cuts each change's object from the stored bytes; it must carry exactly what encoding
// the decoded object gives, for adds, updates, deletes and a value written in another layout (which
// is decoded). With a selector, objects are decoded to be matched and JSON is not used.
func TestWatchJSONEqualsEncodedObjects(t *testing.T) {
	for _, tc := range []struct {
		strategy generic.Strategy
		object   func(int) runtime.Object
		foreign  string
	}{
		{events.Strategy{}, event, `{"metadata":{"creationTimestamp":"2026-11-21T23:00:00Z","name":"f","namespace":"default"},"apiVersion":"events.orch.io/v1","kind":"Event","eventTime":"2026-11-21T23:03:57.523342Z","type":"Normal"}`},
		{core.PodStrategy{}, pod, `{"metadata":{"generation":2,"name":"f","namespace":"default","creationTimestamp":null},"apiVersion":"v1","kind":"Pod","spec":{"containers":null}}`},
	} {
		t.Run(tc.strategy.Kind(), func(t *testing.T) {
			ctx, s, st, from := newStoreFromNow(t, tc.strategy)
			raw, err := s.Watch(ctx, "default", generic.WatchOptions{ListOptions: from, JSON: true})
			if err != nil {
				t.Fatal(err)
			}
			decoded, err := s.Watch(ctx, "default", generic.WatchOptions{ListOptions: from})
			if err != nil {
				t.Fatal(err)
			}
			selected := from
			selected.Labels = labels.SelectorFromSet(labels.Set{"changed": "yes"})
			filtered, err := s.Watch(ctx, "default", generic.WatchOptions{ListOptions: selected, JSON: true})
			if err != nil {
				t.Fatal(err)
			}
			created, err := s.Create(ctx, "default", tc.object(0), false)
			if err != nil {
				t.Fatal(err)
			}
			m := created.(interface{ SetLabels(map[string]string) })
			m.SetLabels(map[string]string{"app": "web", "changed": "yes"})
			if _, _, err := s.Update(ctx, "default", nameOf(created), created, false); err != nil {
				t.Fatal(err)
			}
			if _, _, err := s.Delete(ctx, "default", nameOf(created), generic.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			if _, err := st.Create(ctx, s.KeyRoot()+"default/f", []byte(tc.foreign), 0); err != nil {
				t.Fatal(err)
			}
			for i, wantType := range []string{"ADDED", "MODIFIED", "DELETED", "ADDED"} {
				r, d := <-raw, <-decoded
				want, err := json.Marshal(d.Object)
				if err != nil {
					t.Fatal(err)
				}
				got := r.JSON
				if i < 3 && (r.Object != nil || got == nil) {
					t.Fatalf("event %d: JSON watch decoded the object (JSON %q)", i, got)
				}
				if got == nil {
					got, _ = json.Marshal(r.Object)
				}
				if string(r.Type) != wantType || string(d.Type) != wantType || !bytes.Equal(got, want) {
					t.Fatalf("event %d: %s %s\n%s\nwant %s\n%s", i, r.Type, d.Type, got, wantType, want)
				}
			}
			// The selector lets the update (into the selection) through as ADDED, decoded.
			f := <-filtered
			if f.Type != "ADDED" || f.Object == nil || f.JSON != nil {
				t.Fatalf("selected watch: %s object %v JSON %q", f.Type, f.Object, f.JSON)
			}
		})
	}
}

func nameOf(obj runtime.Object) string {
	return obj.(interface{ GetName() string }).GetName()
}

// CreateJSON answers the created object's JSON cut from its stored bytes: exactly what encoding
// the object it answers gives; a dry run stores nothing and has no stored bytes to cut.
func TestCreateJSONEqualsEncodedObject(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		strategy generic.Strategy
		object   func(int) runtime.Object
	}{{events.Strategy{}, event}, {core.PodStrategy{}, pod}} {
		s, _ := newStore(t, tc.strategy)
		obj, data, err := s.CreateJSON(generic.WithManager(ctx, "orchload"), "default", tc.object(1), false)
		if err != nil {
			t.Fatal(err)
		}
		want, err := json.Marshal(obj)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(data, want) {
			t.Fatalf("%s: CreateJSON\n%s\nwant\n%s", tc.strategy.Kind(), data, want)
		}
		if _, data, err := s.CreateJSON(ctx, "default", tc.object(2), true); err != nil || data != nil {
			t.Fatalf("%s: dry run answered JSON %q, %v", tc.strategy.Kind(), data, err)
		}
	}
}

// Watchers sending the same change share its JSON rather than each cutting a copy: at 10,000
// watchers a copy each is 16 MB of garbage per event.
func TestWatchersShareAChangesJSON(t *testing.T) {
	ctx, s, _, from := newStoreFromNow(t, events.Strategy{})
	var watches []<-chan generic.WatchEvent
	for range 3 {
		w, err := s.Watch(ctx, "default", generic.WatchOptions{ListOptions: from, JSON: true})
		if err != nil {
			t.Fatal(err)
		}
		watches = append(watches, w)
	}
	if _, err := s.Create(ctx, "default", event(0), false); err != nil {
		t.Fatal(err)
	}
	first := (<-watches[0]).JSON
	for i, w := range watches[1:] {
		if got := (<-w).JSON; len(got) == 0 || &got[0] != &first[0] {
			t.Fatalf("watcher %d has its own copy of the change's JSON", i+1)
		}
	}
}

// newStoreFromNow is newStore with a context that ends with the test and list options reading from
// the store's current revision, where a watch of only what follows starts.
func newStoreFromNow(t *testing.T, strategy generic.Strategy) (context.Context, *generic.Store, *memory.Store, generic.ListOptions) {
	t.Helper()
	ctx := t.Context()
	s, st := newStore(t, strategy)
	rev, err := st.Revision(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return ctx, s, st, generic.ListOptions{ResourceVersion: strconv.FormatInt(rev, 10)}
}
