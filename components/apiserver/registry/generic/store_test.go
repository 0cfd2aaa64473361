package generic_test

import (
	"context"
	"encoding/json"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"orch.io/orch/components/apiserver/registry/core"
)

// An update that changes nothing is not a write when storage holds the bytes this store would
// write; when it holds another form of the same object (written by something else, in another
// key order), the update writes this store's form, as kube-apiserver compares with the bytes it
// read.
func TestUpdateChangingNothingComparesWithTheStoredBytes(t *testing.T) {
	ctx := context.Background()
	s, st := newStore(t, core.NamespaceStrategy{})
	created, err := s.Create(ctx, "", &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "web", Labels: map[string]string{"app": "web"}}}, false)
	if err != nil {
		t.Fatal(err)
	}
	key := s.KeyRoot() + "web"
	own, err := st.Get(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	update := func() string {
		t.Helper()
		in := created.DeepCopyObject().(*corev1.Namespace)
		in.ResourceVersion = ""
		out, _, err := s.Update(ctx, "", "web", in, false)
		if err != nil {
			t.Fatal(err)
		}
		return out.(*corev1.Namespace).ResourceVersion
	}
	if rv := update(); rv != created.(*corev1.Namespace).ResourceVersion {
		t.Fatalf("an update changing nothing wrote: resourceVersion %s, was %s", rv, created.(*corev1.Namespace).ResourceVersion)
	}

	// The same object in another key order (a map's, sorted): equal as JSON, not as bytes.
	var fields map[string]any
	if err := json.Unmarshal(own.Value, &fields); err != nil {
		t.Fatal(err)
	}
	foreign, err := json.Marshal(fields)
	if err != nil {
		t.Fatal(err)
	}
	rev, err := st.Update(ctx, key, own.ModRevision, foreign, 0)
	if err != nil {
		t.Fatal(err)
	}
	created, err = s.Get(ctx, "", "web")
	if err != nil {
		t.Fatal(err)
	}
	rv := update()
	now, err := st.Get(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if now.ModRevision == rev || rv == created.(*corev1.Namespace).ResourceVersion || string(now.Value) != string(own.Value) {
		t.Fatalf("over another form: revision %d (was %d), stored %s, want %s", now.ModRevision, rev, now.Value, own.Value)
	}
}
