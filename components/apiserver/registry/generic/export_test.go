package generic

import (
	"reflect"

	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"orch.io/orch/components/apiserver/jsoncopy"
)

// TypeConverter is typeConverter, for the tests of package generic_test.
var TypeConverter = typeConverter

// TypeLiveWithoutManagedFields turns liveTyping on or off for every store.
func TypeLiveWithoutManagedFields(on bool) { typeLiveWithoutManagedFields = on }

// LiveTypedWithoutManagedFields is how many live objects s's updates typed without managedFields.
func LiveTypedWithoutManagedFields(s *Store) int64 {
	f, err := s.fields()
	if err != nil {
		return 0
	}
	return f.tc.typed.Load()
}

// PruneEqualFields turns the leaving out of fields equal in an update's two objects on or off.
func PruneEqualFields(on bool) { pruneEqualFields = on }

// PrunedUpdates is how many of s's updates typed their objects without a field equal in both.
func PrunedUpdates(s *Store) int64 {
	f, err := s.fields()
	if err != nil {
		return 0
	}
	return f.tc.pruned.Load()
}

// PrunableFields names, dotted by their JSON names, the fields s's updates may leave out of both
// objects when equal in the two.
func PrunableFields(s *Store) []string {
	f, err := s.fields()
	if err != nil || f.tc.tree == nil {
		return nil
	}
	var names []string
	var walk func(p *pruneTree, t reflect.Type, prefix string)
	walk = func(p *pruneTree, t reflect.Type, prefix string) {
		for _, pf := range p.fields {
			sf := t.FieldByIndex(pf.index)
			name, _, _, _, _ := jsonField(sf)
			if pf.drop {
				names = append(names, prefix+name)
			} else {
				walk(pf.sub, sf.Type, prefix+name+".")
			}
		}
	}
	walk(f.tc.tree, reflect.TypeOf(s.strategy.New()).Elem(), "")
	return names
}

// KeepDecodedCopies turns the keeping of what an update's stored bytes decode to on or off.
func KeepDecodedCopies(on bool) { keepDecodedCopies = on }

// DecodedHits is how many reads every store answered from the objects kept.
func DecodedHits() int64 { return decodedHits.Load() }

// SkipValidationOfSafeKinds turns the typing of safe kinds' updates without validation on or off.
func SkipValidationOfSafeKinds(on bool) { skipValidationOfSafeKinds = on }

// TypesWithoutValidation tells whether s's kind is one whose updates are typed without validation.
func TypesWithoutValidation(s *Store) bool {
	f, err := s.fields()
	return err == nil && f.tc.unvalidated != nil
}

// UnvalidatedTypings is how many objects every store's updates typed without validation.
func UnvalidatedTypings() int64 { return unvalidatedTypings.Load() }

// SkipOwnedUpdates turns the answering of updates that change only fields their manager alone
// owns without the library on or off.
func SkipOwnedUpdates(on bool) { skipOwnedUpdates = on }

// OwnedUpdates is how many updates every store answered without the library.
func OwnedUpdates() int64 { return ownedUpdates.Load() }

// Marshals tells a type typed through its own JSON.
var Marshals = marshals

// SpliceStoredForms turns the splice of an update's stored form on or off.
func SpliceStoredForms(on bool) { spliceStoredForms = on }

// SplicedWrites is how many stored forms every store spliced.
func SplicedWrites() int64 { return splicedWrites.Load() }

// DeepEqual is the fast path's comparison of two values of one type.
var DeepEqual = jsoncopy.Equal

// SameJSON tells whether the fast path's walk sees l and n, pointers to values of one type
// typed through their own JSON, as equal.
func SameJSON(l, n any) bool { return sameJSON(reflect.ValueOf(l), reflect.ValueOf(n)) }

// IsLabelKey, IsLabelValue and IsDNS1123Subdomain are ValidateObjectMetaUpdate's checks of a
// label's key and value and of a key's prefix.
var IsLabelKey, IsLabelValue, IsDNS1123Subdomain = isLabelKey, isLabelValue, isDNS1123Subdomain

// MetaUpdateKeepsRules is whether ValidateObjectMetaUpdate answers without apimachinery's rules.
var MetaUpdateKeepsRules = metaUpdateKeepsRules

// ItemKey is a keyed list item's path element, as the field manager's walk makes it (cached)
// and as it is made anew.
func ItemKey(item reflect.Value, keys []string) (cached, made fieldpath.PathElement, ok bool) {
	kf, ok := keyFieldsOf(item.Type(), keys)
	if !ok {
		return cached, made, false
	}
	cached, ok = cachedItemKey(item, keys, kf)
	made, ok2 := itemKey(item, keys)
	return cached, made, ok && ok2
}
