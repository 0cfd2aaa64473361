package endpoints

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"

	"sigs.k8s.io/yaml"
)

// prettyByDefault answers command-line user agents with indented JSON, as Kubernetes does.
func prettyByDefault(r *http.Request) bool {
	ua := r.UserAgent()
	return strings.HasPrefix(ua, "curl") || strings.HasPrefix(ua, "Wget")
}

func wantsPretty(r *http.Request) bool {
	switch r.URL.Query().Get("pretty") {
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
	if accept == "" {
		return formatJSON, true
	}
	for _, entry := range strings.Split(accept, ",") {
		parts := strings.Split(entry, ";")
		mediaType := strings.TrimSpace(parts[0])
		params := map[string]string{}
		for _, p := range parts[1:] {
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
	contentType := "application/json"
	if format, _ := negotiate(r); format == formatYAML {
		if y, err := yaml.JSONToYAML(data); err == nil {
			data, contentType = y, "application/yaml"
		}
	} else if wantsPretty(r) {
		var buf bytes.Buffer
		if json.Indent(&buf, data, "", "  ") == nil {
			data = buf.Bytes()
		}
	}
	h := w.Header()
	h.Set("Content-Type", contentType)
	h.Set("Cache-Control", "no-cache, private")
	w.WriteHeader(code)
	_, _ = w.Write(append(data, '\n'))
}
