package generic_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	certificatesv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"orch.io/orch/components/apiserver/registry/certificates"
	"orch.io/orch/components/apiserver/registry/core"
	"orch.io/orch/components/apiserver/registry/generic"
	"orch.io/orch/components/apiserver/storage/memory"
)

// statusOf is the status subresource's strategy of the served kinds that have one.
func statusOf(s generic.Strategy) generic.UpdateStrategy {
	switch s := s.(type) {
	case core.NodeStrategy:
		return core.NodeStatusStrategy{NodeStrategy: s}
	case core.PodStrategy:
		return core.PodStatusStrategy{PodStrategy: s}
	case core.NamespaceStrategy:
		return core.NamespaceStatusStrategy{NamespaceStrategy: s}
	case certificates.Strategy:
		return certificates.StatusStrategy(s)
	}
	return nil
}

// writes runs a table of writes of one served kind through a store and returns what each
// answered (the object's JSON or the error) and, at the end, the stored object and how many live
// objects were typed without their managedFields and how many updates left out a field equal in
// both objects.
func writes(t *testing.T, k servedKind) (answers []string, typedWithout, pruned int64) {
	t.Helper()
	clk := clock.NewUnyieldingMock()
	clk.Set(time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC))
	store := generic.New(generic.Options{Strategy: k.strategy, Storage: memory.New(clk), Clock: clk,
		NewUID: func() types.UID { return "uid-1" }, NameSuffix: func() string { return "x" }})
	status := store.WithUpdates("status", statusOf(k.strategy))
	m := accessorOf(k.object)
	ns, name := m.GetNamespace(), m.GetName()
	as := func(manager string) context.Context {
		return generic.WithManager(context.Background(), manager)
	}
	record := func(step string, obj runtime.Object, err error) {
		if err != nil {
			answers = append(answers, step+": error: "+err.Error())
			return
		}
		data, err := json.Marshal(obj)
		if err != nil {
			t.Fatal(err)
		}
		answers = append(answers, step+": "+string(data))
	}
	// update reads the object, changes it and writes it back through s.
	update := func(step string, s *generic.Store, ctx context.Context, change func(runtime.Object)) {
		clk.Add(10 * time.Second)
		obj, err := s.Get(ctx, ns, name)
		if err != nil {
			t.Fatal(err)
		}
		change(obj)
		out, _, err := s.Update(ctx, ns, name, obj, false)
		record(step, out, err)
	}
	label := func(v string) func(runtime.Object) {
		return func(o runtime.Object) {
			m := accessorOf(o)
			l := m.GetLabels()
			if l == nil {
				l = map[string]string{}
			}
			l["step"] = v
			m.SetLabels(l)
		}
	}
	example := k.object.DeepCopyObject()
	if csr, ok := example.(*certificatesv1.CertificateSigningRequest); ok {
		csr.Spec.Request = csrPEM()
	}
	obj := k.strategy.New() // events.orch.io Events are events.k8s.io's in another Go type
	convert(t, example, obj)
	out, err := store.Create(as("creator"), ns, obj, false)
	record("create", out, err)
	if err != nil {
		t.Fatal(answers)
	}
	// change is k.update on the object in the Go type k.update takes.
	change := func(o runtime.Object) {
		e := k.object.DeepCopyObject()
		convert(t, o, e)
		k.update(e)
		convert(t, e, o)
	}
	update("same manager", store, as("creator"), change)
	update("other manager", store, as("updater"), label("1"))
	update("no-op update", store, as("updater"), func(runtime.Object) {})
	update("no-op of a third manager", store, as("third"), func(runtime.Object) {})
	patch, err := runtime.DefaultUnstructuredConverter.ToUnstructured(k.apply)
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{Object: patch}
	u.SetGroupVersionKind(k.strategy.Resource().GroupVersion().WithKind(k.strategy.Kind()))
	clk.Add(10 * time.Second)
	out, _, err = store.Apply(as("applier"), ns, name, u.DeepCopy(), "applier", false, false)
	record("apply, conflicting", out, err)
	out, _, err = store.Apply(as("applier"), ns, name, u.DeepCopy(), "applier", true, false)
	record("apply, forced", out, err)
	update("the applier's field by another", store, as("creator"), label("2"))
	update("no manager", store, context.Background(), label("3"))
	if st := statusOf(k.strategy); st != nil {
		update("status, same manager", status, as("creator"), change)
		update("status, other manager", status, as("orchlet"), change)
		update("status, no-op", status, as("orchlet"), func(runtime.Object) {})
		update("status, a label", status, as("orchlet"), label("4"))
	}
	// managedFields a client wrote itself: one naming metadata.managedFields, one not an
	// object, and none at all (the live object's are kept).
	update("managedFields naming managedFields", store, as("updater"), func(o runtime.Object) {
		m := accessorOf(o)
		m.SetManagedFields(append(m.GetManagedFields(), metav1.ManagedFieldsEntry{Manager: "sneaky", Operation: metav1.ManagedFieldsOperationUpdate,
			APIVersion: k.strategy.Resource().GroupVersion().String(), FieldsType: "FieldsV1",
			FieldsV1: metav1.NewFieldsV1(`{"f:metadata":{"f:managedFields":{},"f:annotations":{"f:note":{}}}}`)}))
		label("5")(o)
	})
	update("after it", store, as("creator"), label("6"))
	update("managedFields not an object", store, as("updater"), func(o runtime.Object) {
		m := accessorOf(o)
		m.SetManagedFields(append(m.GetManagedFields(), metav1.ManagedFieldsEntry{Manager: "odd", Operation: metav1.ManagedFieldsOperationUpdate,
			APIVersion: k.strategy.Resource().GroupVersion().String(), FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`[1]`)}))
	})
	update("after it", store, as("creator"), label("7"))
	update("managedFields emptied", store, as("updater"), func(o runtime.Object) {
		accessorOf(o).SetManagedFields([]metav1.ManagedFieldsEntry{})
		label("8")(o)
	})
	update("managedFields reset", store, as("updater"), func(o runtime.Object) {
		accessorOf(o).SetManagedFields([]metav1.ManagedFieldsEntry{{}})
		label("9")(o)
	})
	update("after the reset", store, as("creator"), label("10"))
	final, err := store.Get(context.Background(), ns, name)
	record("stored", final, err)
	return answers, generic.LiveTypedWithoutManagedFields(store) + generic.LiveTypedWithoutManagedFields(status),
		generic.PrunedUpdates(store) + generic.PrunedUpdates(status)
}

