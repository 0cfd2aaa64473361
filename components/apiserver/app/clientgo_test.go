package app_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	clientfeatures "k8s.io/client-go/features"
	clientfeaturestesting "k8s.io/client-go/features/testing"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"orch.io/orch/components/apiserver/app"
)

// eventsGVR is the resource under test, as a generic client names it.
var eventsGVR = schema.GroupVersionResource{Group: "events.orch.io", Version: "v1", Resource: "events"}

// eventTime is a fixed, valid eventTime (MicroTime's wire format).
const eventTime = "2026-11-22T00:00:00.000000Z"

// newEvent is a valid Event named name in namespace ns about a pod of that namespace.
func newEvent(ns, name string, lbls map[string]string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion":          "events.orch.io/v1",
		"kind":                "Event",
		"eventTime":           eventTime,
		"reportingController": "orch.io/clientgo-test",
		"reportingInstance":   "clientgo-test-1",
		"action":              "Testing",
		"reason":              "Probe",
		"type":                "Normal",
		"note":                "written by client-go",
		"regarding":           map[string]any{"apiVersion": "v1", "kind": "Pod", "namespace": ns, "name": "pod-" + name},
	}}
	u.SetNamespace(ns)
	u.SetName(name)
	if lbls != nil {
		u.SetLabels(lbls)
	}
	return u
}

// rv is an object's resourceVersion as a number; orch's are etcd revisions, so later writes have
// larger ones.
func rv(t *testing.T, resourceVersion string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(resourceVersion, 10, 64)
	if err != nil {
		t.Fatalf("resourceVersion %q is not a decimal revision: %v", resourceVersion, err)
	}
	return n
}

func seriesCount(t *testing.T, u *unstructured.Unstructured) int64 {
	t.Helper()
	n, found, err := unstructured.NestedInt64(u.Object, "series", "count")
	if err != nil || !found {
		t.Fatalf("series.count of %s: found=%v err=%v (object %v)", u.GetName(), found, err, u.Object)
	}
	return n
}

func names(items []unstructured.Unstructured) []string {
	out := make([]string, 0, len(items))
	for _, it := range items {
		out = append(out, it.GetName())
	}
	return out
}

