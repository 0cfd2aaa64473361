package fakecri

import (
	"context"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

type subscriber struct {
	mu     sync.Mutex
	queue  []*runtimeapi.ContainerEventResponse
	notify chan struct{}
}

// eventLocked queues an event for every GetContainerEvents stream. Events
// carry the sandbox's status and its containers' statuses at that moment,
// as containerd's do; a sandbox's own events carry its id.
func (r *Runtime) eventLocked(typ runtimeapi.ContainerEventType, id string, sb *sandbox, at time.Time) {
	if len(r.subs) == 0 {
		return
	}
	ev := &runtimeapi.ContainerEventResponse{
		ContainerId:        id,
		ContainerEventType: typ,
		CreatedAt:          ts(at),
		PodSandboxStatus:   r.sandboxStatusLocked(sb),
	}
	for _, c := range sb.containers {
		ev.ContainersStatuses = append(ev.ContainersStatuses, r.containerStatusLocked(c))
	}
	for _, s := range r.subs {
		r.pendingEvents.Add(1)
		s.mu.Lock()
		s.queue = append(s.queue, ev)
		s.mu.Unlock()
		select {
		case s.notify <- struct{}{}:
		default:
		}
	}
}

// Subscribe returns a channel of container events, for in-process use; it
// is closed when ctx ends. Events are never dropped (the queue grows).
func (r *Runtime) Subscribe(ctx context.Context) <-chan *runtimeapi.ContainerEventResponse {
	ch := make(chan *runtimeapi.ContainerEventResponse)
	s, cancel := r.subscribe()
	go func() {
		defer close(ch)
		defer cancel()
		_ = r.pump(ctx, s, func(ev *runtimeapi.ContainerEventResponse) error {
			select {
			case ch <- ev:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		})
	}()
	return ch
}

func (r *Runtime) subscribe() (*subscriber, func()) {
	s := &subscriber{notify: make(chan struct{}, 1)}
	r.mu.Lock()
	r.subSeq++
	id := r.subSeq
	r.subs[id] = s
	r.mu.Unlock()
	return s, func() {
		r.mu.Lock()
		delete(r.subs, id)
		r.mu.Unlock()
		s.mu.Lock()
		r.pendingEvents.Add(-int64(len(s.queue)))
		s.queue = nil
		s.mu.Unlock()
		r.signalChange()
	}
}

func (r *Runtime) pump(ctx context.Context, s *subscriber, send func(*runtimeapi.ContainerEventResponse) error) error {
	for {
		s.mu.Lock()
		var ev *runtimeapi.ContainerEventResponse
		if len(s.queue) > 0 {
			ev = s.queue[0]
			s.queue[0] = nil
			s.queue = s.queue[1:]
		}
		s.mu.Unlock()
		if ev != nil {
			err := send(ev)
			r.pendingEvents.Add(-1)
			r.signalChange()
			if err != nil {
				return err
			}
			continue
		}
		select {
		case <-s.notify:
		case <-ctx.Done():
			return ctx.Err()
		case <-r.closing:
			return status.Error(codes.Unavailable, "fakecri is shutting down")
		}
	}
}

// GetContainerEvents streams container (and sandbox) lifecycle events until
// the caller goes away. The stream is recorded in the call log but not
// counted in InFlight while it waits.
func (r *Runtime) GetContainerEvents(req *runtimeapi.GetEventsRequest, stream grpc.ServerStreamingServer[runtimeapi.ContainerEventResponse]) (err error) {
	ctx := stream.Context()
	cc, err := r.begin(ctx, mGetContainerEvents, req)
	defer func() { r.end(cc, err) }()
	if err != nil {
		return err
	}
	s, cancel := r.subscribe()
	defer cancel()
	// An open event stream is not work in flight: a stream waiting for events is idle.
	r.inflight.Add(-1)
	r.signalChange()
	defer r.inflight.Add(1)
	err = r.pump(ctx, s, stream.Send)
	if ctx.Err() != nil {
		err = nil
	}
	return err
}

// streamCall runs a server-streaming list RPC through faults and the call log.
func streamCall(ctx context.Context, r *Runtime, m method, req proto.Message, f func(context.Context, *callCtx) error) (err error) {
	cc, err := r.begin(ctx, m, req)
	defer func() { r.end(cc, err) }()
	if err != nil {
		return err
	}
	return f(ctx, cc)
}

// streamList runs a server-streaming list RPC: list's items, counted in the call log's answer as
// noun=N, go out in chunks through send.
func streamList[T any](ctx context.Context, r *Runtime, m method, req proto.Message, noun string, list func() []T, send func([]T) error) error {
	return streamCall(ctx, r, m, req, func(_ context.Context, cc *callCtx) error {
		items := list()
		cc.resp = countText(noun, len(items))
		return sendChunks(items, send)
	})
}

// streamChunk is how many items one stream message carries.
const streamChunk = 500

func sendChunks[T any](items []T, send func([]T) error) error {
	for len(items) > 0 {
		n := min(len(items), streamChunk)
		if err := send(items[:n]); err != nil {
			return err
		}
		items = items[n:]
	}
	return nil
}
