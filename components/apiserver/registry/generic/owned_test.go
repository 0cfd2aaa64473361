package generic_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	certificatesv1 "k8s.io/api/certificates/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"orch.io/orch/components/apiserver/registry/coordination"
	"orch.io/orch/components/apiserver/registry/core"
	"orch.io/orch/components/apiserver/registry/generic"
	"orch.io/orch/components/apiserver/storage/memory"
)

// Answering updates that change only fields their manager alone owns without the library must
// change no answer: every served kind's table of writes answers and stores the same bytes.
func TestOwnedUpdateChangesNothing(t *testing.T) {
	defer generic.SkipOwnedUpdates(true)
	for _, k := range servedKinds() {
		t.Run(k.strategy.Kind(), func(t *testing.T) {
			generic.SkipOwnedUpdates(false)
			before := generic.OwnedUpdates()
			want, _, _ := writes(t, k)
			if n := generic.OwnedUpdates() - before; n != 0 {
				t.Fatalf("with it off, %d updates answered without the library", n)
			}
			generic.SkipOwnedUpdates(true)
			got, _, _ := writes(t, k)
			sameAnswers(t, got, want)
			t.Logf("%d writes, %d answered without the library", len(got)-1, generic.OwnedUpdates()-before)
		})
	}
}

// The agent's two writes of every few seconds, a node status post and a lease renewal, are the
// updates answered without the library, after the first of each.
func TestOwnedUpdateTakenForHeartbeats(t *testing.T) {
	clk := clock.NewUnyieldingMock()
	clk.Set(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	ctx := generic.WithManager(context.Background(), "orchlet")
	st := memory.New(clk)
	nodes := generic.New(generic.Options{Strategy: core.NodeStrategy{Clock: clk}, Storage: st, Clock: clk})
	status := nodes.WithUpdates("status", core.NodeStatusStrategy{NodeStrategy: core.NodeStrategy{Clock: clk}})
	if _, err := nodes.Create(ctx, "", &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{"kubernetes.io/hostname": "n1"}}}, false); err != nil {
		t.Fatal(err)
	}
	leases := generic.New(generic.Options{Strategy: coordination.LeaseStrategy{}, Storage: st, Clock: clk})
	holder, seconds := "n1", int32(40)
	if _, err := leases.Create(ctx, "orch-node-lease", &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "n1", Namespace: "orch-node-lease"},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &seconds}}, false); err != nil {
		t.Fatal(err)
	}
	const posts = 20
	before := generic.OwnedUpdates()
	for range posts {
		clk.Add(10 * time.Second)
		now := metav1.NewTime(clk.Now())
		obj, err := status.Get(ctx, "", "n1")
		if err != nil {
			t.Fatal(err)
		}
		n := obj.(*corev1.Node)
		if len(n.Status.Conditions) == 0 {
			for _, c := range []corev1.NodeConditionType{corev1.NodeMemoryPressure, corev1.NodeDiskPressure, corev1.NodePIDPressure, corev1.NodeReady} {
				n.Status.Conditions = append(n.Status.Conditions, corev1.NodeCondition{Type: c, Status: corev1.ConditionFalse, LastTransitionTime: now, Reason: "R", Message: "m"})
			}
		}
		for i := range n.Status.Conditions {
			n.Status.Conditions[i].LastHeartbeatTime = now
		}
		if _, _, err := status.Update(ctx, "", "n1", n, false); err != nil {
			t.Fatal(err)
		}
		obj, err = leases.Get(ctx, "orch-node-lease", "n1")
		if err != nil {
			t.Fatal(err)
		}
		l := obj.(*coordinationv1.Lease)
		renew := metav1.NewMicroTime(clk.Now())
		l.Spec.RenewTime = &renew
		if _, _, err := leases.Update(ctx, "orch-node-lease", "n1", l, false); err != nil {
			t.Fatal(err)
		}
	}
	// The first post adds the conditions, the first renewal its time: the library's.
	if n := generic.OwnedUpdates() - before; n != 2*(posts-1) {
		t.Fatalf("%d of %d updates answered without the library, want %d", n, 2*posts, 2*(posts-1))
	}
}

