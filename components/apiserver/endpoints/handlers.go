package endpoints

import (
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/benbjohnson/clock"
	restful "github.com/emicklei/go-restful/v3"
	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/strategicpatch"

	eventsv1 "orch.io/orch/components/apis/events/v1"
	"orch.io/orch/components/apiserver/registry/events"
)

// GroupVersionPath is where the events.orch.io/v1 operations are served.
const GroupVersionPath = "/apis/events.orch.io/v1"

// Config wires the handlers to a store and the world.
type Config struct {
	Store *events.Store
	Clock clock.Clock
	// MinRequestTimeout bounds a watch without timeoutSeconds: it lasts between one and two times
	// this, spread by Jitter so clients do not reconnect together.
	MinRequestTimeout time.Duration
	// Jitter returns a number in [0,1); a simulator passes a seeded source.
	Jitter func() float64
	// BookmarkInterval is how often a watch that allows bookmarks gets one.
	BookmarkInterval time.Duration
	// Stopping closes when the server begins to shut down; open watches end then, as in
	// Kubernetes, so shutdown does not wait for clients to hang up.
	Stopping <-chan struct{}
}

type handlers struct{ Config }

// WebService returns the events.orch.io/v1 routes: every operation of SPEC.md's Event table, plus
// the APIResourceList discovery document at the group-version root.
func WebService(c Config) *restful.WebService {
	h := &handlers{c}
	ws := new(restful.WebService)
	ws.Path(GroupVersionPath).Produces("*/*")
	ns := ws.PathParameter("namespace", "object name and auth scope, such as for teams and projects").DataType("string")
	name := ws.PathParameter("name", "name of the Event").DataType("string")

	ws.Route(ws.GET("/").To(h.discovery).Operation("getAPIResources"))
	ws.Route(ws.GET("/events").To(h.listOrWatch).Operation("listEventForAllNamespaces"))
	ws.Route(ws.GET("/namespaces/{namespace}/events").To(h.listOrWatch).Operation("listNamespacedEvent").Param(ns))
	ws.Route(ws.POST("/namespaces/{namespace}/events").To(h.create).Operation("createNamespacedEvent").Param(ns))
	ws.Route(ws.DELETE("/namespaces/{namespace}/events").To(h.deleteCollection).Operation("deleteCollectionNamespacedEvent").Param(ns))
	ws.Route(ws.GET("/namespaces/{namespace}/events/{name}").To(h.get).Operation("readNamespacedEvent").Param(ns).Param(name))
	ws.Route(ws.PUT("/namespaces/{namespace}/events/{name}").To(h.update).Operation("replaceNamespacedEvent").Param(ns).Param(name))
	ws.Route(ws.PATCH("/namespaces/{namespace}/events/{name}").To(h.patch).Operation("patchNamespacedEvent").Param(ns).Param(name))
	ws.Route(ws.DELETE("/namespaces/{namespace}/events/{name}").To(h.delete).Operation("deleteNamespacedEvent").Param(ns).Param(name))
	return ws
}

