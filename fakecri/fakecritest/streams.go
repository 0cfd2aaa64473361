package fakecritest

import (
	"bytes"
	"context"
	"net/http"
	"net/url"
	"strings"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"
)

// Stream runs the remote command (exec or attach) at u as kubectl's clients reach one: over
// SPDY (POST), or with websocket over WebSocket (GET), offering protocols (none: client-go's own,
// v5.channel.k8s.io first). stdin, when not empty, is its input; it answers what the command
// wrote and how it ended (an exec.CodeExitError for a non-zero exit), within a minute.
func Stream(cfg *rest.Config, u *url.URL, websocket bool, stdin string, protocols ...string) (stdout, stderr string, err error) {
	var e remotecommand.Executor
	switch {
	case websocket && len(protocols) > 0:
		e, err = remotecommand.NewWebSocketExecutorForProtocols(cfg, http.MethodGet, u.String(), protocols...)
	case websocket:
		e, err = remotecommand.NewWebSocketExecutor(cfg, http.MethodGet, u.String())
	default:
		e, err = remotecommand.NewSPDYExecutor(cfg, http.MethodPost, u)
	}
	if err != nil {
		return "", "", err
	}
	var out, errOut bytes.Buffer
	opts := remotecommand.StreamOptions{Stdout: &out, Stderr: &errOut}
	if stdin != "" {
		opts.Stdin = strings.NewReader(stdin)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err = e.StreamWithContext(ctx, opts)
	return out.String(), errOut.String(), err
}