// The fast path must answer as the library over random update sequences of every served kind:
// several managers (and none, and an empty name) through the object and its status, changing
// random fields, adding and removing list items and map keys, with the managedFields of the
// request kept, cleared, reset or forged, the last-applied annotation, applies among them. Each
// step runs on two stores, one with the fast path and one without, and both must answer and
// store the same bytes.
func TestOwnedUpdateSkipsNothing(t *testing.T) {
	defer generic.SkipOwnedUpdates(true)
	steps := 200
	if testing.Short() {
		steps = 60
	}
	total, owned := 0, int64(0)
	for _, k := range servedKinds() {
		t.Run(k.strategy.Kind(), func(t *testing.T) {
			var kindTotal int
			var kindOwned int64
			for seed, n := int64(0), 0; n < 3*steps; seed++ {
				m, o := ownedSequence(t, k, seed, steps)
				n += m + 1
				kindTotal += m
				kindOwned += o
			}
			t.Logf("%d updates, %d answered without the library", kindTotal, kindOwned)
			total += kindTotal
			owned += kindOwned
		})
	}
	t.Logf("%d updates, %d answered without the library", total, owned)
	if owned < int64(total)/20 {
		t.Fatalf("only %d of %d updates took the fast path: the sequences test little of it", owned, total)
	}
}

// twin is one store of the pair ownedSequence runs: on says whether it takes the fast path.
type twin struct {
	on     bool
	clk    *clock.Mock
	store  *generic.Store
	status *generic.Store
}

