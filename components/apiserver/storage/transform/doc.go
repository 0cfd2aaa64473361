// Package transform is a storage.Interface that passes each value through its resource's
// transformer (encryption at rest) on the way to and from the store it wraps.
package transform
