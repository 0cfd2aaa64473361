package transform

import (
	"context"
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"orch.io/orch/components/apiserver/storage"
	"orch.io/orch/components/apiserver/storage/value"
)

// KeyRoot is where every resource's keys live, in Kubernetes' layout (generic.KeyRoot):
// /registry/<resource>/... for the core group, /registry/<group>/<resource>/... for the others.
const KeyRoot = "/registry/"

// ResourceForKey is the resource a storage key belongs to. A group name always has a dot (every
// orch group is <name>.orch.io) and a resource name never does, which tells the two layouts apart.
func ResourceForKey(key string) (schema.GroupResource, error) {
	rest, ok := strings.CutPrefix(key, KeyRoot)
	first, rest, _ := strings.Cut(rest, "/")
	if ok && first != "" && !strings.Contains(first, ".") {
		return schema.GroupResource{Resource: first}, nil
	}
	resource, _, _ := strings.Cut(rest, "/")
	if !ok || first == "" || resource == "" {
		return schema.GroupResource{}, fmt.Errorf("key %q is not of the form %s<resource>/... or %s<group>/<resource>/..., from which encryption at rest tells its resource", key, KeyRoot, KeyRoot)
	}
	return schema.GroupResource{Group: first, Resource: resource}, nil
}

// Error is a value that could not be turned from or into its stored form: it names the key, its
// resource and the prefix the stored value carries, so an operator can tell which provider or key
// is missing from the configuration.
type Error struct {
	Key      string
	Resource schema.GroupResource
	// Prefix describes the stored value's prefix; empty for a write.
	Prefix string
	Err    error
}

func (e *Error) Error() string {
	if e.Prefix == "" {
		return fmt.Sprintf("unable to transform key %q of resource %q to storage: %v", e.Key, e.Resource.String(), e.Err)
	}
	return fmt.Sprintf("unable to transform key %q of resource %q, stored with prefix %s: %v", e.Key, e.Resource.String(), e.Prefix, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// Store transforms values between its callers and the store it wraps.
type Store struct {
	inner        storage.Interface
	transformers value.ResourceTransformers
}

var _ storage.Interface = (*Store)(nil)

// New wraps inner. transformers are asked on every operation, so a reloaded configuration applies
// from the next one on.
func New(inner storage.Interface, transformers value.ResourceTransformers) *Store {
	return &Store{inner: inner, transformers: transformers}
}

func (s *Store) toStorage(ctx context.Context, key string, data []byte) ([]byte, error) {
	gr, err := ResourceForKey(key)
	if err != nil {
		return nil, err
	}
	out, err := s.transformers.TransformerFor(gr).TransformToStorage(ctx, data, []byte(key))
	if err != nil {
		return nil, &Error{Key: key, Resource: gr, Err: err}
	}
	return out, nil
}

func (s *Store) fromStorage(ctx context.Context, key string, data []byte) ([]byte, bool, error) {
	gr, err := ResourceForKey(key)
	if err != nil {
		return nil, false, err
	}
	out, stale, err := s.transformers.TransformerFor(gr).TransformFromStorage(ctx, data, []byte(key))
	if err != nil {
		return nil, false, &Error{Key: key, Resource: gr, Prefix: value.DescribePrefix(data), Err: err}
	}
	return out, stale, nil
}

func (s *Store) readKV(ctx context.Context, kv *storage.KeyValue) error {
	out, stale, err := s.fromStorage(ctx, kv.Key, kv.Value)
	if err != nil {
		return err
	}
	kv.Value, kv.Stale = out, stale
	return nil
}

func (s *Store) Create(ctx context.Context, key string, data []byte, ttl time.Duration) (int64, error) {
	stored, err := s.toStorage(ctx, key, data)
	if err != nil {
		return 0, err
	}
	return s.inner.Create(ctx, key, stored, ttl)
}

func (s *Store) Get(ctx context.Context, key string) (storage.KeyValue, error) {
	kv, err := s.inner.Get(ctx, key)
	if err != nil {
		return kv, err
	}
	if err := s.readKV(ctx, &kv); err != nil {
		return storage.KeyValue{}, err
	}
	return kv, nil
}

func (s *Store) Update(ctx context.Context, key string, expectedRevision int64, data []byte, ttl time.Duration) (int64, error) {
	stored, err := s.toStorage(ctx, key, data)
	if err != nil {
		return 0, err
	}
	return s.inner.Update(ctx, key, expectedRevision, stored, ttl)
}

// Delete deletes as the wrapped store does. When the deleted value cannot be read, the key is gone
// all the same and the error says why its last value is not returned.
func (s *Store) Delete(ctx context.Context, key string, expectedRevision int64) (storage.KeyValue, int64, error) {
	kv, rev, err := s.inner.Delete(ctx, key, expectedRevision)
	if err != nil {
		return kv, rev, err
	}
	if err := s.readKV(ctx, &kv); err != nil {
		kv.Value = nil
		return kv, rev, err
	}
	return kv, rev, nil
}

// List fails as a whole when one value cannot be read, as Kubernetes' LIST does: a partial list
// would look complete.
func (s *Store) List(ctx context.Context, prefix string, opts storage.ListOptions) (storage.ListResult, error) {
	res, err := s.inner.List(ctx, prefix, opts)
	if err != nil {
		return res, err
	}
	for i := range res.Items {
		if err := s.readKV(ctx, &res.Items[i]); err != nil {
			return storage.ListResult{}, err
		}
	}
	return res, nil
}

// Watch transforms each change; a change whose value cannot be read ends the watch with that
// error, as Kubernetes' watch does.
func (s *Store) Watch(ctx context.Context, prefix string, fromRevision int64) (<-chan storage.WatchEvent, error) {
	ctx, cancel := context.WithCancel(ctx)
	changes, err := s.inner.Watch(ctx, prefix, fromRevision)
	if err != nil {
		cancel()
		return nil, err
	}
	out := make(chan storage.WatchEvent)
	go func() {
		defer close(out)
		defer cancel()
		for ev := range changes {
			if ev.Err == nil {
				ev.Err = s.readEvent(ctx, &ev)
			}
			select {
			case out <- ev:
			case <-ctx.Done():
				return
			}
			if ev.Err != nil {
				return
			}
		}
	}()
	return out, nil
}

func (s *Store) readEvent(ctx context.Context, ev *storage.WatchEvent) error {
	if err := s.readKV(ctx, &ev.KV); err != nil {
		return err
	}
	if ev.PrevValue != nil {
		prev, _, err := s.fromStorage(ctx, ev.KV.Key, ev.PrevValue)
		if err != nil {
			return err
		}
		ev.PrevValue = prev
	}
	return nil
}

func (s *Store) Revision(ctx context.Context) (int64, error) { return s.inner.Revision(ctx) }

func (s *Store) Compact(ctx context.Context, revision int64) error {
	return s.inner.Compact(ctx, revision)
}

func (s *Store) Close() error { return s.inner.Close() }