func ownedSequence(t *testing.T, k servedKind, seed int64, steps int) (updates int, owned int64) {
	t.Helper()
	newTwin := func(on bool) *twin {
		clk := clock.NewUnyieldingMock()
		clk.Set(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
		s := generic.New(generic.Options{Strategy: k.strategy, Storage: memory.New(clk), Clock: clk,
			NewUID: func() types.UID { return "uid-1" }, NameSuffix: func() string { return "x" }})
		tw := &twin{on: on, clk: clk, store: s}
		if st := statusOf(k.strategy); st != nil {
			tw.status = s.WithUpdates("status", st)
		}
		return tw
	}
	twins := []*twin{newTwin(false), newTwin(true)}
	m := accessorOf(k.object)
	ns, name := m.GetNamespace(), m.GetName()
	example := k.object.DeepCopyObject()
	if csr, ok := example.(*certificatesv1.CertificateSigningRequest); ok {
		csr.Spec.Request = csrPEM()
	}
	obj := k.strategy.New()
	convert(t, example, obj)
	answer := func(out runtime.Object, err error) string {
		if err != nil { // its parts in the order of a map's iteration: compared as a multiset
			r := []rune(err.Error())
			slices.Sort(r)
			return "error: " + string(r)
		}
		data, err := json.Marshal(out)
		if err != nil {
			t.Fatal(err)
		}
		return string(data)
	}
	run := func(step string, do func(tw *twin) (runtime.Object, error)) {
		var answers [2]string
		for i, tw := range twins {
			generic.SkipOwnedUpdates(tw.on)
			answers[i] = answer(do(tw))
		}
		if answers[0] != answers[1] {
			t.Fatalf("seed %d, %s:\nwith the fast path:\n%s\nwithout:\n%s", seed, step, answers[1], answers[0])
		}
	}
	run("create", func(tw *twin) (runtime.Object, error) {
		return tw.store.Create(generic.WithManager(context.Background(), "a"), ns, obj.DeepCopyObject(), false)
	})
	r := rand.New(rand.NewSource(seed))
	// "" is the library's "unknown"; an apply over an object without managedFields makes its
	// "before-first-apply": entries it dates, as the writer's, on the store's clock.
	managers := []string{"a", "a", "a", "b", "c", ""}
	// A step often repeats the last one's manager and changes the same scalars again, as a
	// heartbeat does: the updates the fast path is for.
	var lastManager string
	var lastSites []string
	var lastStatus, appliedUnmanaged bool
	for i := range steps {
		advance := time.Second * time.Duration(r.Intn(12)) // now and then within a second
		ctx := context.Background()
		manager := managers[r.Intn(len(managers))]
		viaStatus := r.Intn(3) == 0
		again := len(lastSites) > 0 && r.Intn(3) > 0
		if again {
			manager, viaStatus = lastManager, lastStatus
		}
		if r.Intn(20) > 0 {
			ctx = generic.WithManager(ctx, manager)
		}
		live, err := twins[0].store.Get(context.Background(), ns, name)
		if err != nil {
			t.Fatal(err)
		}
		// An apply among the updates, and over an object without managedFields (reset, or every
		// set forged empty), whose updates the library tracks no more: the sequence ends there
		// the second time.
		unmanaged := len(accessorOf(live).GetManagedFields()) == 0
		if unmanaged && appliedUnmanaged {
			break
		}
		if r.Intn(25) == 0 || unmanaged {
			appliedUnmanaged = appliedUnmanaged || unmanaged
			patch, err := runtime.DefaultUnstructuredConverter.ToUnstructured(k.apply)
			if err != nil {
				t.Fatal(err)
			}
			u := &unstructured.Unstructured{Object: patch}
			u.SetGroupVersionKind(k.strategy.Resource().GroupVersion().WithKind(k.strategy.Kind()))
			run(fmt.Sprintf("step %d: apply", i), func(tw *twin) (runtime.Object, error) {
				tw.clk.Add(advance)
				out, _, err := tw.store.Apply(generic.WithManager(context.Background(), "applier"), ns, name, u.DeepCopy(), "applier", true, false)
				return out, err
			})
			continue
		}
		next := live.DeepCopyObject()
		var what []string
		if again {
			what = mutateAgain(r, next, i, lastSites)
		} else {
			what, lastSites = mutate(r, next, i)
		}
		lastManager, lastStatus = manager, viaStatus
		if !again || r.Intn(3) == 0 {
			what = append(what, mutateManagedFields(r, next, k)...)
		}
		updates++
		before := generic.OwnedUpdates()
		run(fmt.Sprintf("step %d (%s as %q, status %v)", i, strings.Join(what, ", "), manager, viaStatus), func(tw *twin) (runtime.Object, error) {
			tw.clk.Add(advance)
			s := tw.store
			if viaStatus && tw.status != nil {
				s = tw.status
			}
			out, _, err := s.Update(ctx, ns, name, next.DeepCopyObject(), false)
			return out, err
		})
		owned += generic.OwnedUpdates() - before
	}
	run("stored", func(tw *twin) (runtime.Object, error) { return tw.store.Get(context.Background(), ns, name) })
	return updates, owned
}

// mutate changes a few random fields of obj (not its metadata's server-set ones): a scalar set to
// another value or zeroed, a list item added, dropped or moved, a map key added or dropped; mostly
// a time moved on, the kind of change a heartbeat makes. It says what it did.
func mutate(r *rand.Rand, obj runtime.Object, step int) (did, scalars []string) {
	var sites []site
	collectSites(reflect.ValueOf(obj).Elem(), "", &sites)
	for range 1 + r.Intn(2) {
		if len(sites) == 0 || r.Intn(8) == 0 {
			break
		}
		s := sites[r.Intn(len(sites))]
		did = append(did, s.change(r, step))
		if k := s.v.Kind(); k != reflect.Pointer && k != reflect.Slice && k != reflect.Map {
			scalars = append(scalars, s.path)
		}
	}
	if r.Intn(15) == 0 {
		m := accessorOf(obj)
		a := m.GetAnnotations()
		if a == nil {
			a = map[string]string{}
		}
		a["kubectl.kubernetes.io/last-applied-configuration"] = fmt.Sprintf(`{"step":%d}`, step%3)
		m.SetAnnotations(a)
		did = append(did, "last-applied")
	}
	return did, scalars
}

// mutateAgain changes the scalars at paths once more, where obj still has them.
func mutateAgain(r *rand.Rand, obj runtime.Object, step int, paths []string) []string {
	var sites []site
	collectSites(reflect.ValueOf(obj).Elem(), "", &sites)
	var did []string
	for _, s := range sites {
		if slices.Contains(paths, s.path) && s.v.Kind() != reflect.Pointer {
			did = append(did, s.changeAgain(r, step))
		}
	}
	if r.Intn(6) == 0 { // and a label: metadata, which the manager's set may name or not
		m := accessorOf(obj)
		l := m.GetLabels()
		if l == nil {
			l = map[string]string{}
		}
		l["beat"] = fmt.Sprint("b", step%2)
		m.SetLabels(l)
		did = append(did, "a label")
	}
	return did
}

// changeAgain sets a scalar to a value it has not had, mostly (a heartbeat's change).
func (s site) changeAgain(r *rand.Rand, step int) string {
	if r.Intn(6) == 0 {
		return s.change(r, step)
	}
	switch v := s.v; v.Kind() {
	case reflect.Struct:
		v.Set(reflect.ValueOf(metav1.NewTime(time.Date(2026, 1, 1, 0, 0, step, 0, time.UTC))))
	case reflect.String:
		v.SetString(fmt.Sprint("t", step))
	case reflect.Bool:
		v.SetBool(!v.Bool())
	default:
		v.SetInt(int64(step + 1))
	}
	return s.path + " changed again"
}

type site struct {
	path string
	v    reflect.Value
}

var timeType = reflect.TypeFor[metav1.Time]()

// collectSites lists the values under v that mutate may change.
func collectSites(v reflect.Value, path string, out *[]site) {
	switch v.Kind() {
	case reflect.Pointer:
		*out = append(*out, site{path, v})
		if !v.IsNil() {
			collectSites(v.Elem(), path, out)
		}
	case reflect.Struct:
		if v.Type() == timeType {
			*out = append(*out, site{path, v}, site{path, v}, site{path, v}) // times, mostly
			return
		}
		if generic.Marshals(v.Type()) {
			return
		}
		for i := range v.NumField() {
			f := v.Type().Field(i)
			if !f.IsExported() {
				continue
			}
			if f.Type == reflect.TypeFor[metav1.ObjectMeta]() {
				m := v.Field(i)
				collectSites(m.FieldByName("Labels"), path+".labels", out)
				continue
			}
			if f.Type == reflect.TypeFor[metav1.TypeMeta]() {
				continue
			}
			collectSites(v.Field(i), path+"."+f.Name, out)
		}
	case reflect.Slice:
		*out = append(*out, site{path, v})
		for i := range v.Len() {
			collectSites(v.Index(i), fmt.Sprintf("%s[%d]", path, i), out)
		}
	case reflect.Map:
		*out = append(*out, site{path, v})
	case reflect.String, reflect.Bool, reflect.Int32, reflect.Int64, reflect.Int:
		*out = append(*out, site{path, v})
	}
}

func (s site) change(r *rand.Rand, step int) string {
	v := s.v
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
			filler(r.Int63()).Fill(v.Interface())
			return s.path + " set"
		}
		if r.Intn(3) == 0 {
			v.SetZero()
			return s.path + " unset"
		}
		return s.path + " kept"
	case reflect.Struct: // a time
		if r.Intn(10) == 0 {
			v.SetZero()
			return s.path + " zeroed"
		}
		v.Set(reflect.ValueOf(metav1.NewTime(time.Date(2026, 1, 1, 0, 0, step+r.Intn(5), 0, time.UTC))))
		return s.path + " moved"
	case reflect.Slice:
		n := v.Len()
		switch op := r.Intn(3); {
		case op == 0 && n > 0:
			i := r.Intn(n)
			v.Set(reflect.AppendSlice(v.Slice(0, i), v.Slice(i+1, n)))
			return fmt.Sprintf("%s[%d] dropped", s.path, i)
		case op == 1 && n > 1:
			i, j := r.Intn(n), r.Intn(n)
			a, b := v.Index(i).Interface(), v.Index(j).Interface()
			v.Index(i).Set(reflect.ValueOf(b))
			v.Index(j).Set(reflect.ValueOf(a))
			return fmt.Sprintf("%s[%d] and [%d] swapped", s.path, i, j)
		default:
			item := reflect.New(v.Type().Elem())
			if n > 0 && r.Intn(2) == 0 {
				item.Elem().Set(v.Index(r.Intn(n))) // often a key twice
			} else {
				filler(r.Int63()).Fill(item.Interface())
			}
			v.Set(reflect.Append(v, item.Elem()))
			return s.path + " appended"
		}
	case reflect.Map:
		if v.Len() > 0 && r.Intn(2) == 0 {
			keys := v.MapKeys()
			slices.SortFunc(keys, func(a, b reflect.Value) int { return strings.Compare(a.String(), b.String()) })
			k := keys[r.Intn(len(keys))]
			v.SetMapIndex(k, reflect.Value{})
			return fmt.Sprintf("%s[%v] dropped", s.path, k)
		}
		if v.IsNil() {
			v.Set(reflect.MakeMap(v.Type()))
		}
		k := reflect.New(v.Type().Key()).Elem()
		k.SetString(fmt.Sprintf("k%d", r.Intn(3)))
		e := reflect.New(v.Type().Elem())
		if e.Elem().Kind() == reflect.String {
			e.Elem().SetString(fmt.Sprint("v", step))
		} else {
			filler(r.Int63()).Fill(e.Interface())
		}
		v.SetMapIndex(k, e.Elem())
		return fmt.Sprintf("%s[%v] set", s.path, k)
	case reflect.String:
		v.SetString([]string{"", "a", "b", fmt.Sprint("s", step%4), fmt.Sprint("t", step)}[r.Intn(5)])
	case reflect.Bool:
		v.SetBool(!v.Bool())
	default:
		v.SetInt([]int64{0, 1, 2, int64(step % 5), int64(step + 1)}[r.Intn(5)])
	}
	return s.path + " changed"
}

