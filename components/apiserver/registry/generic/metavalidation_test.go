package generic_test

import (
	"math/rand"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/validate/content"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"orch.io/orch/components/apiserver/registry/generic"
)

// randomName is a string near the edges of label keys, values and DNS subdomains: their
// characters and some they refuse, '/' and '.' in places, lengths about 63 and 253.
func randomName(r *rand.Rand) string {
	const alphabet = "abz09AZ-_./"
	odd := []string{" ", "\n", "\u212a", "é", "/", "..", "-", "."}
	part := func(max int) string {
		var b strings.Builder
		n := r.Intn(max + 1)
		for b.Len() < n {
			if r.Intn(40) == 0 {
				b.WriteString(odd[r.Intn(len(odd))])
			} else {
				b.WriteByte(alphabet[r.Intn(len(alphabet))])
			}
		}
		return b.String()
	}
	long := func(n int) string { return strings.Repeat("a", n) }
	switch r.Intn(8) {
	case 0:
		return part(8)
	case 1:
		return part(70)
	case 2:
		return strings.ToLower(part(20)) + "/" + part(20)
	case 3: // names at the length limit, prefixed or not
		return []string{"", "example.com/", "a/"}[r.Intn(3)] + long(62+r.Intn(3))
	case 4: // prefixes at theirs
		p := strings.Repeat(long(63)+".", 3) + long(58+r.Intn(4))
		return p + "/a"
	case 5: // well-formed labels and prefixes
		labels := make([]string, 1+r.Intn(3))
		for i := range labels {
			labels[i] = strings.Trim(strings.ToLower(strings.Map(func(c rune) rune {
				if c == '_' || c == '.' || c == '/' {
					return '-'
				}
				return c
			}, part(10))), "-")
			if labels[i] == "" {
				labels[i] = "x"
			}
		}
		return strings.Join(labels, ".") + "/" + strings.Trim(part(12), "-_./")
	case 6:
		return strings.Trim(part(12), "-_./")
	}
	return "kubernetes.io/" + part(12)
}

// The checks answer as apimachinery's, over strings made to reach every edge of the rules.
func TestLabelChecksAreApimachinerys(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	cases := []string{"", "a", "A", "a/", "/a", "a/b/c", "-a", "a-", "a.b", "A.b/c", "a..b/c", "a.-b/c",
		"example.com/" + strings.Repeat("a", 63), "example.com/" + strings.Repeat("a", 64),
		strings.Repeat("a", 253) + "/b", strings.Repeat("a", 254) + "/b", "\u212aey", "key\n"}
	for range 50000 {
		cases = append(cases, randomName(r))
	}
	valid := [3]int{}
	for _, s := range cases {
		if got, want := generic.IsLabelKey(s), len(content.IsLabelKey(s)) == 0; got != want {
			t.Errorf("IsLabelKey(%q) = %v, apimachinery finds it valid: %v", s, got, want)
		} else if got {
			valid[0]++
		}
		if got, want := generic.IsLabelValue(s), len(content.IsLabelValue(s)) == 0; got != want {
			t.Errorf("IsLabelValue(%q) = %v, apimachinery finds it valid: %v", s, got, want)
		} else if got {
			valid[1]++
		}
		if got, want := generic.IsDNS1123Subdomain(s), len(content.IsDNS1123Subdomain(s)) == 0; got != want {
			t.Errorf("IsDNS1123Subdomain(%q) = %v, apimachinery finds it valid: %v", s, got, want)
		} else if got {
			valid[2]++
		}
	}
	for i, n := range valid { // the strings reach both answers
		if n < len(cases)/50 || n > len(cases)*49/50 {
			t.Errorf("check %d found %d of %d strings valid", i, n, len(cases))
		}
	}
}