// APIResourceList is the discovery document of events.orch.io/v1.
func APIResourceList() *metav1.APIResourceList {
	return &metav1.APIResourceList{
		TypeMeta:     metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"},
		GroupVersion: eventsv1.SchemeGroupVersion.String(),
		APIResources: []metav1.APIResource{{
			Name:               "events",
			SingularName:       "event",
			Namespaced:         true,
			Kind:               "Event",
			Verbs:              metav1.Verbs{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"},
			ShortNames:         []string{"ev"},
			StorageVersionHash: "orchEventV1",
		}},
	}
}

func (h *handlers) discovery(req *restful.Request, resp *restful.Response) {
	WriteObject(resp.ResponseWriter, req.Request, http.StatusOK, APIResourceList())
}

// respond answers with obj in the negotiated format, or 406 when the client accepts none orch makes.
func respond(req *restful.Request, resp *restful.Response, code int, obj any) {
	if mediaType, ok := negotiateProtobuf(req.Request); ok {
		out, err := protobufEvent(obj)
		if err != nil {
			WriteError(resp.ResponseWriter, req.Request, apierrors.NewInternalError(err))
			return
		}
		writeProtobuf(resp.ResponseWriter, code, mediaType, out)
		return
	}
	if _, ok := negotiate(req.Request); !ok {
		WriteError(resp.ResponseWriter, req.Request, notAcceptable())
		return
	}
	WriteObject(resp.ResponseWriter, req.Request, code, obj)
}

func notAcceptable() error {
	status := apierrors.NewGenericServerResponse(http.StatusNotAcceptable, "", eventsv1.Resource, "", "", 0, false)
	status.ErrStatus.Message = "only the following media types are accepted: application/json, application/yaml, application/vnd.orch.protobuf, application/json;as=Table;v=v1;g=meta.k8s.io"
	status.ErrStatus.Details = nil
	return status
}

func fail(req *restful.Request, resp *restful.Response, err error) {
	WriteError(resp.ResponseWriter, req.Request, err)
}

func (h *handlers) get(req *restful.Request, resp *restful.Response) {
	e, err := h.Store.Get(req.Request.Context(), req.PathParameter("namespace"), req.PathParameter("name"))
	if err != nil {
		fail(req, resp, err)
		return
	}
	if format, _ := negotiate(req.Request); format == formatTable {
		respond(req, resp, http.StatusOK, h.table([]eventsv1.Event{*e}, metav1.ListMeta{ResourceVersion: e.ResourceVersion}))
		return
	}
	respond(req, resp, http.StatusOK, e)
}

func (h *handlers) listOrWatch(req *restful.Request, resp *restful.Response) {
	watch, err := parseBool(req.Request, "watch")
	if err != nil {
		fail(req, resp, err)
		return
	}
	if watch != nil && *watch {
		h.watch(req, resp)
		return
	}
	opts, err := parseListOptions(req.Request, eventsv1.IsSelectableField)
	if err != nil {
		fail(req, resp, err)
		return
	}
	_, protobuf := negotiateProtobuf(req.Request)
	format, ok := negotiate(req.Request)
	if ok && format == formatJSON && !protobuf {
		data, err := h.Store.ListJSON(req.Request.Context(), req.PathParameter("namespace"), opts)
		if err != nil {
			fail(req, resp, err)
			return
		}
		writeJSON(resp.ResponseWriter, req.Request, http.StatusOK, data)
		return
	}
	list, err := h.Store.List(req.Request.Context(), req.PathParameter("namespace"), opts)
	if err != nil {
		fail(req, resp, err)
		return
	}
	if format == formatTable {
		respond(req, resp, http.StatusOK, h.table(list.Items, list.ListMeta))
		return
	}
	respond(req, resp, http.StatusOK, list)
}

// decodeBody reads a create or update body under the request's fieldValidation mode.
func decodeBody(req *restful.Request, resp *restful.Response) (*eventsv1.Event, bool, error) {
	dryRun, err := parseDryRun(req.Request)
	if err != nil {
		return nil, false, err
	}
	mode, err := parseFieldValidation(req.Request)
	if err != nil {
		return nil, false, err
	}
	if isProtobuf(bodyMediaType(req.Request)) {
		data, err := readBody(req.Request)
		if err != nil {
			return nil, false, err
		}
		e, err := decodeProtobufEvent(data)
		return e, dryRun, err
	}
	data, err := bodyJSON(req.Request, "Event")
	if err != nil {
		return nil, false, err
	}
	e, err := decodeEvent(resp.ResponseWriter, data, mode)
	return e, dryRun, err
}

func (h *handlers) create(req *restful.Request, resp *restful.Response) {
	in, dryRun, err := decodeBody(req, resp)
	if err != nil {
		fail(req, resp, err)
		return
	}
	out, err := h.Store.Create(req.Request.Context(), req.PathParameter("namespace"), in, dryRun)
	if err != nil {
		fail(req, resp, err)
		return
	}
	respond(req, resp, http.StatusCreated, out)
}

func (h *handlers) update(req *restful.Request, resp *restful.Response) {
	in, dryRun, err := decodeBody(req, resp)
	if err != nil {
		fail(req, resp, err)
		return
	}
	out, created, err := h.Store.Update(req.Request.Context(), req.PathParameter("namespace"), req.PathParameter("name"), in, dryRun)
	if err != nil {
		fail(req, resp, err)
		return
	}
	code := http.StatusOK
	if created {
		code = http.StatusCreated
	}
	respond(req, resp, code, out)
}

// Patch content types orch applies.
const (
	jsonPatchType      = "application/json-patch+json"
	mergePatchType     = "application/merge-patch+json"
	strategicPatchType = "application/strategic-merge-patch+json"
)

func (h *handlers) patch(req *restful.Request, resp *restful.Response) {
	r := req.Request
	dryRun, err := parseDryRun(r)
	if err != nil {
		fail(req, resp, err)
		return
	}
	mode, err := parseFieldValidation(r)
	if err != nil {
		fail(req, resp, err)
		return
	}
	if _, err := parseBool(r, "force"); err != nil {
		fail(req, resp, err)
		return
	}
	patchType := r.Header.Get("Content-Type")
	if i := strings.IndexByte(patchType, ';'); i >= 0 {
		patchType = patchType[:i]
	}
	var apply func(current, patch []byte) ([]byte, error)
	switch patchType {
	case jsonPatchType:
		apply = func(current, patch []byte) ([]byte, error) {
			ops, err := jsonpatch.DecodePatch(patch)
			if err != nil {
				return nil, err
			}
			return ops.Apply(current)
		}
	case mergePatchType:
		apply = jsonpatch.MergePatch
	case strategicPatchType:
		apply = func(current, patch []byte) ([]byte, error) {
			return strategicpatch.StrategicMergePatch(current, patch, eventsv1.Event{})
		}
	default:
		fail(req, resp, mediaTypeError(jsonPatchType+", "+mergePatchType+", "+strategicPatchType))
		return
	}
	patchBytes, err := readBody(r)
	if err != nil {
		fail(req, resp, err)
		return
	}
	out, err := h.Store.Patch(r.Context(), req.PathParameter("namespace"), req.PathParameter("name"), func(current []byte) (*eventsv1.Event, error) {
		patched, err := apply(current, patchBytes)
		if err != nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("the patch could not be applied: %v", err))
		}
		return decodeEvent(resp.ResponseWriter, patched, mode)
	}, dryRun)
	if err != nil {
		fail(req, resp, err)
		return
	}
	respond(req, resp, http.StatusOK, out)
}

