package server

import (
	"bytes"
	"encoding/json"
	"io"
	"mime"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"orch.io/orch/components/apis/groups"
	"orch.io/orch/components/apiserver/endpoints"
)

// alias serves one group version orch renames also under Kubernetes' name of its group, over the
// same handlers and storage, as Kubernetes serves events under two groups: kubectl's typed
// commands (create role, auth can-i, certificate approve) post to Kubernetes' names. A request to
// /apis/<kubernetes group>/<version>/... is the same request to orch's group, with its body's
// apiVersion renamed on the way in; on the way out every "<orch group>/<version>" string of the
// answer (apiVersion, groupVersion) is renamed back. A protobuf body's envelope is renamed; answers
// are JSON, whose renaming needs no re-encoding (kubectl and client-go accept it).
type alias struct {
	orch, kubernetes schema.GroupVersion
	// in renames a body's apiVersion: JSON's "apiVersion":"<gv>" and YAML's apiVersion: <gv> line.
	inJSON, inYAML *regexp.Regexp
	// out is orch's group version as a JSON string, and back Kubernetes'.
	out, back []byte
}

// unaliased are the renamed groups not served under Kubernetes' name: with events.k8s.io served,
// kubectl reads "kubectl get events" as the core group's events, which orch does not serve.
var unaliased = []string{"events.orch.io"}

// aliasesOf are the aliases of the served group versions orch renames.
func aliasesOf(served []endpoints.GroupVersion) []alias {
	var out []alias
	for _, g := range served {
		k, ok := groups.Kubernetes(g.GroupVersion.Group)
		if !ok || slices.Contains(unaliased, g.GroupVersion.Group) {
			continue
		}
		kgv := schema.GroupVersion{Group: k, Version: g.GroupVersion.Version}
		quoted := regexp.QuoteMeta(kgv.String())
		out = append(out, alias{
			orch: g.GroupVersion, kubernetes: kgv,
			inJSON: regexp.MustCompile(`"apiVersion"\s*:\s*"` + quoted + `"`),
			inYAML: regexp.MustCompile(`(?m)^apiVersion:[ \t]*["']?` + quoted + `["']?[ \t]*$`),
			out:    []byte(strconv.Quote(g.GroupVersion.String())), back: []byte(strconv.Quote(kgv.String())),
		})
	}
	return out
}

// handler answers /apis/<kubernetes group>/<version>/... through next, orch's handler.
func (a alias) handler(next http.Handler) http.Handler {
	from, to := "/apis/"+a.kubernetes.String(), "/apis/"+a.orch.String()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r2 := r.Clone(r.Context())
		r2.URL.Path = to + strings.TrimPrefix(r.URL.Path, from)
		r2.URL.RawPath = ""
		r2.RequestURI = r2.URL.RequestURI()
		if r.Body != nil && r.Body != http.NoBody {
			data, err := io.ReadAll(r.Body)
			if err != nil {
				endpoints.WriteError(w, r, apierrors.NewBadRequest("reading the request body: "+err.Error()))
				return
			}
			if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); strings.Contains(mt, "protobuf") {
				data = a.renameProtobuf(data)
			} else {
				data = a.inJSON.ReplaceAll(data, []byte(`"apiVersion":"`+a.orch.String()+`"`))
				data = a.inYAML.ReplaceAll(data, []byte("apiVersion: "+a.orch.String()))
			}
			r2.Body, r2.ContentLength = io.NopCloser(bytes.NewReader(data)), int64(len(data))
			r2.Header.Set("Content-Length", strconv.Itoa(len(data)))
		}
		r2.Header.Set("Accept", withoutProtobuf(r.Header.Get("Accept")))
		if r.Method == http.MethodGet && strings.TrimSuffix(r2.URL.Path, "/") == to {
			a.discovery(w, r, r2, next)
			return
		}
		rw := &renamingWriter{ResponseWriter: w, from: a.out, to: a.back}
		next.ServeHTTP(rw, r2)
		rw.flushCarry()
	})
}

// protobufMagic starts Kubernetes' protobuf encoding of an object, an envelope (runtime.Unknown)
// naming its apiVersion and kind around the object's own bytes.
var protobufMagic = []byte{0x6b, 0x38, 0x73, 0x00}

// renameProtobuf renames the apiVersion of a protobuf body's envelope; a body that is not one is
// left for the decoder to refuse.
func (a alias) renameProtobuf(data []byte) []byte {
	if !bytes.HasPrefix(data, protobufMagic) {
		return data
	}
	var u runtime.Unknown
	if err := u.Unmarshal(data[len(protobufMagic):]); err != nil || u.APIVersion != a.kubernetes.String() {
		return data
	}
	u.APIVersion = a.orch.String()
	out, err := u.Marshal()
	if err != nil {
		return data
	}
	return append(slices.Clip(protobufMagic), out...)
}

// discovery answers the group version's resource list under Kubernetes' name without short names:
// kubectl would otherwise warn, on every use of one (csr), that it matches two groups.
func (a alias) discovery(w http.ResponseWriter, r, r2 *http.Request, next http.Handler) {
	rec := &recorder{header: http.Header{}, code: http.StatusOK}
	next.ServeHTTP(rec, r2)
	var list metav1.APIResourceList
	if rec.code != http.StatusOK || json.Unmarshal(rec.body.Bytes(), &list) != nil {
		for k, v := range rec.header {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.code)
		_, _ = w.Write(rec.body.Bytes())
		return
	}
	list.GroupVersion = a.kubernetes.String()
	for i := range list.APIResources {
		list.APIResources[i].ShortNames = nil
	}
	endpoints.WriteObject(w, r, http.StatusOK, &list)
}

// recorder holds an answer to rewrite it.
type recorder struct {
	header http.Header
	code   int
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header         { return r.header }
func (r *recorder) WriteHeader(code int)        { r.code = code }
func (r *recorder) Write(p []byte) (int, error) { return r.body.Write(p) }

// withoutProtobuf is an Accept header without its protobuf media types; JSON if none is left.
func withoutProtobuf(accept string) string {
	var kept []string
	for _, part := range strings.Split(accept, ",") {
		if p := strings.TrimSpace(part); p != "" && !strings.Contains(p, "protobuf") {
			kept = append(kept, p)
		}
	}
	if len(kept) == 0 {
		return "application/json"
	}
	return strings.Join(kept, ",")
}

// renamingWriter writes an answer with from renamed to. A write's last len(from)-1 bytes are held
// back until the next write or flush, so an occurrence split across two writes is renamed too; a
// flush (the end of a watch event) lets them go.
type renamingWriter struct {
	http.ResponseWriter
	from, to []byte
	carry    []byte
}

func (w *renamingWriter) WriteHeader(code int) {
	w.Header().Del("Content-Length") // renaming changes the length
	w.ResponseWriter.WriteHeader(code)
}

func (w *renamingWriter) Write(p []byte) (int, error) {
	data := bytes.ReplaceAll(append(w.carry, p...), w.from, w.to)
	keep := min(len(w.from)-1, len(data))
	w.carry = append(w.carry[:0:0], data[len(data)-keep:]...)
	if _, err := w.ResponseWriter.Write(data[:len(data)-keep]); err != nil {
		return 0, err
	}
	return len(p), nil
}

func (w *renamingWriter) flushCarry() {
	if len(w.carry) > 0 {
		_, _ = w.ResponseWriter.Write(w.carry)
		w.carry = nil
	}
}

// Flush sends what is held back and flushes: a watch flushes after each whole event.
func (w *renamingWriter) Flush() {
	w.flushCarry()
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection (a watch's deadlines).
func (w *renamingWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