// randomMeta is an object's metadata, or a change of it, near every update rule's edge.
func randomMeta(r *rand.Rand, old *metav1.ObjectMeta) *metav1.ObjectMeta {
	pick := func(n int) bool { return r.Intn(n) == 0 }
	m := &metav1.ObjectMeta{Name: "node-1", Namespace: "ns", UID: "u1", ResourceVersion: "7", Generation: 3,
		CreationTimestamp: metav1.NewTime(time.Date(2026, 11, 30, 7, 0, 0, 0, time.UTC))}
	if old != nil {
		m = old.DeepCopy()
		if pick(2) {
			m.ManagedFields, m.OwnerReferences = nil, nil
		}
	}
	if pick(12) {
		m.Name += "x"
	}
	if pick(12) {
		m.Namespace = ""
	}
	if pick(12) {
		m.UID = types.UID("u2")
	}
	if pick(12) {
		m.ResourceVersion = ""
	}
	if pick(10) {
		m.Generation = int64(r.Intn(7) - 2)
	}
	switch r.Intn(12) {
	case 0:
		m.CreationTimestamp = metav1.NewTime(m.CreationTimestamp.Add(time.Duration(r.Intn(3)-1) * time.Nanosecond))
	case 1:
		m.CreationTimestamp = metav1.NewTime(m.CreationTimestamp.In(time.FixedZone("x", 3600)))
	case 2:
		m.CreationTimestamp = metav1.Time{}
	}
	if pick(10) {
		ts := metav1.NewTime(m.CreationTimestamp.Add(time.Minute))
		m.DeletionTimestamp = &ts
	}
	if pick(10) {
		g := int64(r.Intn(3))
		m.DeletionGracePeriodSeconds = &g
	}
	if pick(8) {
		m.Finalizers = append(m.Finalizers, []string{"example.com/f", "bad name"}[r.Intn(2)])
	}
	if pick(3) {
		m.Labels = map[string]string{}
		for range r.Intn(4) {
			m.Labels[randomName(r)] = randomName(r)
		}
		if pick(2) {
			m.Labels["kubernetes.io/hostname"] = "node-1"
		}
	}
	if pick(3) {
		m.Annotations = map[string]string{}
		for range r.Intn(3) {
			m.Annotations[randomName(r)] = "v"
		}
		if pick(10) {
			m.Annotations["a"] = strings.Repeat("v", apivalidation.TotalAnnotationSizeLimitB-r.Intn(3))
		}
	}
	if pick(3) {
		ctl := pick(2)
		m.OwnerReferences = append(m.OwnerReferences, metav1.OwnerReference{APIVersion: []string{"v1", "", "a/b/c"}[r.Intn(3)], Kind: "Node", Name: "node-1", UID: "u9", Controller: &ctl})
	}
	if pick(3) {
		m.ManagedFields = append(m.ManagedFields, metav1.ManagedFieldsEntry{Manager: []string{"orchlet", ""}[r.Intn(2)],
			Operation:  []metav1.ManagedFieldsOperationType{metav1.ManagedFieldsOperationUpdate, "Bogus"}[r.Intn(2)],
			APIVersion: "v1", FieldsType: []string{"FieldsV1", "x"}[r.Intn(2)], FieldsV1: metav1.NewFieldsV1(`{"f:status":{}}`)})
	}
	return m
}

// sortedErrors is errs in an order of their own: apimachinery reports labels and annotations in
// their map's order, which varies.
func sortedErrors(errs field.ErrorList) field.ErrorList {
	errs = slices.Clone(errs)
	slices.SortStableFunc(errs, func(a, b *field.Error) int { return strings.Compare(a.Error(), b.Error()) })
	return errs
}

// ValidateObjectMetaUpdate answers apimachinery's ValidateObjectMetaUpdate, its errors (each
// whole: origin, coverage) and nil or not, over random updates near every rule's edge, both ways of answering taken.
func TestValidateObjectMetaUpdateIsApimachinerys(t *testing.T) {
	r := rand.New(rand.NewSource(2))
	path := field.NewPath("metadata")
	fast := 0
	const n = 20000
	for range n {
		old := randomMeta(r, nil)
		next := randomMeta(r, old)
		if r.Intn(4) == 0 {
			next = old.DeepCopy() // the heartbeat's: nothing of metadata changed
		}
		want := apivalidation.ValidateObjectMetaUpdate(next, old, path)
		got := generic.ValidateObjectMetaUpdate(next, old, path)
		if (got == nil) != (want == nil) || !reflect.DeepEqual(sortedErrors(got), sortedErrors(want)) {
			t.Fatalf("ValidateObjectMetaUpdate(%+v, %+v) = %v, apimachinery %v", next, old, got, want)
		}
		if generic.MetaUpdateKeepsRules(next, old) {
			fast++
		}
	}
	if fast < n/10 || fast > n*9/10 {
		t.Errorf("%d of %d updates answered without apimachinery's rules", fast, n)
	}
}
