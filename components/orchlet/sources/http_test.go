package sources

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestHTTPSource: what a --manifest-url answer becomes.
func TestHTTPSource(t *testing.T) {
	cases := []struct {
		name     string
		status   int
		body     string
		want     string
		problems []string // reasons, in order
		errText  string
	}{
		{name: "one pod in YAML", status: 200, body: podYAML("web", "nginx"), want: "ADD http default/web-node-a\n"},
		{name: "one pod in JSON", status: 200, body: podJSON("web", "nginx"), want: "ADD http default/web-node-a\n"},
		{
			name: "PodList", status: 200,
			body: `{"apiVersion":"v1","kind":"PodList","items":[` + podJSON("b", "x") + `,{"metadata":{"name":"a"},"spec":{"containers":[{"name":"c","image":"x"}]}}]}`,
			want: "ADD http default/a-node-a\nADD http default/b-node-a\n",
		},
		{
			name: "List of pods in YAML", status: 200,
			body: "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Pod\n  metadata:\n    name: a\n  spec:\n    containers:\n    - name: c\n      image: x\n",
			want: "ADD http default/a-node-a\n",
		},
		{name: "empty PodList", status: 200, body: `{"apiVersion":"v1","kind":"PodList","items":[]}`},
		{name: "empty body is an empty source", status: 200, body: ""},
		{
			name: "a List item that is not a pod", status: 200,
			body:     `{"apiVersion":"v1","kind":"List","items":[` + podJSON("a", "x") + `,{"apiVersion":"v1","kind":"Service","metadata":{"name":"s"}}]}`,
			problems: []string{ReasonInvalidManifest}, errText: `items[1].kind: "Service" is not Pod`,
		},
		{
			name: "an invalid item rejects the document", status: 200,
			body:     `{"apiVersion":"v1","kind":"PodList","items":[` + podJSON("a", "x") + `,{"metadata":{"name":"b"},"spec":{"containers":[]}}]}`,
			problems: []string{ReasonInvalidManifest}, errText: "items[1].spec.containers: at least one container is required",
		},
		{name: "not found", status: 404, body: podYAML("web", "nginx"), problems: []string{ReasonReadFailed}, errText: "404 Not Found"},
		{name: "wrong kind", status: 200, body: `{"apiVersion":"v1","kind":"Node"}`, problems: []string{ReasonInvalidManifest}, errText: `kind: "Node" is not Pod, PodList or List`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(tc.status)
				w.Write([]byte(tc.body))
			}))
			defer srv.Close()
			r := &problems{}
			s := mustNew(t, newMock(), r, Poll{Source: &HTTPSource{Client: srv.Client(), URL: srv.URL}, Every: 20 * time.Second})
			s.Step(context.Background())
			if got := lines(s.Drain()); got != tc.want {
				t.Errorf("updates:\n%s\nwant:\n%s", got, tc.want)
			}
			var reasons []string
			for _, p := range r.got {
				reasons = append(reasons, p.Reason)
			}
			if !slices.Equal(reasons, tc.problems) {
				t.Fatalf("problems %v, want %v", r.got, tc.problems)
			}
			if tc.errText != "" && !strings.Contains(r.got[0].Err.Error(), tc.errText) {
				t.Errorf("error %q does not say %q", r.got[0].Err, tc.errText)
			}
		})
	}
}

// TestHTTPHeaders: every --manifest-url-header value is sent, same-name values in the order given.
func TestHTTPHeaders(t *testing.T) {
	var got http.Header
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.Header.Clone()
		w.Write([]byte(podYAML("web", "nginx")))
	}))
	defer srv.Close()
	header := map[string][]string{
		"X-Token":  {"t1"},
		"X-Repeat": {"first", "second", "third"},
		"accept":   {"application/yaml", "application/json"},
	}
	s := mustNew(t, newMock(), &problems{}, Poll{Source: &HTTPSource{Client: srv.Client(), URL: srv.URL, Header: header}, Every: 20 * time.Second})
	s.Step(context.Background())
	cases := []struct {
		name string
		want []string
	}{
		{"X-Token", []string{"t1"}},
		{"X-Repeat", []string{"first", "second", "third"}},
		{"Accept", []string{"application/yaml", "application/json"}},
	}
	for _, tc := range cases {
		if !slices.Equal(got[tc.name], tc.want) {
			t.Errorf("header %s = %q, want %q", tc.name, got[tc.name], tc.want)
		}
	}
}

// TestHTTPFailureKeepsPods: an unreachable or failing URL leaves the HTTP pods as they were.
func TestHTTPFailureKeepsPods(t *testing.T) {
	status := 200
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(status)
		w.Write([]byte(podYAML("web", "nginx")))
	}))
	defer srv.Close()
	clk := newMock()
	r := &problems{}
	s := mustNew(t, clk, r, Poll{Source: &HTTPSource{Client: srv.Client(), URL: srv.URL}, Every: 20 * time.Second})
	s.Step(context.Background())
	s.Drain()
	status = 500
	clk.Add(20 * time.Second)
	s.Step(context.Background())
	if got := s.Drain(); len(got) != 0 || len(s.Snapshot()) != 1 {
		t.Errorf("a failing URL changed the state: %s", lines(got))
	}
	if len(r.got) != 1 || r.got[0].Reason != ReasonReadFailed || !strings.Contains(r.got[0].Err.Error(), "500 Internal Server Error") {
		t.Errorf("reported %v", r.got)
	}
}