// convert copies from into to, field by field through JSON.
func convert(t *testing.T, from, to runtime.Object) {
	t.Helper()
	data, err := json.Marshal(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, to); err != nil {
		t.Fatal(err)
	}
}

// csrPEM is a node's certificate request, one for all the writes of a test.
var csrPEM = sync.OnceValue(func() []byte {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		panic(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: "system:node:n1", Organization: []string{"system:nodes"}}}, key)
	if err != nil {
		panic(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
})

func accessorOf(o runtime.Object) metav1.Object { return o.(metav1.Object) }

// sameAnswers fails t unless the writes answered the same with a change (got) as without (want).
func sameAnswers(t *testing.T, got, want []string) {
	t.Helper()
	for i := range min(len(got), len(want)) {
		if got[i] != want[i] {
			t.Errorf("with it:\n%s\nwithout:\n%s", got[i], want[i])
		}
	}
	if len(got) != len(want) {
		t.Fatalf("%d answers with it, %d without", len(got), len(want))
	}
}

// A live object typed without its managedFields must change no answer: every served kind's
// table of writes (the same and another manager, no-op updates, applies, the status
// subresource, managedFields written by a client) answers and stores the same bytes with it and
// without it.
func TestLiveTypedWithoutManagedFieldsChangesNothing(t *testing.T) {
	defer generic.TypeLiveWithoutManagedFields(true)
	var all []string
	for _, k := range servedKinds() {
		t.Run(k.strategy.Kind(), func(t *testing.T) {
			generic.TypeLiveWithoutManagedFields(false)
			want, n, _ := writes(t, k)
			generic.TypeLiveWithoutManagedFields(true)
			got, typed, _ := writes(t, k)
			if n != 0 {
				t.Fatalf("with it off, %d live objects were typed without managedFields", n)
			}
			if typed == 0 {
				t.Fatal("no live object was typed without managedFields")
			}
			sameAnswers(t, got, want)
			all = append(all, got...)
			t.Logf("%d writes, %d live objects typed without managedFields", len(got)-1, typed)
		})
	}
	for _, must := range []string{`"manager":"creator"`, `"manager":"updater"`, `"manager":"applier"`, `"manager":"orchlet","operation":"Update","apiVersion":"v1"`, `"subresource":"status"`, `"manager":"sneaky"`, "error: Apply failed with"} {
		if !strings.Contains(strings.Join(all, "\n"), must) {
			t.Errorf("no answer has %s: the table does not test what it says", must)
		}
	}
}

