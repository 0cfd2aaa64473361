package generic_test

import (
	"bytes"
	"context"
	"encoding/json"
	"math/rand"
	"reflect"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	certificatesv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"orch.io/orch/components/apiserver/jsoncopy"
	"orch.io/orch/components/apiserver/registry/generic"
	"orch.io/orch/components/apiserver/storage/memory"
)

// moveTimes moves each metav1.Time and MicroTime under v, addressable, by a random whole or
// part of a second, or leaves it, or zeroes it, as a heartbeat or a renewal moves its times.
func moveTimes(r *rand.Rand, v reflect.Value) {
	switch v.Kind() {
	case reflect.Struct:
		switch t := v.Addr().Interface().(type) {
		case *metav1.Time:
			*t = moved(r, *t, func(at time.Time) metav1.Time { return metav1.NewTime(at) }, func(t metav1.Time) time.Time { return t.Time })
			return
		case *metav1.MicroTime:
			*t = moved(r, *t, func(at time.Time) metav1.MicroTime { return metav1.NewMicroTime(at) }, func(t metav1.MicroTime) time.Time { return t.Time })
			return
		}
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				moveTimes(r, v.Field(i))
			}
		}
	case reflect.Pointer:
		if !v.IsNil() {
			moveTimes(r, v.Elem())
		}
	case reflect.Slice:
		for i := range v.Len() {
			moveTimes(r, v.Index(i))
		}
	}
}

// moved is t moved as moveTimes moves it; at makes a T of a time, of reads it.
func moved[T any](r *rand.Rand, t T, at func(time.Time) T, of func(T) time.Time) T {
	switch r.Intn(5) {
	case 0:
		return at(of(t).Add(time.Duration(r.Intn(3)) * time.Second))
	case 1:
		return at(of(t).Add(time.Duration(r.Int63n(int64(2 * time.Second)))))
	case 2:
		if r.Intn(4) == 0 {
			var zero T
			return zero
		}
		return at(time.Date(2026, 11, 30, 11, 0, 0, 0, time.UTC))
	}
	return t
}

// jsoncopy.Spliced over the bytes the decoded cache keeps a copy for must be json.Marshal:
// every served kind's objects filled at random, encoded and kept as the store keeps them, then
// changed in a few places and their times moved. Over a copy that does not encode as those bytes
// (a quantity's form, a time in year 1's first second, a pointer to a null) the store does not
// splice; over one that says it does, it must.
func TestSplicedIsTheEncoding(t *testing.T) {
	for _, k := range servedKinds() {
		t.Run(k.strategy.Kind(), func(t *testing.T) {
			r := rand.New(rand.NewSource(1))
			spliced, changed, moved, copiedMoved := 0, 0, 0, 0
			for seed := range int64(500) {
				x := k.strategy.New()
				filler(seed).Fill(x)
				enc, err := json.Marshal(x)
				if err != nil {
					continue
				}
				old, ok, same := jsoncopy.DecodedSame(x)
				if !ok {
					continue
				}
				if !same {
					moved++ // the store does not splice over its bytes
					continue
				}
				if again, err := json.Marshal(old); err != nil || !bytes.Equal(again, enc) {
					t.Fatalf("seed %d: the copy said to encode as the object encodes as\n%s\n(%v), not as\n%s", seed, again, err, enc)
				}
				for i := range 6 {
					next := old.DeepCopyObject()
					for range i % 3 {
						changeOne(r, reflect.ValueOf(next).Elem())
					}
					if i >= 2 {
						moveTimes(r, reflect.ValueOf(next).Elem())
					}
					got, ok := jsoncopy.Spliced(next, old, enc)
					if !ok {
						continue
					}
					want, err := json.Marshal(next)
					if err != nil {
						t.Fatalf("seed %d: spliced an object json.Marshal fails on (%v): %#v", seed, err, next)
					}
					if !bytes.Equal(got, want) {
						d := 0
						for d < min(len(got), len(want)) && got[d] == want[d] {
							d++
						}
						t.Fatalf("seed %d: spliced, from byte %d:\n%s\njson.Marshal:\n%s", seed, d, got[max(0, d-300):], want[max(0, d-300):])
					}
					spliced++
					if !bytes.Equal(got, enc) {
						changed++
					}
					// The copy made alongside is what the bytes decode to, and what DecodedSame
					// makes of the object written.
					again, copied, same, ok := jsoncopy.SplicedDecoded(next, old, enc, old.DeepCopyObject())
					if !ok || !bytes.Equal(again, got) {
						t.Fatalf("seed %d: SplicedDecoded (%v) spliced\n%s\nSpliced\n%s", seed, ok, again, got)
					}
					wantCopy, wantOK, wantSame := jsoncopy.DecodedSame(next)
					if copied == nil {
						if wantOK {
							t.Fatalf("seed %d: no copy made alongside of an object DecodedSame copies", seed)
						}
						continue
					}
					decoded := k.strategy.New()
					if err := json.Unmarshal(got, decoded); err != nil {
						t.Fatal(err)
					}
					if !reflect.DeepEqual(copied, decoded) {
						t.Fatalf("seed %d: the copy made alongside\n%#v\nis not the decode\n%#v", seed, copied, decoded)
					}
					if !wantOK || same != wantSame || !reflect.DeepEqual(copied, wantCopy) {
						t.Fatalf("seed %d: the copy made alongside (same %v) is not DecodedSame's (%v, same %v)", seed, same, wantOK, wantSame)
					}
					if same {
						if enc, err := json.Marshal(copied); err != nil || !bytes.Equal(enc, got) {
							t.Fatalf("seed %d: the copy made alongside said to encode as\n%s\nnot as\n%s", seed, got, enc)
						}
					} else {
						copiedMoved++
					}
				}
			}
			if spliced < 500 || changed < 200 {
				t.Errorf("%d objects spliced, %d of them changed: too few to say it is the encoding", spliced, changed)
			}
			t.Logf("%d spliced, %d of them changed; %d copies that encode otherwise, %d made alongside that do too", spliced, changed, moved, copiedMoved)
		})
	}
}

