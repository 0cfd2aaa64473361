package endpoints

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	restful "github.com/emicklei/go-restful/v3"
	"k8s.io/apimachinery/pkg/watch"

	eventsv1 "orch.io/orch/components/apis/events/v1"
	"orch.io/orch/components/apiserver/registry/events"
	"orch.io/orch/components/apiserver/registry/generic"
)

// watchFrame is one line of a watch stream, as Kubernetes writes it.
type watchFrame struct {
	Type   string `json:"type"`
	Object any    `json:"object"`
}

// watch streams changes as newline-delimited JSON frames over a chunked response until the
// client leaves, timeoutSeconds pass, or the stream ends with an ERROR frame.
func (h *handlers) watch(req *restful.Request, resp *restful.Response) {
	r := req.Request
	opts, ctx, cancel, err := h.Config.watchRequest(r, eventsv1.IsSelectableField)
	if err != nil {
		fail(req, resp, err)
		return
	}
	defer cancel()
	stream, err := h.Store.Watch(ctx, req.PathParameter("namespace"), opts)
	if err != nil {
		fail(req, resp, err)
		return
	}
	if mediaType, ok := negotiateProtobuf(r); ok {
		streamProtobuf(resp.ResponseWriter, mediaType, eventsAsGeneric(ctx, stream))
		return
	}
	streamFrames(resp.ResponseWriter, stream, func(ev events.WatchEvent) watchFrame {
		if ev.Status != nil {
			return watchFrame{Type: string(ev.Type), Object: ev.Status}
		}
		return watchFrame{Type: string(ev.Type), Object: ev.Object}
	})
}

// watchRequest reads a watch's parameters and returns the context it is served in: it ends after
// timeoutSeconds (or MinRequestTimeout and its jitter) on the injected clock, so a simulator decides
// when watches end, or when the server begins to stop.
func (c Config) watchRequest(r *http.Request, selectable func(string) bool) (generic.WatchOptions, context.Context, context.CancelFunc, error) {
	var o generic.WatchOptions
	opts, err := parseListOptions(r, selectable)
	if err != nil {
		return o, nil, nil, err
	}
	opts.Limit, opts.Continue = 0, "" // a watch has no pages
	bookmarks, err := parseBool(r, "allowWatchBookmarks")
	if err != nil {
		return o, nil, nil, err
	}
	sendInitial, err := parseBool(r, "sendInitialEvents")
	if err != nil {
		return o, nil, nil, err
	}
	timeoutSeconds, err := parseInt(r, "timeoutSeconds")
	if err != nil {
		return o, nil, nil, err
	}
	timeout := time.Duration(timeoutSeconds) * time.Second
	if timeout == 0 {
		timeout = c.MinRequestTimeout + time.Duration(c.Jitter()*float64(c.MinRequestTimeout))
	}
	if _, ok := negotiate(r); !ok && !acceptsProtobuf(r) {
		return o, nil, nil, notAcceptable()
	}
	ctx, cancel := c.Clock.WithTimeout(r.Context(), timeout)
	if c.Stopping != nil {
		go func() {
			select {
			case <-c.Stopping:
				cancel()
			case <-ctx.Done():
			}
		}()
	}
	return generic.WatchOptions{
		ListOptions: opts, AllowBookmarks: bookmarks != nil && *bookmarks, SendInitialEvents: sendInitial,
		BookmarkInterval: c.BookmarkInterval,
	}, ctx, cancel, nil
}

// streamFrames writes a watch stream as newline-delimited JSON frames over a chunked response,
// flushing whenever no further event is already waiting.
func streamFrames[T any](w http.ResponseWriter, stream <-chan T, frame func(T) watchFrame) {
	flusher, _ := w.(http.Flusher)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-cache, private")
	w.WriteHeader(http.StatusOK)
	if flusher != nil {
		flusher.Flush()
	}
	enc := json.NewEncoder(w)
	for ev := range stream {
		f := frame(ev)
		if err := enc.Encode(&f); err != nil {
			return // the client left
		}
		if flusher != nil && len(stream) == 0 {
			flusher.Flush()
		}
	}
}

// eventsAsGeneric relays an Event watch as the protobuf stream writes any resource's: each Event
// in its Kubernetes form.
func eventsAsGeneric(ctx context.Context, stream <-chan events.WatchEvent) <-chan generic.WatchEvent {
	out := make(chan generic.WatchEvent, cap(stream))
	go func() {
		defer close(out)
		for ev := range stream {
			g := generic.WatchEvent{Type: ev.Type, Status: ev.Status}
			if ev.Object != nil {
				obj, err := protobufEvent(ev.Object)
				if err != nil {
					status := ErrorStatus(err)
					g = generic.WatchEvent{Type: watch.Error, Status: status}
				} else {
					g.Object = obj
				}
			}
			select {
			case out <- g:
			case <-ctx.Done():
				return
			}
		}
	}()
	return out
}
