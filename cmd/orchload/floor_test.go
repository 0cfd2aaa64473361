package main

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// The floor answers a create as an API server would, 201 with the object, over HTTP/2 as Go
// serves it; anything else gets 200, so readiness and counts answer.
func TestFloorHandler(t *testing.T) {
	srv := httptest.NewUnstartedServer(floorHandler())
	srv.EnableHTTP2 = true
	srv.StartTLS()
	defer srv.Close()
	c := srv.Client()
	body := newEventTemplate("events.orch.io", "ns").newEvent("e-1", 1, standInTime)
	resp, err := c.Post(srv.URL+"/apis/events.orch.io/v1/namespaces/ns/events", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated || resp.ProtoMajor != 2 || !bytes.Equal(got, body) {
		t.Errorf("POST answered %d over HTTP/%d with %d bytes; want 201 over HTTP/2 with the %d sent", resp.StatusCode, resp.ProtoMajor, len(got), len(body))
	}
	resp, err = c.Get(srv.URL + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	got, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(got), `"items":[]`) {
		t.Errorf("GET answered %d: %s", resp.StatusCode, got)
	}
}

func TestFloorOptions(t *testing.T) {
	base := options{clients: 8, listRuns: 1, watchers: 1, watchEvents: 1, duration: 1, watchRate: 1}
	for _, tc := range []struct {
		name string
		tune func(*options)
		want string
	}{
		{"creates only", func(o *options) { o.floor, o.only = true, []string{"create"} }, ""},
		{"every benchmark", func(o *options) { o.floor, o.only = true, []string{"create", "list", "watch"} }, "--floor measures creates only"},
		{"with --start", func(o *options) { o.floor, o.start, o.only = true, true, []string{"create"} }, "exactly one of"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := base
			tc.tune(&o)
			err := o.validate()
			if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
				t.Errorf("validate = %v, want %q", err, tc.want)
			}
		})
	}
}
