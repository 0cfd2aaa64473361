package tracing

import (
	"context"
	"errors"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"orch.io/orch/components/apiserver/storage"
)

// tracerName names the instrumentation in exported spans.
const tracerName = "orch.io/orch/components/apiserver"

// Storage wraps a storage.Interface so each call is a span, a child of the request span its
// context carries (a root span, sampled as such, for background work).
func Storage(s storage.Interface, tp trace.TracerProvider) storage.Interface {
	return &tracedStorage{next: s, tracer: tp.Tracer(tracerName)}
}

type tracedStorage struct {
	next   storage.Interface
	tracer trace.Tracer
}

func (s *tracedStorage) start(ctx context.Context, op string, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	return s.tracer.Start(ctx, "storage."+op, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
}

// end closes span with the call's outcome. Not found, already exists and conflicts are answers,
// not failures, so only other errors mark the span as an error.
func end(span trace.Span, err error, attrs ...attribute.KeyValue) {
	span.SetAttributes(attrs...)
	if err != nil {
		span.SetAttributes(attribute.String("error", err.Error()))
		if !errors.Is(err, storage.ErrNotFound) && !errors.Is(err, storage.ErrKeyExists) && !errors.Is(err, storage.ErrConflict) {
			span.SetStatus(codes.Error, err.Error())
		}
	}
	span.End()
}

func revision(rev int64) attribute.KeyValue { return attribute.Int64("revision", rev) }

func (s *tracedStorage) Create(ctx context.Context, key string, value []byte, ttl time.Duration) (int64, error) {
	ctx, span := s.start(ctx, "Create", attribute.String("key", key), attribute.Int("size", len(value)))
	rev, err := s.next.Create(ctx, key, value, ttl)
	end(span, err, revision(rev))
	return rev, err
}

func (s *tracedStorage) Get(ctx context.Context, key string) (storage.KeyValue, error) {
	ctx, span := s.start(ctx, "Get", attribute.String("key", key))
	kv, err := s.next.Get(ctx, key)
	end(span, err, revision(kv.ModRevision))
	return kv, err
}

func (s *tracedStorage) Update(ctx context.Context, key string, expectedRevision int64, value []byte, ttl time.Duration) (int64, error) {
	ctx, span := s.start(ctx, "Update", attribute.String("key", key), attribute.Int64("expectedRevision", expectedRevision), attribute.Int("size", len(value)))
	rev, err := s.next.Update(ctx, key, expectedRevision, value, ttl)
	end(span, err, revision(rev))
	return rev, err
}

func (s *tracedStorage) Delete(ctx context.Context, key string, expectedRevision int64) (storage.KeyValue, int64, error) {
	ctx, span := s.start(ctx, "Delete", attribute.String("key", key), attribute.Int64("expectedRevision", expectedRevision))
	kv, rev, err := s.next.Delete(ctx, key, expectedRevision)
	end(span, err, revision(rev))
	return kv, rev, err
}

func (s *tracedStorage) List(ctx context.Context, prefix string, opts storage.ListOptions) (storage.ListResult, error) {
	ctx, span := s.start(ctx, "List", attribute.String("prefix", prefix), attribute.Int64("limit", opts.Limit), attribute.Int64("fromRevision", opts.Revision))
	res, err := s.next.List(ctx, prefix, opts)
	end(span, err, revision(res.Revision), attribute.Int("items", len(res.Items)))
	return res, err
}

// Watch's span covers starting the watch, not the stream, which lives as long as its reader.
func (s *tracedStorage) Watch(ctx context.Context, prefix string, fromRevision int64) (<-chan storage.WatchEvent, error) {
	ctx, span := s.start(ctx, "Watch", attribute.String("prefix", prefix), attribute.Int64("fromRevision", fromRevision))
	ch, err := s.next.Watch(ctx, prefix, fromRevision)
	end(span, err)
	return ch, err
}

func (s *tracedStorage) Revision(ctx context.Context) (int64, error) {
	ctx, span := s.start(ctx, "Revision")
	rev, err := s.next.Revision(ctx)
	end(span, err, revision(rev))
	return rev, err
}

func (s *tracedStorage) Compact(ctx context.Context, revision int64) error {
	ctx, span := s.start(ctx, "Compact", attribute.Int64("revision", revision))
	err := s.next.Compact(ctx, revision)
	end(span, err)
	return err
}

func (s *tracedStorage) Close() error { return s.next.Close() }
