package generic_test

import (
	"encoding/json"
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"orch.io/orch/components/apiserver/registry/generic"
)

// checkMarshal fails t unless the store's encoding of obj is json.Marshal's, bytes and error.
func checkMarshal(t *testing.T, obj runtime.Object) {
	t.Helper()
	want, wantErr := json.Marshal(obj)
	got, err := generic.MarshalObject(obj)
	if fmt.Sprint(err) != fmt.Sprint(wantErr) || string(got) != string(want) {
		t.Fatalf("the store encodes\n%s (%v)\njson.Marshal\n%s (%v)", got, err, want, wantErr)
	}
	if again, _ := json.Marshal(obj); string(again) != string(want) {
		t.Fatalf("the object changed: %s", again)
	}
}

// The store writes managedFields' sets from a cache of their encodings: it must store what
// json.Marshal writes, for every served kind's objects filled at random (sets compact or not,
// absent, empty), twice (the second from the cache), and for sets json.Marshal refuses or
// rewrites, and metadata spelling the placeholder's key.
func TestMarshalObjectIsJSONMarshal(t *testing.T) {
	for _, k := range servedKinds() {
		t.Run(k.strategy.Kind(), func(t *testing.T) {
			for seed := range int64(300) {
				obj := k.strategy.New()
				filler(seed).Fill(obj)
				checkMarshal(t, obj)
				checkMarshal(t, obj)
			}
			for name, sets := range map[string][]string{
				"compact":             {`{"f:metadata":{"f:labels":{".":{},"f:app":{}}}}`},
				"spaced and escaped":  {"{\"f:metadata\": {\"f:labels\":\n {\"f:<a>&\": {}}}}", `{"f:spec":{}}`},
				"not JSON":            {`{"f:spec":{}}`, `{"f:spec":`},
				"CBOR":                {"\xa1\x46f:spec\xa0"},
				"a CBOR not CBOR":     {"\xa1\x46"},
				"empty, then a set":   {"", `{"f:status":{}}`},
				"the placeholder":     {"-0.0E-000", `{"f:x":{}}`},
				"a number":            {"1", `{"f:x":{}}`},
				"the same set thrice": {`{"f:x":{}}`, `{"f:x":{}}`, `{"f:x":{}}`},
			} {
				obj := k.strategy.New()
				m := accessorOf(obj)
				m.SetLabels(map[string]string{"fieldsV1": "-0.0E-000", `"fieldsV1":-0.0E-000`: "x"})
				m.SetAnnotations(map[string]string{"a": `"fieldsV1":-0.0E-000`})
				var entries []metav1.ManagedFieldsEntry
				for i, raw := range sets {
					e := metav1.ManagedFieldsEntry{Manager: fmt.Sprint("m", i), Operation: metav1.ManagedFieldsOperationUpdate, FieldsType: "FieldsV1"}
					if raw != "" {
						e.FieldsV1 = &metav1.FieldsV1{Raw: []byte(raw)}
					}
					entries = append(entries, e)
				}
				m.SetManagedFields(entries)
				t.Run(name, func(t *testing.T) { checkMarshal(t, obj) })
			}
		})
	}
}
