package storage

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Errors every implementation returns, so the API layer can map them to Status answers.
var (
	ErrNotFound  = errors.New("storage: key not found")
	ErrKeyExists = errors.New("storage: key already exists")
	// ErrConflict: a conditional write found another revision than the one it expected.
	ErrConflict = errors.New("storage: revision conflict")
	// ErrCompacted: the revision asked for is older than the history the store still keeps.
	ErrCompacted = errors.New("storage: revision compacted")
	// ErrFutureRevision: the revision asked for is newer than anything the store has written.
	ErrFutureRevision = errors.New("storage: revision not yet written")
	// ErrWatcherTooSlow: a watcher let too many events pile up unread and was dropped so that writers
	// never wait for it. It is only ever the Err of a watch's last event; the watcher may resume with a
	// new Watch from the last revision it saw (as long as that revision is not compacted).
	ErrWatcherTooSlow = errors.New("storage: watcher fell too far behind")
	// ErrClosed: the store was closed; no operation succeeds after Close.
	ErrClosed = errors.New("storage: store closed")
)

// KeyValue is one stored object at one revision.
type KeyValue struct {
	Key   string
	Value []byte
	// CreateRevision is the revision of the write that created the key.
	CreateRevision int64
	// ModRevision is the revision of the last write to the key; it is the object's resourceVersion.
	ModRevision int64
	// Stale reports a value stored in a form this store would not write now (an encryption key or
	// provider other than the one that writes): rewriting the object must write it even when its
	// content is unchanged, which is how a key rotation moves objects to the new key.
	Stale bool
}

// ListOptions selects a page of keys under a prefix.
type ListOptions struct {
	// Revision reads the snapshot at that revision; 0 reads the latest.
	Revision int64
	// StartKey, when set, is the first key (inclusive) of the page; it must lie under the prefix.
	StartKey string
	// Limit caps the number of items; 0 means no limit.
	Limit int64
	// Packed lets a store that keeps its values packed (the watch cache) answer them in Values,
	// each unpacked when it is read, rather than all unpacked into Items at once: a LIST of
	// 100,000 events need not hold 156 MiB of them. Other stores ignore it.
	Packed bool
}

// Validate refuses options no store can answer for a list under prefix: a negative limit or
// revision, or a start key outside the prefix. Every implementation checks them first, with these
// messages, so a caller gets the same answer whichever store it has.
func (o ListOptions) Validate(prefix string) error {
	if o.Limit < 0 {
		return fmt.Errorf("storage: negative limit %d", o.Limit)
	}
	if o.Revision < 0 {
		return fmt.Errorf("storage: negative revision %d", o.Revision)
	}
	if o.StartKey != "" && !strings.HasPrefix(o.StartKey, prefix) {
		return fmt.Errorf("storage: start key %q is not under prefix %q", o.StartKey, prefix)
	}
	return nil
}

// Start is the first key a valid list under prefix reads: StartKey when set, else prefix.
func (o ListOptions) Start(prefix string) string {
	if o.StartKey != "" {
		return o.StartKey
	}
	return prefix
}

// ListResult is a page of a snapshot.
type ListResult struct {
	Items []KeyValue
	// Revision is the snapshot the page was read from; pass it back to read the next page.
	Revision int64
	// Remaining counts the keys after this page in the same snapshot; 0 when the page is the last.
	Remaining int64
	// Values, when set (only ever for a ListOptions.Packed list), holds the items' values, and the
	// Items' own Values are nil.
	Values Values
}

// Values reads the values of a page's items one at a time.
type Values interface {
	// Value appends item i's value to dst. The same item reads the same value every time.
	Value(i int, dst []byte) ([]byte, error)
}

// EventType says what a watch event reports.
type EventType int

const (
	// Put reports a created or updated key; Created tells which.
	Put EventType = iota + 1
	// Delete reports a removed key, whether deleted by a caller or expired.
	Delete
)

// WatchEvent is one change seen by a watch. For Delete, KV holds the key and the last value, with
// ModRevision set to the revision of the deletion. An event with Err set is the last on its channel:
// the watch ended abnormally (ErrCompacted when the watcher fell behind the kept history).
type WatchEvent struct {
	Type    EventType
	Created bool
	KV      KeyValue
	// PrevValue is, for a Put that updated a key, the value it replaced, so a watcher filtering on
	// content can tell an object entering or leaving its selection; nil otherwise.
	PrevValue []byte
	Err       error
}

// Interface is a versioned, ordered key-value store with expiry and watch. Every write bumps one
// store-wide revision; reads can ask for a snapshot at a past revision until it is compacted.
//
// Values are read-only once passed or handed out: a store may keep the slice a write passes and
// give that same slice to every reader and watcher, so no caller changes a value it wrote or
// received, nor appends to one in place (a store that shares them hands them out without room
// past their length, so that append copies).
type Interface interface {
	// Create stores value at key if the key is absent (ErrKeyExists otherwise). A positive ttl makes
	// the key expire that long after this write. It returns the new revision.
	Create(ctx context.Context, key string, value []byte, ttl time.Duration) (int64, error)
	// Get returns the current value of key, or ErrNotFound.
	Get(ctx context.Context, key string) (KeyValue, error)
	// Update replaces the value of key if its ModRevision equals expectedRevision (ErrConflict
	// otherwise, ErrNotFound if absent). A positive ttl restarts the expiry from this write.
	Update(ctx context.Context, key string, expectedRevision int64, value []byte, ttl time.Duration) (int64, error)
	// Delete removes key if its ModRevision equals expectedRevision, or unconditionally when
	// expectedRevision is 0. It returns the deleted KeyValue and the revision of the deletion.
	Delete(ctx context.Context, key string, expectedRevision int64) (deleted KeyValue, revision int64, err error)
	// List returns keys under prefix in key order, from one consistent snapshot. Asking for a
	// compacted revision is ErrCompacted, for a revision not yet written ErrFutureRevision.
	List(ctx context.Context, prefix string, opts ListOptions) (ListResult, error)
	// Watch streams, in revision order, every change under prefix after fromRevision (0 means from
	// now). The channel closes when ctx ends or the store closes; a watch from a compacted revision
	// fails with ErrCompacted before any event.
	Watch(ctx context.Context, prefix string, fromRevision int64) (<-chan WatchEvent, error)
	// Revision returns the store's current revision.
	Revision(ctx context.Context) (int64, error)
	// Compact discards the history before revision, so older snapshots and watches are refused.
	Compact(ctx context.Context, revision int64) error
	// Close releases the store's resources; it does not delete data.
	Close() error
}