// mutateManagedFields sets the request's managedFields as clients may: left as read, cleared,
// reset, or forged (an entry's set or time changed, its JSON spelt otherwise, one added, one
// sharing another's set).
func mutateManagedFields(r *rand.Rand, obj runtime.Object, k servedKind) []string {
	m := accessorOf(obj)
	entries := m.GetManagedFields()
	switch r.Intn(30) {
	case 0:
		m.SetManagedFields(nil)
		return []string{"managedFields cleared"}
	case 1:
		m.SetManagedFields([]metav1.ManagedFieldsEntry{})
		return []string{"managedFields reset"}
	case 2:
		if len(entries) > 0 {
			e := &entries[r.Intn(len(entries))]
			e.FieldsV1 = metav1.NewFieldsV1([]string{`{"f:metadata":{"f:labels":{".":{},"f:app":{}}}}`, `{}`, `{"f:status":{}}`}[r.Intn(3)])
			return []string{"a set forged"}
		}
	case 3:
		if len(entries) > 0 {
			e := &entries[r.Intn(len(entries))]
			t := metav1.NewTime(time.Date(2026, 1, 1, 0, r.Intn(90), 0, 0, time.UTC))
			e.Time = &t
			return []string{"a time forged"}
		}
	case 4:
		if len(entries) > 0 {
			e := &entries[r.Intn(len(entries))]
			e.FieldsV1 = metav1.NewFieldsV1(" " + string(e.FieldsV1.GetRawBytes()))
			return []string{"a set respelt"}
		}
	case 6, 7:
		if len(entries) > 0 { // another manager sharing a set, as two appliers of one value do
			e := entries[r.Intn(len(entries))]
			e.Manager, e.Operation, e.Subresource = "sharer", metav1.ManagedFieldsOperationUpdate, ""
			m.SetManagedFields(append(entries, e))
			return []string{"a set shared"}
		}
	case 5:
		m.SetManagedFields(append(entries, metav1.ManagedFieldsEntry{Manager: "forger", Operation: metav1.ManagedFieldsOperationUpdate,
			APIVersion: k.strategy.Resource().GroupVersion().String(), FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:metadata":{"f:labels":{"f:app":{}}}}`)}))
		return []string{"an entry forged"}
	}
	return nil
}

// The fast path's walk sees two times as equal exactly when their JSON is: the second for a Time,
// the microsecond for a MicroTime, whatever their zones.
func TestSameJSONIsTheEncoding(t *testing.T) {
	at := time.Date(2026, 11, 30, 5, 0, 0, 123456789, time.UTC)
	times := []time.Time{{}, at, at.Add(100 * time.Nanosecond), at.Add(time.Microsecond), at.Add(-500 * time.Microsecond),
		at.Add(time.Second), at.In(time.FixedZone("x", 3600)), at.Truncate(time.Second), time.Unix(0, 0)}
	for _, a := range times {
		for _, b := range times {
			for _, pair := range [][2]any{
				{&metav1.Time{Time: a}, &metav1.Time{Time: b}},
				{&metav1.MicroTime{Time: a}, &metav1.MicroTime{Time: b}},
			} {
				aj, _ := json.Marshal(pair[0])
				bj, _ := json.Marshal(pair[1])
				if got, want := generic.SameJSON(pair[0], pair[1]), string(aj) == string(bj); got != want {
					t.Errorf("%T %s and %s: the walk sees them equal: %v, want %v", pair[0], aj, bj, got, want)
				}
			}
		}
	}
}

// A keyed list item's path element, cached by its one string key, is the one made anew: for the
// same key twice, another value, another key name with the same value, and two keys (not cached).
func TestCachedItemKeyIsItemKey(t *testing.T) {
	type two struct {
		A string `json:"a"`
		B string `json:"b"`
	}
	for _, tc := range []struct {
		name string
		item any
		keys []string
	}{
		{"a condition", corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionTrue}, []string{"type"}},
		{"the condition again", corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionFalse}, []string{"type"}},
		{"another condition", corev1.NodeCondition{Type: corev1.NodeMemoryPressure}, []string{"type"}},
		{"a key", two{A: "x", B: "x"}, []string{"a"}},
		{"another key with the same value", two{A: "x", B: "x"}, []string{"b"}},
		{"two keys", corev1.ContainerPort{ContainerPort: 80, Protocol: corev1.ProtocolTCP}, []string{"containerPort", "protocol"}},
	} {
		cached, made, ok := generic.ItemKey(reflect.ValueOf(tc.item), tc.keys)
		if !ok {
			t.Fatalf("%s: no key", tc.name)
		}
		if !cached.Equals(made) || cached.String() != made.String() {
			t.Errorf("%s: cached %s, made %s", tc.name, cached, made)
		}
	}
}
