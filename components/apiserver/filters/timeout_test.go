package filters

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A request still running at --request-timeout is answered 504 with Kubernetes' Status and its
// context cancelled; watches are not timed out this way.
func TestRequestTimeout(t *testing.T) {
	clk := clock.NewMock()
	h := newHeld()
	cancelled := make(chan struct{}, 1)
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r)
		if r.Context().Err() != nil {
			cancelled <- struct{}{}
		}
	})
	srv := httptest.NewServer(WithRequestTimeout(handler, clk, time.Minute))
	defer srv.Close()

	type result struct {
		code int
		body string
		err  error
	}
	done := make(chan result, 1)
	go func() {
		code, _, body, err := fetch(srv.Client(), http.MethodGet, srv.URL+"/apis/events.orch.io/v1/events")
		done <- result{code, body, err}
	}()
	<-h.entered
	clk.Add(59 * time.Second)
	select {
	case r := <-done:
		t.Fatalf("answered %d before the timeout", r.code)
	case <-time.After(50 * time.Millisecond):
	}
	clk.Add(time.Second)
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	var status metav1.Status
	if err := json.Unmarshal([]byte(r.body), &status); err != nil {
		t.Fatalf("504 body %q: %v", r.body, err)
	}
	if r.code != http.StatusGatewayTimeout || status.Code != http.StatusGatewayTimeout || status.Reason != metav1.StatusReasonTimeout ||
		status.Message != "Timeout: request did not complete within requested timeout - context deadline exceeded" {
		t.Fatalf("timed out: %d %+v", r.code, status)
	}
	select {
	case <-cancelled:
	case <-time.After(5 * time.Second):
		t.Fatal("the handler's context was not cancelled")
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/apis/events.orch.io/v1/events?watch=true", nil)
	go func() {
		if resp, err := srv.Client().Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	<-h.entered
	clk.Add(2 * time.Minute)
	select {
	case <-cancelled:
		t.Fatal("a watch was timed out")
	case <-time.After(50 * time.Millisecond):
	}
	close(h.release)
}
