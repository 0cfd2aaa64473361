package endpoints

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
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
