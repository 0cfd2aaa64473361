package generic

// TypeConverter is typeConverter, for the tests of package generic_test.
var TypeConverter = typeConverter