func (h *handlers) delete(req *restful.Request, resp *restful.Response) {
	r := req.Request
	dryRun, err := parseDryRun(r)
	if err != nil {
		fail(req, resp, err)
		return
	}
	opts, err := parseDeleteOptions(r)
	if err != nil {
		fail(req, resp, err)
		return
	}
	var pre events.Preconditions
	if opts.Preconditions != nil {
		pre.UID, pre.ResourceVersion = opts.Preconditions.UID, opts.Preconditions.ResourceVersion
	}
	gone, err := h.Store.Delete(r.Context(), req.PathParameter("namespace"), req.PathParameter("name"), pre, dryRun || len(opts.DryRun) > 0)
	if err != nil {
		fail(req, resp, err)
		return
	}
	respond(req, resp, http.StatusOK, successStatus(&metav1.StatusDetails{
		Name: gone.Name, Group: eventsv1.GroupName, Kind: eventsv1.Resource.Resource, UID: gone.UID,
	}))
}

func (h *handlers) deleteCollection(req *restful.Request, resp *restful.Response) {
	r := req.Request
	dryRun, err := parseDryRun(r)
	if err != nil {
		fail(req, resp, err)
		return
	}
	opts, err := parseListOptions(r, eventsv1.IsSelectableField)
	if err != nil {
		fail(req, resp, err)
		return
	}
	deleteOpts, err := parseDeleteOptions(r)
	if err != nil {
		fail(req, resp, err)
		return
	}
	list, err := h.Store.DeleteCollection(r.Context(), req.PathParameter("namespace"), opts, dryRun || len(deleteOpts.DryRun) > 0)
	if err != nil {
		fail(req, resp, err)
		return
	}
	respond(req, resp, http.StatusOK, list)
}
