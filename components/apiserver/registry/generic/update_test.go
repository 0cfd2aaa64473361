package generic_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"orch.io/orch/components/apiserver/registry/core"
	"orch.io/orch/components/apiserver/registry/generic"
	"orch.io/orch/components/apiserver/storage"
)

// interposing writes a label into the stored ConfigMap before the first update or delete it
// passes on, as a concurrent writer would between the store's read and its write.
type interposing struct {
	storage.Interface
	done bool
}

func (s *interposing) interpose(ctx context.Context, key string) error {
	if s.done {
		return nil
	}
	s.done = true
	kv, err := s.Interface.Get(ctx, key)
	if err != nil {
		return err
	}
	var cm corev1.ConfigMap
	if err := json.Unmarshal(kv.Value, &cm); err != nil {
		return err
	}
	cm.Labels = map[string]string{"by": "another"}
	data, err := json.Marshal(&cm)
	if err != nil {
		return err
	}
	_, err = s.Interface.Update(ctx, key, kv.ModRevision, data, 0)
	return err
}

func (s *interposing) Update(ctx context.Context, key string, rev int64, value []byte, ttl time.Duration) (int64, error) {
	if err := s.interpose(ctx, key); err != nil {
		return 0, err
	}
	return s.Interface.Update(ctx, key, rev, value, ttl)
}

func (s *interposing) Delete(ctx context.Context, key string, rev int64) (storage.KeyValue, int64, error) {
	if err := s.interpose(ctx, key); err != nil {
		return storage.KeyValue{}, 0, err
	}
	return s.Interface.Delete(ctx, key, rev)
}

// Update writes the object it is given, not a copy, where no retry reads it again: an update
// over a concurrent write answers as it did with a copy of the object at every attempt. Without
// a precondition the retry writes the object as given (a retry over what the first attempt did
// to it would carry that attempt's resourceVersion and conflict); with one it is a conflict,
// also when it is the delete of an object whose last finalizer the update takes.
func TestUpdateOverAConcurrentWrite(t *testing.T) {
	for _, tc := range []struct {
		name                   string
		precondition, finalize bool
		conflict               bool
	}{
		{name: "unconditional"},
		{name: "unconditional, the last finalizer", finalize: true},
		{name: "precondition", precondition: true, conflict: true},
		{name: "precondition, the last finalizer", precondition: true, finalize: true, conflict: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			clk, mem := newMemory()
			st := &interposing{Interface: mem}
			s := generic.New(generic.Options{Strategy: core.ConfigMapStrategy{}, Storage: st, Clock: clk})
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns"}, Data: map[string]string{"k": "old"}}
			if tc.finalize {
				cm.Finalizers = []string{"example.com/hold"}
			}
			obj, err := s.Create(ctx, "ns", cm, false)
			if err != nil {
				t.Fatal(err)
			}
			if tc.finalize {
				zero := int64(0)
				if obj, _, err = s.Delete(ctx, "ns", "c", generic.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
					t.Fatal(err)
				}
				st.done = false // the interposed write is the update's
			}
			in := obj.(*corev1.ConfigMap).DeepCopy()
			in.Data = map[string]string{"k": "new"}
			in.Finalizers = nil
			if !tc.precondition {
				in.ResourceVersion = ""
			}
			out, _, err := s.Update(ctx, "ns", "c", in, false)
			if tc.conflict {
				if !apierrors.IsConflict(err) {
					t.Fatalf("update = %v, want a conflict", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.finalize {
				if _, err := s.Get(ctx, "ns", "c"); !apierrors.IsNotFound(err) {
					t.Fatalf("after the last finalizer went: %v, want not found", err)
				}
				return
			}
			got, err := s.Get(ctx, "ns", "c")
			if err != nil {
				t.Fatal(err)
			}
			if g := got.(*corev1.ConfigMap); g.Data["k"] != "new" || g.Labels != nil || g.ResourceVersion != out.(*corev1.ConfigMap).ResourceVersion {
				t.Fatalf("stored %+v, answered rv %s", g.ObjectMeta, out.(*corev1.ConfigMap).ResourceVersion)
			}
		})
	}
}

// creatingConfigMaps creates a ConfigMap an update names and does not find; its func makes it a
// strategy that cannot be compared, as an RBAC strategy holding an authorizer func.
type creatingConfigMaps struct {
	core.ConfigMapStrategy
	hook func()
}

func (creatingConfigMaps) AllowCreateOnUpdate() bool { return true }

// An update of an object that is not there creates it when the kind's strategy allows, whatever
// the strategy holds, and not through a subresource's view.
func TestUpdateCreates(t *testing.T) {
	ctx := context.Background()
	clk, mem := newMemory()
	s := generic.New(generic.Options{Strategy: creatingConfigMaps{hook: func() {}}, Storage: mem, Clock: clk})
	in := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns"}, Data: map[string]string{"k": "v"}}
	if _, created, err := s.Update(ctx, "ns", "c", in, false); err != nil || !created {
		t.Fatalf("update of a missing object: created %v, %v", created, err)
	}
	view := s.WithUpdates("status", core.ConfigMapStrategy{})
	in = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "d", Namespace: "ns"}}
	if _, _, err := view.Update(ctx, "ns", "d", in, false); !apierrors.IsNotFound(err) {
		t.Fatalf("update of a missing object through a subresource: %v, want not found", err)
	}
}
