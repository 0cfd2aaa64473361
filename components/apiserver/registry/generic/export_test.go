package generic

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
