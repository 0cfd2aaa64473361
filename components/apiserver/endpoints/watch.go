package endpoints

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"orch.io/orch/components/apiserver/registry/generic"
)

// watchFrame is one line of a watch stream, as Kubernetes writes it.
type watchFrame struct {
	Type   string `json:"type"`
	Object any    `json:"object"`
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
		// Not a goroutine per watch: an idle watch should cost as little as it can.
		stop := context.AfterFunc(c.Stopping, cancel)
		cancelTimeout := cancel
		cancel = func() {
			stop()
			cancelTimeout()
		}
	}
	return generic.WatchOptions{
		ListOptions: opts, AllowBookmarks: bookmarks != nil && *bookmarks, SendInitialEvents: sendInitial,
		BookmarkInterval: c.BookmarkInterval,
	}, ctx, cancel, nil
}

// streamFrames writes a watch stream as newline-delimited JSON frames over a chunked response,
// flushing whenever next would wait for the following event. A frame whose object comes already
// encoded (raw) is written around it, not encoded again.
func streamFrames[T any](w http.ResponseWriter, next func(idle func()) (T, bool), frame func(T) (watchFrame, []byte)) {
	flush := startStream(w, "application/json")
	enc := json.NewEncoder(w)
	var buf []byte
	for {
		ev, ok := next(flush)
		if !ok {
			return
		}
		f, raw := frame(ev)
		var err error
		if raw != nil {
			buf = append(append(append(buf[:0], `{"type":"`...), f.Type...), `","object":`...)
			buf = append(append(buf, raw...), "}\n"...)
			_, err = w.Write(buf)
		} else {
			err = enc.Encode(&f)
		}
		if err != nil {
			return // the client left
		}
	}
}

// startStream sends a watch response's headers at once and answers the function that flushes
// what was written since (nil when w cannot flush).
func startStream(w http.ResponseWriter, contentType string) func() {
	flusher, _ := w.(http.Flusher)
	w.Header().Set("Content-Type", contentType)
	w.Header().Set("Cache-Control", "no-cache, private")
	w.WriteHeader(http.StatusOK)
	if flusher == nil {
		return nil
	}
	flusher.Flush()
	return flusher.Flush
}
