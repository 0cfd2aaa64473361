// Package generic serves any resource from a storage.Interface, its rules given by a per-resource
// Strategy: validation, status subresource, field selectors, graceful deletion and table columns.
package generic
