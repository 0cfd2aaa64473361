package endpoints

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"

	"sigs.k8s.io/yaml"

	"orch.io/orch/components/apiserver/registry/generic"
)

// prettyByDefault answers command-line user agents with indented JSON, as Kubernetes does.
func prettyByDefault(r *http.Request) bool {
	ua := r.UserAgent()
	return strings.HasPrefix(ua, "curl") || strings.HasPrefix(ua, "Wget")
}

func wantsPretty(r *http.Request) bool {
	switch Query(r).Get("pretty") {
	case "true", "1":
		return true
	case "false", "0":
		return false
	}
	return prettyByDefault(r)
}

// responseFormat is what the client accepts among what orch produces.
type responseFormat int

const (
	formatJSON responseFormat = iota
	formatYAML
	formatTable
)

// negotiate reads the Accept header the way Kubernetes does: the first acceptable entry wins; an
// Accept naming nothing orch produces is refused.
func negotiate(r *http.Request) (responseFormat, bool) {
	accept := r.Header.Get("Accept")
	if accept == "" || accept == "application/json" { // what most requests send, without parsing
		return formatJSON, true
	}
	for entry := range strings.SplitSeq(accept, ",") {
		mediaType, rest, _ := strings.Cut(entry, ";")
		mediaType = strings.TrimSpace(mediaType)
		params := map[string]string{}
		for p := range strings.SplitSeq(rest, ";") {
			if k, v, ok := strings.Cut(strings.TrimSpace(p), "="); ok {
				params[k] = v
			}
		}
		switch mediaType {
		case "application/json", "application/*", "*/*", "":
			if params["as"] == "Table" {
				if params["g"] == "meta.k8s.io" && (params["v"] == "v1" || params["v"] == "v1beta1") {
					return formatTable, true
				}
				continue
			}
			if params["as"] != "" {
				continue
			}
			return formatJSON, true
		case "application/yaml":
			if params["as"] == "" {
				return formatYAML, true
			}
		}
	}
	return formatJSON, false
}

// WriteObject encodes obj as the response body in the negotiated format.
func WriteObject(w http.ResponseWriter, r *http.Request, code int, obj any) {
	data, err := json.Marshal(obj)
	if err != nil {
		code, data = http.StatusInternalServerError, []byte(`{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"encoding the response failed","reason":"InternalError","code":500}`)
	}
	if format, _ := negotiate(r); format == formatYAML {
		if y, err := yaml.JSONToYAML(data); err == nil {
			writeBody(w, code, "application/yaml", y)
			return
		}
	}
	writeJSON(w, r, code, data)
}

// writeJSON answers with an encoded JSON body, indented when the client asks for pretty output.
func writeJSON(w http.ResponseWriter, r *http.Request, code int, data []byte) {
	if wantsPretty(r) {
		var buf bytes.Buffer
		if json.Indent(&buf, data, "", "  ") == nil {
			data = buf.Bytes()
		}
	}
	writeBody(w, code, "application/json", data)
}

// writeJSONList answers with a list, written a piece at a time rather than from a copy of the
// whole body (indented output, when asked for, is made from such a copy).
func writeJSONList(w http.ResponseWriter, r *http.Request, l *generic.JSONList) {
	if wantsPretty(r) {
		var buf bytes.Buffer
		_, _ = l.WriteTo(&buf)
		writeJSON(w, r, http.StatusOK, buf.Bytes())
		return
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-cache, private")
	h.Set("Content-Length", strconv.Itoa(l.Len()+1))
	w.WriteHeader(http.StatusOK)
	if _, err := l.WriteTo(w); err == nil {
		_, _ = w.Write([]byte{'\n'})
	}
}

func writeBody(w http.ResponseWriter, code int, contentType string, data []byte) {
	h := w.Header()
	h.Set("Content-Type", contentType)
	h.Set("Cache-Control", "no-cache, private")
	h.Set("Content-Length", strconv.Itoa(len(data)+1))
	w.WriteHeader(code)
	// Two writes rather than append: a list body can be megabytes, not worth copying for a newline.
	_, _ = w.Write(data)
	_, _ = w.Write([]byte{'\n'})
}