func testContext(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// TestDynamicClient drives every verb of events.orch.io/v1 through client-go's dynamic client
// against a real server: the answers client-go decodes, and the error kinds it recognises.
func TestDynamicClient(t *testing.T) {
	srv := startServer(t)
	client, err := dynamic.NewForConfig(srv.restConfig())
	if err != nil {
		t.Fatal(err)
	}

	t.Run("create, get and a missing object", func(t *testing.T) {
		ctx := testContext(t)
		events := client.Resource(eventsGVR).Namespace("crud")
		var last int64
		uids := map[types.UID]bool{}
		for i := range 3 {
			name := fmt.Sprintf("ev-%d", i)
			got, err := events.Create(ctx, newEvent("crud", name, nil), metav1.CreateOptions{})
			if err != nil {
				t.Fatalf("Create %s: %v", name, err)
			}
			if got.GetName() != name || got.GetNamespace() != "crud" {
				t.Fatalf("Create answered %s/%s, want crud/%s", got.GetNamespace(), got.GetName(), name)
			}
			if got.GetAPIVersion() != "events.orch.io/v1" || got.GetKind() != "Event" {
				t.Fatalf("Create answered apiVersion %q kind %q", got.GetAPIVersion(), got.GetKind())
			}
			if got.GetUID() == "" || uids[got.GetUID()] {
				t.Fatalf("Create %s: uid %q is empty or reused", name, got.GetUID())
			}
			uids[got.GetUID()] = true
			if ts := got.GetCreationTimestamp(); ts.IsZero() {
				t.Fatalf("Create %s: no creationTimestamp", name)
			}
			if r := rv(t, got.GetResourceVersion()); r <= last {
				t.Fatalf("Create %s: resourceVersion %d not after the previous create's %d", name, r, last)
			} else {
				last = r
			}

			read, err := events.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				t.Fatalf("Get %s: %v", name, err)
			}
			if read.GetUID() != got.GetUID() || read.GetResourceVersion() != got.GetResourceVersion() {
				t.Fatalf("Get %s = uid %s rv %s, want what Create answered: uid %s rv %s",
					name, read.GetUID(), read.GetResourceVersion(), got.GetUID(), got.GetResourceVersion())
			}
			if note, _, _ := unstructured.NestedString(read.Object, "note"); note != "written by client-go" {
				t.Fatalf("Get %s: note = %q", name, note)
			}
		}

		_, err := events.Create(ctx, newEvent("crud", "ev-0", nil), metav1.CreateOptions{})
		if !apierrors.IsAlreadyExists(err) {
			t.Fatalf("second Create of ev-0: err = %v, want AlreadyExists", err)
		}

		_, err = events.Get(ctx, "no-such-event", metav1.GetOptions{})
		if !apierrors.IsNotFound(err) {
			t.Fatalf("Get of a missing event: err = %v, want NotFound", err)
		}
		details := err.(apierrors.APIStatus).Status().Details
		if details == nil || details.Name != "no-such-event" || details.Group != "events.orch.io" || details.Kind != "events" {
			t.Fatalf("NotFound details = %+v, want name no-such-event, group events.orch.io, kind events", details)
		}
	})

	t.Run("generateName", func(t *testing.T) {
		ctx := testContext(t)
		ev := newEvent("generate", "", nil)
		ev.SetGenerateName("gen-")
		got, err := client.Resource(eventsGVR).Namespace("generate").Create(ctx, ev, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(got.GetName(), "gen-") || len(got.GetName()) != len("gen-")+5 {
			t.Fatalf("generated name %q, want gen- and five characters", got.GetName())
		}
	})

	t.Run("dry run and create on update", func(t *testing.T) {
		ctx := testContext(t)
		events := client.Resource(eventsGVR).Namespace("dryrun")
		dry, err := events.Create(ctx, newEvent("dryrun", "dry", nil), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil {
			t.Fatalf("dry-run Create: %v", err)
		}
		if dry.GetName() != "dry" || dry.GetUID() == "" {
			t.Fatalf("dry-run Create answered %v, want the object as it would be stored", dry.Object)
		}
		if _, err := events.Get(ctx, "dry", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Fatalf("a dry-run Create stored the event: Get err = %v", err)
		}
		// Events allow create on update, as in Kubernetes.
		created, err := events.Update(ctx, newEvent("dryrun", "upserted", nil), metav1.UpdateOptions{})
		if err != nil {
			t.Fatalf("Update of a missing event: %v, want it created", err)
		}
		read, err := events.Get(ctx, "upserted", metav1.GetOptions{})
		if err != nil || read.GetUID() != created.GetUID() || read.GetResourceVersion() != created.GetResourceVersion() {
			t.Fatalf("Get after create-on-update = %v, %v; want what Update answered", read, err)
		}
	})

	t.Run("invalid create", func(t *testing.T) {
		ctx := testContext(t)
		ev := newEvent("invalid", "bad", nil)
		unstructured.RemoveNestedField(ev.Object, "reportingController")
		ev.Object["type"] = "Bogus"
		_, err := client.Resource(eventsGVR).Namespace("invalid").Create(ctx, ev, metav1.CreateOptions{})
		if !apierrors.IsInvalid(err) {
			t.Fatalf("Create of an invalid event: err = %v, want Invalid", err)
		}
		status := err.(apierrors.APIStatus).Status()
		if status.Code != http.StatusUnprocessableEntity {
			t.Fatalf("code = %d, want 422", status.Code)
		}
		if status.Details == nil || status.Details.Name != "bad" || status.Details.Kind != "Event" {
			t.Fatalf("details = %+v, want name bad, kind Event", status.Details)
		}
		want := map[string]metav1.CauseType{
			"reportingController": metav1.CauseTypeFieldValueRequired,
			"type":                metav1.CauseTypeFieldValueInvalid,
		}
		got := map[string]metav1.CauseType{}
		for _, c := range status.Details.Causes {
			got[c.Field] = c.Type
		}
		for field, typ := range want {
			if got[field] != typ {
				t.Errorf("cause for %s = %q, want %q (causes %+v)", field, got[field], typ, status.Details.Causes)
			}
		}
		if len(status.Details.Causes) != len(want) {
			t.Errorf("causes = %+v, want exactly %d", status.Details.Causes, len(want))
		}
		if _, err := client.Resource(eventsGVR).Namespace("invalid").Get(ctx, "bad", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Fatalf("the invalid event was stored: Get err = %v", err)
		}
	})

	t.Run("list pages with limit and continue", func(t *testing.T) {
		ctx := testContext(t)
		events := client.Resource(eventsGVR).Namespace("paging")
		var want []string
		for i := range 5 {
			name := fmt.Sprintf("page-%d", i)
			want = append(want, name)
			if _, err := events.Create(ctx, newEvent("paging", name, nil), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		// An event elsewhere must not leak into the namespace's list.
		if _, err := client.Resource(eventsGVR).Namespace("paging-other").Create(ctx, newEvent("paging-other", "page-x", nil), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}

		var got []string
		var sizes []int
		var listRV string
		opts := metav1.ListOptions{Limit: 2}
		for page := 0; ; page++ {
			if page > 5 {
				t.Fatalf("paging did not end: got %v", got)
			}
			list, err := events.List(ctx, opts)
			if err != nil {
				t.Fatalf("List page %d: %v", page, err)
			}
			if page == 0 {
				listRV = list.GetResourceVersion()
				if rc := list.GetRemainingItemCount(); rc == nil || *rc != 3 {
					t.Fatalf("first page remainingItemCount = %v, want 3", rc)
				}
			} else if list.GetResourceVersion() != listRV {
				t.Fatalf("page %d resourceVersion %s, want the first page's %s (one snapshot)", page, list.GetResourceVersion(), listRV)
			}
			got = append(got, names(list.Items)...)
			sizes = append(sizes, len(list.Items))
			if list.GetContinue() == "" {
				break
			}
			opts.Continue = list.GetContinue()
		}
		if !slices.Equal(sizes, []int{2, 2, 1}) {
			t.Fatalf("page sizes = %v, want [2 2 1]", sizes)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("paged names = %v, want %v", got, want)
		}

		// A write between pages is not seen by the rest of a paged list: it reads the first page's snapshot.
		first, err := events.List(ctx, metav1.ListOptions{Limit: 3})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := events.Create(ctx, newEvent("paging", "page-5", nil), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		rest, err := events.List(ctx, metav1.ListOptions{Limit: 3, Continue: first.GetContinue()})
		if err != nil {
			t.Fatal(err)
		}
		if n := names(rest.Items); !slices.Equal(n, []string{"page-3", "page-4"}) || rest.GetContinue() != "" {
			t.Fatalf("continued list = %v (continue %q), want [page-3 page-4] from the first page's snapshot", n, rest.GetContinue())
		}
		all, err := events.List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(all.Items) != 6 || rv(t, all.GetResourceVersion()) <= rv(t, listRV) {
			t.Fatalf("fresh list has %d items at rv %s, want 6 after rv %s", len(all.Items), all.GetResourceVersion(), listRV)
		}
	})

	t.Run("update, conflict and patch", func(t *testing.T) {
		ctx := testContext(t)
		events := client.Resource(eventsGVR).Namespace("update")
		created, err := events.Create(ctx, newEvent("update", "beat", nil), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}

		// A series heartbeat, the way an event recorder updates an event.
		next := created.DeepCopy()
		if err := unstructured.SetNestedMap(next.Object, map[string]any{"count": int64(2), "lastObservedTime": "2026-11-22T00:00:05.000000Z"}, "series"); err != nil {
			t.Fatal(err)
		}
		updated, err := events.Update(ctx, next, metav1.UpdateOptions{})
		if err != nil {
			t.Fatalf("Update: %v", err)
		}
		if seriesCount(t, updated) != 2 {
			t.Fatalf("Update: series.count = %d, want 2", seriesCount(t, updated))
		}
		if rv(t, updated.GetResourceVersion()) <= rv(t, created.GetResourceVersion()) {
			t.Fatalf("Update: resourceVersion %s not after %s", updated.GetResourceVersion(), created.GetResourceVersion())
		}
		if ut, ct := updated.GetCreationTimestamp(), created.GetCreationTimestamp(); updated.GetUID() != created.GetUID() || !ut.Equal(&ct) {
			t.Fatalf("Update changed uid or creationTimestamp: %v", updated.Object)
		}

		// Writing over the version read before the update is a conflict and changes nothing.
		stale := created.DeepCopy()
		if err := unstructured.SetNestedMap(stale.Object, map[string]any{"count": int64(9), "lastObservedTime": "2026-11-22T00:00:09.000000Z"}, "series"); err != nil {
			t.Fatal(err)
		}
		_, err = events.Update(ctx, stale, metav1.UpdateOptions{})
		if !apierrors.IsConflict(err) {
			t.Fatalf("Update with stale resourceVersion %s: err = %v, want Conflict", created.GetResourceVersion(), err)
		}
		if !strings.Contains(err.Error(), "the object has been modified") {
			t.Fatalf("conflict message = %q, want Kubernetes' optimistic-lock text", err.Error())
		}
		if read, err := events.Get(ctx, "beat", metav1.GetOptions{}); err != nil || seriesCount(t, read) != 2 || read.GetResourceVersion() != updated.GetResourceVersion() {
			t.Fatalf("after the conflict Get = %v, %v; want the updated object unchanged", read, err)
		}

		// Merge patch.
		merged, err := events.Patch(ctx, "beat", types.MergePatchType,
			[]byte(`{"series":{"count":3,"lastObservedTime":"2026-11-22T00:00:10.000000Z"}}`), metav1.PatchOptions{})
		if err != nil {
			t.Fatalf("merge Patch: %v", err)
		}
		if seriesCount(t, merged) != 3 {
			t.Fatalf("merge Patch: series.count = %d, want 3", seriesCount(t, merged))
		}
		if last, _, _ := unstructured.NestedString(merged.Object, "series", "lastObservedTime"); last != "2026-11-22T00:00:10.000000Z" {
			t.Fatalf("merge Patch: series.lastObservedTime = %q", last)
		}
		if rv(t, merged.GetResourceVersion()) <= rv(t, updated.GetResourceVersion()) {
			t.Fatalf("merge Patch: resourceVersion %s not after %s", merged.GetResourceVersion(), updated.GetResourceVersion())
		}

		// JSON patch, guarded by a test op on the current count.
		jsonPatched, err := events.Patch(ctx, "beat", types.JSONPatchType,
			[]byte(`[{"op":"test","path":"/series/count","value":3},{"op":"replace","path":"/series/count","value":4}]`), metav1.PatchOptions{})
		if err != nil {
			t.Fatalf("JSON Patch: %v", err)
		}
		if seriesCount(t, jsonPatched) != 4 {
			t.Fatalf("JSON Patch: series.count = %d, want 4", seriesCount(t, jsonPatched))
		}
		if rv(t, jsonPatched.GetResourceVersion()) <= rv(t, merged.GetResourceVersion()) {
			t.Fatalf("JSON Patch: resourceVersion %s not after %s", jsonPatched.GetResourceVersion(), merged.GetResourceVersion())
		}
		// A failed test op leaves the object alone.
		if _, err := events.Patch(ctx, "beat", types.JSONPatchType,
			[]byte(`[{"op":"test","path":"/series/count","value":3},{"op":"replace","path":"/series/count","value":5}]`), metav1.PatchOptions{}); !apierrors.IsBadRequest(err) {
			t.Fatalf("JSON Patch with a failing test op: err = %v, want BadRequest", err)
		}
		// A patch changing an immutable field is invalid.
		if _, err := events.Patch(ctx, "beat", types.MergePatchType, []byte(`{"reason":"Changed"}`), metav1.PatchOptions{}); !apierrors.IsInvalid(err) {
			t.Fatalf("merge Patch of reason: err = %v, want Invalid", err)
		}
		if _, err := events.Patch(ctx, "no-such-event", types.MergePatchType, []byte(`{}`), metav1.PatchOptions{}); !apierrors.IsNotFound(err) {
			t.Fatalf("Patch of a missing event: err = %v, want NotFound", err)
		}

		read, err := events.Get(ctx, "beat", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if seriesCount(t, read) != 4 || read.GetResourceVersion() != jsonPatched.GetResourceVersion() {
			t.Fatalf("Get after patches: count %d rv %s, want 4 rv %s", seriesCount(t, read), read.GetResourceVersion(), jsonPatched.GetResourceVersion())
		}
	})

	t.Run("delete and delete collection", func(t *testing.T) {
		ctx := testContext(t)
		events := client.Resource(eventsGVR).Namespace("deletes")
		for i := range 6 {
			tier := "a"
			if i%2 == 1 {
				tier = "b"
			}
			if _, err := events.Create(ctx, newEvent("deletes", fmt.Sprintf("del-%d", i), map[string]string{"tier": tier}), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		// The same label in another namespace: a namespaced delete collection must leave it.
		if _, err := client.Resource(eventsGVR).Namespace("deletes-other").Create(ctx, newEvent("deletes-other", "del-1", map[string]string{"tier": "b"}), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}

		if err := events.Delete(ctx, "del-0", metav1.DeleteOptions{}); err != nil {
			t.Fatalf("Delete: %v", err)
		}
		if _, err := events.Get(ctx, "del-0", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Fatalf("Get after Delete: err = %v, want NotFound", err)
		}
		if err := events.Delete(ctx, "del-0", metav1.DeleteOptions{}); !apierrors.IsNotFound(err) {
			t.Fatalf("second Delete: err = %v, want NotFound", err)
		}
		// A delete whose uid precondition does not hold is a conflict.
		wrongUID := types.UID("00000000-0000-0000-0000-000000000000")
		if err := events.Delete(ctx, "del-2", metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &wrongUID}}); !apierrors.IsConflict(err) {
			t.Fatalf("Delete with a wrong uid precondition: err = %v, want Conflict", err)
		}

		if err := events.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: "tier=b"}); err != nil {
			t.Fatalf("DeleteCollection: %v", err)
		}
		left, err := events.List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if n := names(left.Items); !slices.Equal(n, []string{"del-2", "del-4"}) {
			t.Fatalf("after deleting tier=b: %v, want [del-2 del-4]", n)
		}
		if b, err := events.List(ctx, metav1.ListOptions{LabelSelector: "tier=b"}); err != nil || len(b.Items) != 0 {
			t.Fatalf("tier=b after DeleteCollection: %v, %v", b, err)
		}
		if _, err := client.Resource(eventsGVR).Namespace("deletes-other").Get(ctx, "del-1", metav1.GetOptions{}); err != nil {
			t.Fatalf("DeleteCollection in deletes reached deletes-other: %v", err)
		}
	})

	t.Run("watch", func(t *testing.T) {
		ctx := testContext(t)
		events := client.Resource(eventsGVR).Namespace("watch")
		list, err := events.List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		w, err := events.Watch(ctx, metav1.ListOptions{ResourceVersion: list.GetResourceVersion()})
		if err != nil {
			t.Fatalf("Watch: %v", err)
		}
		t.Cleanup(w.Stop)

		if _, err := events.Create(ctx, newEvent("watch", "w1", nil), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		// A change in another namespace must not reach this watch.
		if _, err := client.Resource(eventsGVR).Namespace("watch-other").Create(ctx, newEvent("watch-other", "w1", nil), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := events.Patch(ctx, "w1", types.MergePatchType, []byte(`{"series":{"count":2,"lastObservedTime":"2026-11-22T00:00:05.000000Z"}}`), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := events.Delete(ctx, "w1", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}

		wantTypes := []watch.EventType{watch.Added, watch.Modified, watch.Deleted}
		last := rv(t, list.GetResourceVersion())
		for i, want := range wantTypes {
			var ev watch.Event
			select {
			case e, ok := <-w.ResultChan():
				if !ok {
					t.Fatalf("watch closed after %d events, want %v", i, wantTypes)
				}
				ev = e
			case <-time.After(20 * time.Second):
				t.Fatalf("no watch event %d (%s) within 20s", i, want)
			}
			if ev.Type != want {
				t.Fatalf("watch event %d is %s (%v), want %s", i, ev.Type, ev.Object, want)
			}
			obj, ok := ev.Object.(*unstructured.Unstructured)
			if !ok {
				t.Fatalf("watch event %d object is %T", i, ev.Object)
			}
			if obj.GetName() != "w1" || obj.GetNamespace() != "watch" || obj.GetKind() != "Event" {
				t.Fatalf("watch event %d is about %s %s/%s, want Event watch/w1", i, obj.GetKind(), obj.GetNamespace(), obj.GetName())
			}
			r := rv(t, obj.GetResourceVersion())
			if r <= last {
				t.Fatalf("watch event %d (%s) has resourceVersion %d, not after %d", i, want, r, last)
			}
			last = r
			if want == watch.Modified && seriesCount(t, obj) != 2 {
				t.Fatalf("MODIFIED carries series.count %d, want 2", seriesCount(t, obj))
			}
		}
		select {
		case ev, ok := <-w.ResultChan():
			if ok {
				t.Fatalf("unexpected watch event %s %v", ev.Type, ev.Object)
			}
		case <-time.After(300 * time.Millisecond):
		}
	})

	t.Run("watch with a label selector", func(t *testing.T) {
		// Kubernetes' rule for a selecting watch: an object that stops matching is DELETED for the
		// watcher, one that starts matching is ADDED; a watcher never sees an object it has not
		// been told of, and is never left holding one that no longer matches.
		ctx := testContext(t)
		events := client.Resource(eventsGVR).Namespace("watch-selector")
		for name, tier := range map[string]string{"in": "a", "out": "b"} {
			if _, err := events.Create(ctx, newEvent("watch-selector", name, map[string]string{"tier": tier}), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		list, err := events.List(ctx, metav1.ListOptions{LabelSelector: "tier=a"})
		if err != nil {
			t.Fatal(err)
		}
		if n := names(list.Items); !slices.Equal(n, []string{"in"}) {
			t.Fatalf("tier=a lists %v, want [in]", n)
		}
		w, err := events.Watch(ctx, metav1.ListOptions{LabelSelector: "tier=a", ResourceVersion: list.GetResourceVersion()})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(w.Stop)

		relabel := func(name, tier string) {
			t.Helper()
			if _, err := events.Patch(ctx, name, types.MergePatchType, []byte(`{"metadata":{"labels":{"tier":"`+tier+`"}}}`), metav1.PatchOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		relabel("in", "b")  // leaves the selection
		relabel("out", "a") // enters it
		if _, err := events.Create(ctx, newEvent("watch-selector", "sentinel", map[string]string{"tier": "a"}), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}

		want := []string{"DELETED in", "ADDED out", "ADDED sentinel"}
		var got []string
		for len(got) < len(want) {
			select {
			case ev, ok := <-w.ResultChan():
				if !ok {
					t.Fatalf("watch closed after %v, want %v", got, want)
				}
				got = append(got, fmt.Sprintf("%s %s", ev.Type, ev.Object.(*unstructured.Unstructured).GetName()))
				if got[len(got)-1] != want[len(got)-1] {
					t.Fatalf("selecting watch sent %v, want %v", got, want)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("selecting watch sent %v within 10s, want %v", got, want)
			}
		}
	})

	t.Run("list at a resourceVersion in the future", func(t *testing.T) {
		ctx := testContext(t)
		events := client.Resource(eventsGVR).Namespace("watch")
		_, err := events.List(ctx, metav1.ListOptions{ResourceVersion: "999999999"})
		if !apierrors.IsTimeout(err) {
			t.Fatalf("List at a future resourceVersion: err = %v, want the Timeout 'Too large resource version'", err)
		}
	})
}

// requestLog records the event requests a client makes, to tell a list from a watch-list.
type requestLog struct {
	mu    sync.Mutex
	lines []string
}

func (l *requestLog) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(r *http.Request) (*http.Response, error) {
		if strings.Contains(r.URL.Path, "/events") {
			l.mu.Lock()
			l.lines = append(l.lines, r.Method+" "+r.URL.Path+"?"+r.URL.RawQuery)
			l.mu.Unlock()
		}
		return rt.RoundTrip(r)
	})
}

func (l *requestLog) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.lines)
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// informerEvents collects what a shared informer's handlers are told.
type informerEvents struct {
	adds, updates, deletes chan string
}

// startInformer runs a shared informer on events in ns until the test ends and waits up to 20s for
// it to sync, answering whether it did.
func startInformer(t *testing.T, ctx context.Context, client dynamic.Interface, ns string, tweak dynamicinformer.TweakListOptionsFunc) (informers.GenericInformer, *informerEvents, bool) {
	t.Helper()
	factory := dynamicinformer.NewFilteredDynamicSharedInformerFactory(client, 0, ns, tweak)
	informer := factory.ForResource(eventsGVR)
	seen := newInformerEvents()
	if _, err := informer.Informer().AddEventHandler(seen.handler(t)); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	factory.Start(stop)
	t.Cleanup(func() {
		close(stop)
		factory.Shutdown()
	})
	syncCtx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	return informer, seen, cache.WaitForCacheSync(syncCtx.Done(), informer.Informer().HasSynced)
}

func newInformerEvents() *informerEvents {
	return &informerEvents{adds: make(chan string, 64), updates: make(chan string, 64), deletes: make(chan string, 64)}
}

func (ie *informerEvents) handler(t *testing.T) cache.ResourceEventHandlerFuncs {
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			ie.adds <- obj.(*unstructured.Unstructured).GetName()
		},
		UpdateFunc: func(oldObj, newObj any) {
			o, n := oldObj.(*unstructured.Unstructured), newObj.(*unstructured.Unstructured)
			if o.GetName() != n.GetName() || o.GetUID() != n.GetUID() {
				t.Errorf("update handler got old %s/%s new %s/%s", o.GetName(), o.GetUID(), n.GetName(), n.GetUID())
			}
			oc, _, _ := unstructured.NestedInt64(o.Object, "series", "count")
			nc, _, _ := unstructured.NestedInt64(n.Object, "series", "count")
			ie.updates <- fmt.Sprintf("%s %d->%d", n.GetName(), oc, nc)
		},
		DeleteFunc: func(obj any) {
			if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = tomb.Obj
			}
			ie.deletes <- obj.(*unstructured.Unstructured).GetName()
		},
	}
}

func expectName(t *testing.T, what string, ch <-chan string, want string) {
	t.Helper()
	select {
	case got := <-ch:
		if got != want {
			t.Fatalf("%s handler got %q, want %q", what, got, want)
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("%s handler not called for %q within 20s", what, want)
	}
}

func expectNames(t *testing.T, what string, ch <-chan string, want []string) {
	t.Helper()
	var got []string
	for range want {
		select {
		case n := <-ch:
			got = append(got, n)
		case <-time.After(20 * time.Second):
			t.Fatalf("%s handler saw %v, want %v", what, got, want)
		}
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("%s handler saw %v, want %v", what, got, want)
	}
}

func expectQuiet(t *testing.T, ie *informerEvents) {
	t.Helper()
	select {
	case n := <-ie.adds:
		t.Fatalf("unexpected add of %s", n)
	case n := <-ie.updates:
		t.Fatalf("unexpected update %s", n)
	case n := <-ie.deletes:
		t.Fatalf("unexpected delete of %s", n)
	case <-time.After(300 * time.Millisecond):
	}
}

// TestSharedInformer runs client-go's dynamic shared informer against the server, once reading
// the initial state with a list and once with a watch-list stream (client-go's WatchListClient
// feature, on by default in this client-go): it must sync, tell its handlers of every add, update
// and delete made through the API, and end with a cache holding exactly the stored objects.
func TestSharedInformer(t *testing.T) {
	srv := startServer(t)
	for _, watchList := range []bool{false, true} {
		t.Run(fmt.Sprintf("WatchListClient=%v", watchList), func(t *testing.T) {
			clientfeaturestesting.SetFeatureDuringTest(t, clientfeatures.WatchListClient, watchList)
			if got := clientfeatures.FeatureGates().Enabled(clientfeatures.WatchListClient); got != watchList {
				t.Fatalf("WatchListClient = %v after setting it to %v", got, watchList)
			}
			ns := fmt.Sprintf("informer-watchlist-%v", watchList)
			ctx := testContext(t)
			plain, err := dynamic.NewForConfig(srv.restConfig())
			if err != nil {
				t.Fatal(err)
			}
			events := plain.Resource(eventsGVR).Namespace(ns)

			// Objects that exist before the informer starts come to it in its initial state.
			for _, name := range []string{"pre-a", "pre-b"} {
				if _, err := events.Create(ctx, newEvent(ns, name, nil), metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
			}

			log := &requestLog{}
			cfg := srv.restConfig()
			cfg.Wrap(log.wrap)
			informerClient, err := dynamic.NewForConfig(cfg)
			if err != nil {
				t.Fatal(err)
			}
			informer, seen, synced := startInformer(t, ctx, informerClient, ns, nil)
			if !synced {
				t.Fatalf("informer did not sync within 20s; requests: %v", log.all())
			}
			expectNames(t, "add", seen.adds, []string{"pre-a", "pre-b"})

			// How the informer read its initial state.
			var lists, watchLists int
			for _, line := range log.all() {
				if !strings.HasPrefix(line, "GET ") {
					continue
				}
				switch {
				case strings.Contains(line, "watch=true") && strings.Contains(line, "sendInitialEvents=true"):
					watchLists++
				case !strings.Contains(line, "watch=true"):
					lists++
				}
			}
			if watchList && (watchLists == 0 || lists != 0) {
				t.Fatalf("with WatchListClient the informer made %d lists and %d watch-lists, want only watch-lists: %v", lists, watchLists, log.all())
			}
			if !watchList && (lists == 0 || watchLists != 0) {
				t.Fatalf("without WatchListClient the informer made %d lists and %d watch-lists, want a list: %v", lists, watchLists, log.all())
			}

			// Add.
			if _, err := events.Create(ctx, newEvent(ns, "live", nil), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			expectName(t, "add", seen.adds, "live")

			// Update (a heartbeat) and a patch.
			live, err := events.Get(ctx, "live", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if err := unstructured.SetNestedMap(live.Object, map[string]any{"count": int64(2), "lastObservedTime": "2026-11-22T00:00:05.000000Z"}, "series"); err != nil {
				t.Fatal(err)
			}
			if _, err := events.Update(ctx, live, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
			expectName(t, "update", seen.updates, "live 0->2")
			if _, err := events.Patch(ctx, "live", types.MergePatchType, []byte(`{"series":{"count":3}}`), metav1.PatchOptions{}); err != nil {
				t.Fatal(err)
			}
			expectName(t, "update", seen.updates, "live 2->3")

			// Delete, of an object the informer got from its initial state and of one it saw added.
			if err := events.Delete(ctx, "pre-a", metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			expectName(t, "delete", seen.deletes, "pre-a")
			if _, err := events.Create(ctx, newEvent(ns, "short", nil), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			expectName(t, "add", seen.adds, "short")
			if err := events.Delete(ctx, "short", metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			expectName(t, "delete", seen.deletes, "short")

			// Changes elsewhere are not this informer's.
			if _, err := plain.Resource(eventsGVR).Namespace(ns+"-other").Create(ctx, newEvent(ns+"-other", "elsewhere", nil), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			expectQuiet(t, seen)

			// The lister ends with exactly what the server stores, at the stored versions.
			stored, err := events.List(ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			want := map[string]string{}
			for _, it := range stored.Items {
				want[it.GetName()] = it.GetResourceVersion()
			}
			if len(want) != 2 || want["pre-b"] == "" || want["live"] == "" {
				t.Fatalf("stored events = %v, want pre-b and live", want)
			}
			cached, err := informer.Lister().ByNamespace(ns).List(labels.Everything())
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]string{}
			for _, obj := range cached {
				u := obj.(*unstructured.Unstructured)
				got[u.GetName()] = u.GetResourceVersion()
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("lister holds %v, server stores %v", got, want)
			}
			if obj, err := informer.Lister().ByNamespace(ns).Get("live"); err != nil || seriesCount(t, obj.(*unstructured.Unstructured)) != 3 {
				t.Fatalf("lister Get live = %v, %v; want series.count 3", obj, err)
			}
			if _, err := informer.Lister().ByNamespace(ns).Get("pre-a"); !apierrors.IsNotFound(err) {
				t.Fatalf("lister Get of the deleted pre-a: err = %v, want NotFound", err)
			}
		})
	}
}

// TestDiscovery reads the server's API with client-go's discovery client, as kubectl does before
// anything else. The server has no legacy /api, which client-go must tolerate.
func TestDiscovery(t *testing.T) {
	srv := startServer(t)
	dc, err := discovery.NewDiscoveryClientForConfig(srv.restConfig())
	if err != nil {
		t.Fatal(err)
	}
	groups, resources, err := dc.ServerGroupsAndResources()
	if err != nil {
		t.Fatalf("ServerGroupsAndResources: %v", err)
	}
	var group *metav1.APIGroup
	for _, g := range groups {
		if g.Name == "events.orch.io" {
			group = g
		}
	}
	if group == nil {
		t.Fatalf("groups %v lack events.orch.io", groups)
	}
	if group.PreferredVersion.GroupVersion != "events.orch.io/v1" || len(group.Versions) != 1 || group.Versions[0].Version != "v1" {
		t.Fatalf("events.orch.io group = %+v, want the single preferred version v1", group)
	}
	var found *metav1.APIResource
	for _, list := range resources {
		if list.GroupVersion != "events.orch.io/v1" {
			continue
		}
		for i := range list.APIResources {
			if list.APIResources[i].Name == "events" {
				found = &list.APIResources[i]
			}
		}
	}
	if found == nil {
		t.Fatalf("resources %v lack events.orch.io/v1 events", resources)
	}
	if !found.Namespaced || found.Kind != "Event" || found.SingularName != "event" || !slices.Contains(found.ShortNames, "ev") {
		t.Fatalf("events resource = %+v, want namespaced kind Event, singular event, short name ev", found)
	}
	verbs := slices.Clone([]string(found.Verbs))
	slices.Sort(verbs)
	if want := []string{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}; !slices.Equal(verbs, want) {
		t.Fatalf("events verbs = %v, want %v", verbs, want)
	}

	// The resource a generic client maps Event to must be the one served.
	preferred, err := dc.ServerPreferredResources()
	if err != nil {
		t.Fatalf("ServerPreferredResources: %v", err)
	}
	gvrs, err := discovery.GroupVersionResources(preferred)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := gvrs[eventsGVR]; !ok {
		t.Fatalf("preferred resources %v lack %v", gvrs, eventsGVR)
	}
	if v, err := dc.ServerVersion(); err != nil || v.GitVersion == "" {
		t.Fatalf("ServerVersion = %v, %v", v, err)
	}

	// The client verifies the server's self-signed certificate rather than skipping verification:
	// one that trusts nothing is refused.
	untrusting, err := discovery.NewDiscoveryClientForConfig(&rest.Config{Host: "https://" + srv.addr})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := untrusting.ServerVersion(); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("a client without the server's certificate got err = %v, want a certificate error", err)
	}
}

// TestInformerWithLabelSelector: an informer that selects by label must follow objects in and out
// of its selection, or its cache keeps objects that no longer match for as long as it runs.
func TestInformerWithLabelSelector(t *testing.T) {
	srv := startServer(t)
	ctx := testContext(t)
	client, err := dynamic.NewForConfig(srv.restConfig())
	if err != nil {
		t.Fatal(err)
	}
	const ns = "informer-selector"
	events := client.Resource(eventsGVR).Namespace(ns)
	for name, tier := range map[string]string{"a1": "a", "b1": "b"} {
		if _, err := events.Create(ctx, newEvent(ns, name, map[string]string{"tier": tier}), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	informer, seen, synced := startInformer(t, ctx, client, ns, func(o *metav1.ListOptions) {
		o.LabelSelector = "tier=a"
	})
	if !synced {
		t.Fatal("informer did not sync within 20s")
	}
	expectName(t, "add", seen.adds, "a1")

	relabel := func(name, tier string) {
		t.Helper()
		if _, err := events.Patch(ctx, name, types.MergePatchType, []byte(`{"metadata":{"labels":{"tier":"`+tier+`"}}}`), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	relabel("b1", "a") // enters the selection
	expectName(t, "add", seen.adds, "b1")
	relabel("a1", "b") // leaves it
	// A later change the informer must see: once it arrives, so must everything before it.
	if _, err := events.Create(ctx, newEvent(ns, "sentinel", map[string]string{"tier": "a"}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	expectName(t, "add", seen.adds, "sentinel")
	select {
	case name := <-seen.deletes:
		if name != "a1" {
			t.Fatalf("delete handler got %q, want a1", name)
		}
	case <-time.After(time.Second):
		t.Errorf("a1 left the selection tier=a but the informer was not told (no DELETED on the watch)")
	}

	cached, err := informer.Lister().ByNamespace(ns).List(labels.Everything())
	if err != nil {
		t.Fatal(err)
	}
	got := names(derefAll(cached))
	slices.Sort(got)
	if want := []string{"b1", "sentinel"}; !slices.Equal(got, want) {
		t.Fatalf("informer selecting tier=a caches %v, want %v", got, want)
	}
}

func derefAll(objs []runtime.Object) []unstructured.Unstructured {
	out := make([]unstructured.Unstructured, 0, len(objs))
	for _, o := range objs {
		out = append(out, *o.(*unstructured.Unstructured))
	}
	return out
}

// TestShutdownEndsWatches: stopping the server ends the watch streams it serves, as kube-apiserver
// does, so clients re-watch at once and the process stops promptly, instead of the shutdown
// waiting out its whole timeout for streams that never end by themselves.
func TestShutdownEndsWatches(t *testing.T) {
	srv := startServer(t)
	ctx := testContext(t)
	client, err := dynamic.NewForConfig(srv.restConfig())
	if err != nil {
		t.Fatal(err)
	}
	w, err := client.Resource(eventsGVR).Namespace("shutdown").Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)

	took, err := srv.stop()
	if err != nil {
		t.Fatalf("app.Run: %v", err)
	}
	if took > 5*time.Second {
		t.Errorf("app.Run took %v to return after its context ended with one watch open, want under 5s", took.Round(time.Millisecond))
	}
	select {
	case ev, ok := <-w.ResultChan():
		if ok && ev.Type != watch.Error {
			t.Fatalf("watch got %s after the server stopped, want the stream to end", ev.Type)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the watch stream is still open 5s after the server stopped")
	}
}

// TestCompactedHistory: with --etcd-compaction-interval compacting etcd's history, a watch or a
// paged list that reaches into compacted history gets Kubernetes' 410 Expired, which client-go
// recognises (and on which its reflector relists), and a paged list's 410 carries a continue token
// to go on inconsistently.
func TestCompactedHistory(t *testing.T) {
	srv := startServer(t, func(o *app.Options) { o.EtcdCompactionInterval = 200 * time.Millisecond })
	ctx := testContext(t)
	client, err := dynamic.NewForConfig(srv.restConfig())
	if err != nil {
		t.Fatal(err)
	}
	const ns = "compaction"
	events := client.Resource(eventsGVR).Namespace(ns)
	for i := range 3 {
		if _, err := events.Create(ctx, newEvent(ns, fmt.Sprintf("c-%d", i), nil), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	first, err := events.List(ctx, metav1.ListOptions{Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	if first.GetContinue() == "" {
		t.Fatal("a one-item page of three events has no continue token")
	}
	oldRV := first.GetResourceVersion()

	// Write until the snapshot the first page read has been compacted away.
	deadline := time.Now().Add(15 * time.Second)
	for count := int64(2); ; count++ {
		if time.Now().After(deadline) {
			t.Fatalf("resourceVersion %s was not compacted within 15s", oldRV)
		}
		patch := fmt.Sprintf(`{"series":{"count":%d,"lastObservedTime":"2026-11-22T00:00:05.000000Z"}}`, count)
		if _, err := events.Patch(ctx, "c-0", types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		_, err := events.List(ctx, metav1.ListOptions{ResourceVersion: oldRV, ResourceVersionMatch: metav1.ResourceVersionMatchExact})
		if apierrors.IsResourceExpired(err) {
			break
		}
		if err != nil {
			t.Fatalf("List at the exact resourceVersion %s: %v, want success until compacted, then Expired", oldRV, err)
		}
		time.Sleep(100 * time.Millisecond)
	}

	// The rest of the paged list: 410 Expired, with a token to continue from a fresh snapshot.
	_, err = events.List(ctx, metav1.ListOptions{Limit: 1, Continue: first.GetContinue()})
	if !apierrors.IsResourceExpired(err) {
		t.Fatalf("continuing a list over compacted history: err = %v, want Expired", err)
	}
	status := err.(apierrors.APIStatus).Status()
	if status.Code != http.StatusGone || status.ListMeta.Continue == "" {
		t.Fatalf("continue over compacted history answered %d with continue %q, want 410 and a fresh token", status.Code, status.ListMeta.Continue)
	}
	rest, err := events.List(ctx, metav1.ListOptions{Limit: 5, Continue: status.ListMeta.Continue})
	if err != nil {
		t.Fatalf("continuing with the token of the 410: %v", err)
	}
	if n := names(rest.Items); !slices.Equal(n, []string{"c-1", "c-2"}) {
		t.Fatalf("inconsistent continue listed %v, want [c-1 c-2]", n)
	}

	// A watch from the compacted version ends with one ERROR event carrying the 410.
	w, err := events.Watch(ctx, metav1.ListOptions{ResourceVersion: oldRV})
	if err != nil {
		t.Fatalf("Watch from a compacted resourceVersion: %v, want a stream with an ERROR event", err)
	}
	t.Cleanup(w.Stop)
	select {
	case ev, ok := <-w.ResultChan():
		if !ok || ev.Type != watch.Error {
			t.Fatalf("watch from a compacted resourceVersion got %v %s, want an ERROR event", ok, ev.Type)
		}
		if err := apierrors.FromObject(ev.Object); !apierrors.IsResourceExpired(err) {
			t.Fatalf("the ERROR event carries %v, want a 410 Expired Status", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no event within 10s on a watch from a compacted resourceVersion")
	}
	select {
	case ev, ok := <-w.ResultChan():
		if ok {
			t.Fatalf("the watch went on after its ERROR event: %s", ev.Type)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the watch stayed open after its ERROR event")
	}
}
