package openapi

import (
	"net/http"
	"strconv"
	"strings"
)

// protobufV2 is the media type client-go asks /openapi/v2 for, and protobufV2Type the one the answer
// carries: "@" is not allowed in a Content-Type, so Kubernetes writes it as a dot.
const (
	protobufV2     = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"
	protobufV2Type = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
)

// ServeHTTP answers /openapi/v2, /openapi/v3 and /openapi/v3/<group-version path>, with an ETag and
// 304 for a client that already holds the document.
func (d *Documents) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	var doc document
	contentType := "application/json"
	switch path := r.URL.Path; {
	case path == "/openapi/v2":
		doc = d.v2JSON
		if strings.Contains(r.Header.Get("Accept"), protobufV2) {
			doc, contentType = d.v2Proto, protobufV2Type
		}
		w.Header().Add("Vary", "Accept")
	case path == "/openapi/v3" || path == "/openapi/v3/":
		doc = d.v3Root
	case strings.HasPrefix(path, "/openapi/v3/"):
		var ok bool
		if doc, ok = d.v3[strings.TrimPrefix(path, "/openapi/v3/")]; !ok {
			http.NotFound(w, r)
			return
		}
		if r.URL.Query().Get("hash") == strings.Trim(doc.etag, `"`) {
			// The hash names this content for good, as Kubernetes promises.
			w.Header().Set("Cache-Control", "public, immutable")
		}
	default:
		http.NotFound(w, r)
		return
	}
	w.Header().Set("ETag", doc.etag)
	if match := r.Header.Get("If-None-Match"); match != "" && match == doc.etag {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	w.Header().Set("Content-Type", contentType)
	w.Header().Set("Content-Length", strconv.Itoa(len(doc.data)))
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodGet {
		_, _ = w.Write(doc.data)
	}
}
