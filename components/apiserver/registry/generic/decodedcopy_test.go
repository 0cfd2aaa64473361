package generic_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand"
	"reflect"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	certificatesv1 "k8s.io/api/certificates/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/randfill"

	"orch.io/orch/components/apiserver/jsoncopy"
	"orch.io/orch/components/apiserver/registry/generic"
	"orch.io/orch/components/apiserver/storage/memory"
)

// checkDecodedCopy fails t unless jsoncopy.Decoded of obj is what json.Unmarshal of json.Marshal of
// it gives, or it declines (false) where it may; it reports whether it made one.
func checkDecodedCopy(t *testing.T, newObj func() runtime.Object, obj runtime.Object) bool {
	t.Helper()
	got, ok := jsoncopy.Decoded(obj)
	data, err := json.Marshal(obj)
	if err != nil {
		if ok {
			t.Fatalf("decodedCopy made a copy of an object json.Marshal fails on (%v): %#v", err, obj)
		}
		return false
	}
	want := newObj()
	if err := json.Unmarshal(data, want); err != nil {
		if ok {
			t.Fatalf("decodedCopy made a copy of bytes the decode fails on (%v): %s", err, data)
		}
		return false
	}
	if ok && !reflect.DeepEqual(got, want) {
		gotData, _ := json.Marshal(got)
		t.Fatalf("decodedCopy is not the decode of\n%s\ngot  %#v\nwant %#v\n(got encodes as %s)", data, got, want, gotData)
	}
	return ok
}

// filler fills objects of the served kinds at random, with the values whose JSON forms are
// their own (quantities, int-or-strings, raw extensions, field sets) among their forms.
func filler(seed int64) *randfill.Filler {
	quantities := []string{"0", "1", "100m", "1500m", "128Mi", "1Gi", "1.5", "0.5Gi", "1e3", "12345678901234", "-2", "3800m", "1k", "250M"}
	return randfill.New().RandSource(rand.NewSource(seed)).NilChance(0.2).NumElements(0, 3).MaxDepth(12).Funcs(
		func(q *resource.Quantity, c randfill.Continue) {
			switch c.Intn(4) {
			case 0:
				*q = resource.MustParse(quantities[c.Intn(len(quantities))])
			case 1:
				*q = *resource.NewQuantity(c.Int63n(1<<40), resource.BinarySI)
			case 2:
				*q = *resource.NewMilliQuantity(c.Int63n(1<<30), resource.DecimalSI)
			default:
				*q = *resource.NewScaledQuantity(c.Int63n(1000), resource.Scale(c.Intn(19)-9))
			}
		},
		func(v *intstr.IntOrString, c randfill.Continue) {
			if c.Bool() {
				*v = intstr.FromInt32(c.Int31())
			} else {
				*v = intstr.FromString(c.String(8))
			}
		},
		func(r *runtime.RawExtension, c randfill.Continue) {
			forms := [][]byte{nil, []byte(`{"a": 1, "b": "<x> & y"}`), []byte("[1,\n 2]"), []byte(`"s"`), []byte(`{}`)}
			r.Raw = forms[c.Intn(len(forms))]
		},
		func(f *metav1.FieldsV1, c randfill.Continue) {
			forms := []string{`{"f:metadata":{"f:labels":{".":{},"f:app":{}}}}`, `{}`, `{"f:status": {"f:conditions": {}}}`}
			if c.Intn(4) > 0 {
				*f = *metav1.NewFieldsV1(forms[c.Intn(len(forms))])
			}
		},
		func(t *time.Time, c randfill.Continue) {
			// Years 1 to 9999 mostly, nanoseconds and zones of their own; sometimes zero.
			if c.Intn(8) == 0 {
				*t = time.Time{}
				return
			}
			sec := c.Int63n(253402300799+62135596800) - 62135596800
			zones := []*time.Location{time.UTC, time.Local, time.FixedZone("x", 5*3600+1800)}
			*t = time.Unix(sec, c.Int63n(1e9)).In(zones[c.Intn(len(zones))])
		},
	)
}