// Fields equal in an update's two objects, left out of both when typed, must change no answer:
// every served kind's table of writes answers and stores the same bytes with it and without it.
func TestPrunedTypingChangesNothing(t *testing.T) {
	defer generic.PruneEqualFields(true)
	for _, k := range servedKinds() {
		t.Run(k.strategy.Kind(), func(t *testing.T) {
			generic.PruneEqualFields(false)
			want, _, n := writes(t, k)
			generic.PruneEqualFields(true)
			got, _, pruned := writes(t, k)
			if n != 0 {
				t.Fatalf("with it off, %d updates left a field out", n)
			}
			if pruned == 0 {
				t.Fatal("no update left a field out")
			}
			sameAnswers(t, got, want)
			t.Logf("%d writes, %d updates left a field out", len(got)-1, pruned)
		})
	}
}

// Only a field whose typing cannot fail is left out: an error the library would meet in a field
// equal in both objects still fails the update. A node's status images are atomic, its addresses
// keyed by a type always encoded; a pod's imagePullSecrets keyed by a name the schema defaults,
// its volumes by a name always encoded. Fields always encoded (a node's kubeletVersion, a pod's
// containers) or always typed (metadata) are never left out whole: zeroing them would not take
// them out of the typed value.
func TestPrunableFieldsAreTypedWithoutError(t *testing.T) {
	clk := clock.NewUnyieldingMock()
	prunable := func(s generic.Strategy) map[string]bool {
		store := generic.New(generic.Options{Strategy: s, Storage: memory.New(clk), Clock: clk})
		out := map[string]bool{}
		for _, f := range generic.PrunableFields(store) {
			out[f] = true
		}
		return out
	}
	node, pod := prunable(core.NodeStrategy{}), prunable(core.PodStrategy{})
	for _, f := range []string{"status.images", "status.nodeInfo.swap", "status.capacity", "status.addresses", "metadata.labels", "metadata.managedFields", "spec.taints"} {
		if !node[f] {
			t.Errorf("node: %s may not be left out; the tree: %v", f, node)
		}
	}
	for _, f := range []string{"status.conditions", "status.containerStatuses", "spec.imagePullSecrets", "spec.volumes", "metadata.labels"} {
		if !pod[f] {
			t.Errorf("pod: %s may not be left out; the tree: %v", f, pod)
		}
	}
	for _, f := range []string{"apiVersion", "kind", "metadata", "status", "status.nodeInfo", "status.nodeInfo.kubeletVersion", "spec.containers"} {
		if node[f] || pod[f] {
			t.Errorf("%s is left out whole when equal", f)
		}
	}
}
