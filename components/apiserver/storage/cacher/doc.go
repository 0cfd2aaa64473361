// Package cacher is the API server's watch cache: a storage.Interface over another one that keeps
// one watch on a resource's prefix, holds the current objects and a window of recent changes in
// memory, and serves every watcher and every latest-revision LIST from there, so a thousand watchers
// cost the backing store one watch. Watchers are fed through queues of their own: a watcher that
// cannot keep up is dropped (ErrWatcherTooSlow) and never holds up the others. Values are kept
// compressed against a dictionary of the resource's first object (packed.go); a LIST that asks for
// them packed (storage.ListOptions.Packed) reads each value as it writes it. What the cache cannot
// answer exactly (a past revision, a key outside its prefix, a LIST while it lags behind the store)
// goes to the backing store, so every answer keeps the storage contract. A watch from a revision
// the cache has seen asks the store nothing but, when it replays the window, whether the store has
// compacted its revision; that probe and the reads of the store's current revision ("from now",
// a latest LIST) are each shared by every caller asking while one is in flight (coalesce.go).
package cacher