// jsoncopy.Decoded must be the decode of the encoding, for every served kind's objects: each
// table's example and a thousand filled at random each (jsoncopy's own test: a case per rule).
func TestDecodedCopyIsTheDecode(t *testing.T) {
	for _, k := range servedKinds() {
		t.Run(k.strategy.Kind(), func(t *testing.T) {
			example := k.strategy.New()
			convert(t, k.object, example)
			if !checkDecodedCopy(t, k.strategy.New, example) {
				t.Fatalf("no copy of the table's %s: its updates would all decode", k.strategy.Kind())
			}
			made := 0
			for seed := range int64(1000) {
				obj := k.strategy.New()
				filler(seed).Fill(obj)
				if checkDecodedCopy(t, k.strategy.New, obj) {
					made++
				}
			}
			if made < 500 {
				t.Errorf("a copy of %d of 1000 random objects: too few to say it is the decode", made)
			}
			t.Logf("%d of 1000 random objects copied, the rest declined", made)
		})
	}
}

// Updates reading what the store's last write decoded to must answer and store the same bytes:
// every served kind's table of writes, with the copies kept and without.
func TestDecodedCopiesChangeNothing(t *testing.T) {
	defer generic.KeepDecodedCopies(true)
	for _, k := range servedKinds() {
		t.Run(k.strategy.Kind(), func(t *testing.T) {
			generic.KeepDecodedCopies(false)
			before := generic.DecodedHits()
			want, _, _ := writes(t, k)
			if n := generic.DecodedHits() - before; n != 0 {
				t.Fatalf("with it off, %d reads answered from a copy", n)
			}
			generic.KeepDecodedCopies(true)
			got, _, _ := writes(t, k)
			hits := generic.DecodedHits() - before
			if hits == 0 {
				t.Fatal("no read answered from a copy")
			}
			sameAnswers(t, got, want)
			t.Logf("%d writes, %d reads answered from a copy", len(got)-1, hits)
		})
	}
}

// A read answered from a copy must hand out what the next read, which decodes the same bytes
// (a copy is taken once), hands out: every served kind, after updates by two managers on a clock
// between seconds.
func TestStoreReadsTheCopyAsTheDecode(t *testing.T) {
	for _, k := range servedKinds() {
		t.Run(k.strategy.Kind(), func(t *testing.T) {
			clk := clock.NewUnyieldingMock()
			clk.Set(time.Date(2026, 11, 29, 9, 0, 0, 123456789, time.UTC))
			store := generic.New(generic.Options{Strategy: k.strategy, Storage: memory.New(clk), Clock: clk})
			m := accessorOf(k.object)
			ns, name := m.GetNamespace(), m.GetName()
			obj := k.strategy.New()
			example := k.object.DeepCopyObject()
			if csr, ok := example.(*certificatesv1.CertificateSigningRequest); ok {
				csr.Spec.Request = csrPEM()
			}
			convert(t, example, obj)
			if _, err := store.Create(generic.WithManager(context.Background(), "creator"), ns, obj, false); err != nil {
				t.Fatal(err)
			}
			for i, manager := range []string{"creator", "updater", "creator"} {
				clk.Add(1500 * time.Millisecond)
				ctx := generic.WithManager(context.Background(), manager)
				cur, err := store.Get(ctx, ns, name)
				if err != nil {
					t.Fatal(err)
				}
				accessorOf(cur).SetLabels(map[string]string{"step": fmt.Sprint(i)})
				if _, _, err := store.Update(ctx, ns, name, cur, false); err != nil {
					t.Fatal(err)
				}
				before := generic.DecodedHits()
				copied, err := store.Get(ctx, ns, name)
				if err != nil {
					t.Fatal(err)
				}
				if generic.DecodedHits() != before+1 {
					t.Fatal("the read after an update was not answered from a copy")
				}
				decoded, err := store.Get(ctx, ns, name)
				if err != nil {
					t.Fatal(err)
				}
				if generic.DecodedHits() != before+1 {
					t.Fatal("a copy was handed out twice")
				}
				if !reflect.DeepEqual(copied, decoded) {
					t.Fatalf("the copy is not the decode:\n%#v\n%#v", copied, decoded)
				}
			}
		})
	}
}
