package endpoints

import (
	"bytes"
	"io"
	"mime"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

func TestReadBody(t *testing.T) {
	body := `{"metadata":{"name":"a"}}`
	tests := []struct {
		name          string
		body          io.Reader
		contentLength int64
		want          string
		status        int32
	}{
		{name: "declared length", body: strings.NewReader(body), contentLength: int64(len(body)), want: body},
		{name: "chunked", body: strings.NewReader(body), contentLength: -1, want: body},
		{name: "empty", body: http.NoBody, contentLength: 0, want: ""},
		{name: "shorter than declared", body: strings.NewReader(body), contentLength: int64(len(body)) + 1, status: http.StatusBadRequest},
		{name: "declared past the exact read", body: strings.NewReader(strings.Repeat("x", exactBodyBytes+1)), contentLength: exactBodyBytes + 1, want: strings.Repeat("x", exactBodyBytes+1)},
		{name: "claiming 3 MiB, sending less", body: strings.NewReader(body), contentLength: MaxRequestBodyBytes, want: body},
		{name: "chunked over the limit", body: bytes.NewReader(make([]byte, MaxRequestBodyBytes+1)), contentLength: -1, status: http.StatusRequestEntityTooLarge},
		{name: "declared over the limit", body: bytes.NewReader(make([]byte, MaxRequestBodyBytes+1)), contentLength: MaxRequestBodyBytes + 1, status: http.StatusRequestEntityTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPost, "/", tt.body)
			r.ContentLength = tt.contentLength
			got, err := readBody(r)
			if tt.status != 0 {
				if status, ok := err.(apierrors.APIStatus); !ok || status.Status().Code != tt.status {
					t.Fatalf("err = %v, want status %d", err, tt.status)
				}
				return
			}
			if err != nil || string(got) != tt.want {
				t.Fatalf("readBody = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

// The media types named without parsing are what parsing names, and the others are parsed.
func TestParseMediaType(t *testing.T) {
	for _, v := range []string{
		"application/json", "application/yaml", ProtobufMediaType, K8sProtobufMediaType,
		"application/json; charset=utf-8", "Application/JSON", " application/json ", "application/vnd.orch.protobuf;x=y",
		"application/apply-patch+yaml", "application", "application/json;", "",
	} {
		mediaType, err := parseMediaType(v)
		want, _, wantErr := mime.ParseMediaType(v)
		if mediaType != want || (err == nil) != (wantErr == nil) {
			t.Errorf("parseMediaType(%q) = %q, %v; mime.ParseMediaType: %q, %v", v, mediaType, err, want, wantErr)
		}
	}
}

// A request without a query has no parameters, unparsed; one with a query has them all.
func TestQuery(t *testing.T) {
	for _, tc := range []struct {
		target string
		want   url.Values
	}{
		{"/api/v1/nodes/n/status", nil},
		{"/api/v1/nodes/n/status?", nil},
		{"/api/v1/nodes?dryRun=All&dryRun=All&fieldManager=m", url.Values{"dryRun": {"All", "All"}, "fieldManager": {"m"}}},
		{"/api/v1/nodes?watch", url.Values{"watch": {""}}},
	} {
		r := httptest.NewRequest("GET", tc.target, nil)
		if got := Query(r); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("Query(%q) = %v, want %v", tc.target, got, tc.want)
		}
		if got, want := Query(r).Get("fieldManager"), r.URL.Query().Get("fieldManager"); got != want {
			t.Errorf("Query(%q).Get = %q, URL.Query().Get = %q", tc.target, got, want)
		}
	}
}

// The manager named by a User-Agent: printable ASCII up to the limit is the product itself, and
// anything else is what the character-by-character copy keeps.
func TestUserAgentProduct(t *testing.T) {
	long := strings.Repeat("a", fieldManagerMaxLength)
	for _, tc := range []struct{ ua, want string }{
		{"orchlet/v0.0.0 (linux/amd64)", "orchlet"},
		{"kubectl", "kubectl"},
		{"", ""},
		{"/v1", ""},
		{"my tool/1", "my tool"},
		{"~!@#/1", "~!@#"},
		{long + "/1", long},
		{long + "b/1", long},
		{"a\tb\x7fc/1", "abc"},
		{"\x00x", "x"},
		{"écrivain/2", "écrivain"},
		{"a\xffb", "a\ufffdb"},
	} {
		if got := userAgentProduct(tc.ua); got != tc.want {
			t.Errorf("userAgentProduct(%q) = %q, want %q", tc.ua, got, tc.want)
		}
	}
}
