package generic_test

import (
	"testing"

	"github.com/benbjohnson/clock"
	"sigs.k8s.io/structured-merge-diff/v6/typed"

	"orch.io/orch/components/apiserver/registry/generic"
	"orch.io/orch/components/apiserver/storage/memory"
)

// Typing a safe kind's updates without the validation walk must change no answer: every served
// kind's table of writes answers and stores the same bytes with it and without it.
func TestUnvalidatedTypingChangesNothing(t *testing.T) {
	defer generic.SkipValidationOfSafeKinds(true)
	for _, k := range servedKinds() {
		t.Run(k.strategy.Kind(), func(t *testing.T) {
			generic.SkipValidationOfSafeKinds(false)
			before := generic.UnvalidatedTypings()
			want, _, _ := writes(t, k)
			if n := generic.UnvalidatedTypings() - before; n != 0 {
				t.Fatalf("with it off, %d objects typed without validation", n)
			}
			generic.SkipValidationOfSafeKinds(true)
			got, _, _ := writes(t, k)
			skipped := generic.UnvalidatedTypings() - before
			clk := clock.NewUnyieldingMock()
			if safe := generic.TypesWithoutValidation(generic.New(generic.Options{Strategy: k.strategy, Storage: memory.New(clk), Clock: clk})); safe != (skipped > 0) {
				t.Fatalf("a safe kind: %v; objects typed without validation: %d", safe, skipped)
			}
			sameAnswers(t, got, want)
			t.Logf("%d writes, %d objects typed without validation", len(got)-1, skipped)
		})
	}
}

// A kind typed without validation must be one whose objects never fail it: a thousand random
// objects of each such served kind validate. The kinds that are not (a service account's
// secrets are keyed by a name it may leave out) fail it among theirs, so the random objects do
// reach what validation refuses.
func TestSafeKindsNeverFailValidation(t *testing.T) {
	clk := clock.NewUnyieldingMock()
	unsafe := 0
	for _, k := range servedKinds() {
		t.Run(k.strategy.Kind(), func(t *testing.T) {
			store := generic.New(generic.Options{Strategy: k.strategy, Storage: memory.New(clk), Clock: clk})
			gvk := k.strategy.Resource().GroupVersion().WithKind(k.strategy.Kind())
			tc, err := generic.TypeConverter(gvk, schemaExample(k.strategy))
			if err != nil {
				t.Fatal(err)
			}
			safe := generic.TypesWithoutValidation(store)
			failed := 0
			for seed := range int64(1000) {
				obj := k.strategy.New()
				filler(seed).Fill(obj)
				obj.GetObjectKind().SetGroupVersionKind(gvk)
				if _, err := tc.ObjectToTyped(obj, typed.AllowDuplicates); err != nil {
					if safe {
						t.Fatalf("a kind typed without validation fails it: %v", err)
					}
					failed++
				}
			}
			if !safe {
				unsafe++
				if failed == 0 {
					t.Errorf("not typed without validation, yet none of 1000 random objects fails it")
				}
			}
			t.Logf("typed without validation: %v; of 1000 random objects, %d fail it", safe, failed)
		})
	}
	if unsafe == 0 {
		t.Error("every served kind is typed without validation: the test of the others tests nothing")
	}
}
