package apiclient

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
)

// countingLimiter counts the requests it lets through.
type countingLimiter struct {
	flowcontrol.RateLimiter
	waits int
}

func (l *countingLimiter) Wait(context.Context) error { l.waits++; return nil }

// The agent's reviews share its --kube-api-qps limiter with its other requests, and reach the
// server of --orchconfig, under its path.
func TestReviewClientIsThrottled(t *testing.T) {
	var paths []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { paths = append(paths, r.URL.Path) }))
	defer srv.Close()
	limiter := &countingLimiter{}
	base, client, err := ReviewClient(&rest.Config{Host: srv.URL + "/prefix", RateLimiter: limiter})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		resp, err := client.Post(base+"/apis/x", "application/json", strings.NewReader("{}"))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	if limiter.waits != 3 || len(paths) != 3 || paths[0] != "/prefix/apis/x" {
		t.Fatalf("%d waits, paths %v; want 3 waits for 3 requests to /prefix/apis/x", limiter.waits, paths)
	}
}