// An update over what the store's last write kept, the last answer posted again as orchlet
// posts a node's status, must answer and store the same bytes spliced as encoded: every served
// kind, through the resource and its status, with the table's change, labels, random changes
// and moved times.
func TestSplicedWritesChangeNothing(t *testing.T) {
	defer generic.SpliceStoredForms(true)
	for _, k := range servedKinds() {
		t.Run(k.strategy.Kind(), func(t *testing.T) {
			generic.SpliceStoredForms(false)
			before := generic.SplicedWrites()
			want := reposts(t, k)
			if n := generic.SplicedWrites() - before; n != 0 {
				t.Fatalf("with it off, %d stored forms spliced", n)
			}
			generic.SpliceStoredForms(true)
			got := reposts(t, k)
			n := generic.SplicedWrites() - before
			if n == 0 {
				t.Fatalf("no stored form spliced of %d answers", len(got))
			}
			sameAnswers(t, got, want)
			t.Logf("%d writes, %d stored forms spliced", len(got), n)
		})
	}
}

// reposts writes k's object again and again, each time over the last answer, and returns each
// answer and the bytes stored after it.
func reposts(t *testing.T, k servedKind) (answers []string) {
	t.Helper()
	clk := clock.NewUnyieldingMock()
	clk.Set(time.Date(2026, 11, 29, 9, 0, 0, 250_000_000, time.UTC))
	st := memory.New(clk)
	store := generic.New(generic.Options{Strategy: k.strategy, Storage: st, Clock: clk, NewUID: func() types.UID { return "uid-1" }})
	status := store
	if s := statusOf(k.strategy); s != nil {
		status = store.WithUpdates("status", s)
	}
	m := accessorOf(k.object)
	ns, name := m.GetNamespace(), m.GetName()
	key := store.KeyRoot() + name
	if ns != "" {
		key = store.KeyRoot() + ns + "/" + name
	}
	example := k.object.DeepCopyObject()
	if csr, ok := example.(*certificatesv1.CertificateSigningRequest); ok {
		csr.Spec.Request = csrPEM()
	}
	obj := k.strategy.New()
	convert(t, example, obj)
	ctx := generic.WithManager(context.Background(), "creator")
	last, err := store.Create(ctx, ns, obj, false)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewSource(2))
	for i := range 120 {
		clk.Add(time.Duration(r.Intn(3000)) * time.Millisecond)
		next := last.DeepCopyObject()
		switch i % 6 {
		case 0:
			e := k.object.DeepCopyObject()
			convert(t, next, e)
			k.update(e)
			convert(t, e, next)
		case 1:
			accessorOf(next).SetLabels(map[string]string{"step": string(rune('a' + i%26))})
		case 2, 3:
			changeOne(r, reflect.ValueOf(next).Elem())
		}
		moveTimes(r, reflect.ValueOf(next).Elem())
		s := store
		if i%2 == 1 {
			s = status
		}
		managers := []string{"creator", "orchlet", "updater"}
		out, _, err := s.Update(generic.WithManager(context.Background(), managers[i%len(managers)]), ns, name, next, false)
		if err != nil {
			answers = append(answers, "error: "+err.Error())
			if last, err = store.Get(ctx, ns, name); err != nil {
				t.Fatal(err)
			}
			continue
		}
		data, err := json.Marshal(out)
		if err != nil {
			t.Fatal(err)
		}
		kv, err := st.Get(context.Background(), key)
		if err != nil {
			t.Fatal(err)
		}
		answers = append(answers, string(data), "stored: "+string(kv.Value))
		last = out
	}
	return answers
}
