package endpoints

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"

	restful "github.com/emicklei/go-restful/v3"
	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"orch.io/orch/components/apiserver/registry/generic"
)

// Resource is one resource served from a generic store.
type Resource struct {
	Store *generic.Store
	// Status, when set, serves <resource>/status: a view of Store whose updates change only status.
	Status *generic.Store
	// Views, like Status, serve <resource>/<subresource> (get, update, patch) for other views of
	// Store made by WithUpdates: pods/ephemeralcontainers.
	Views []*generic.Store
	// Subresources are served beside status: pods/binding, pods/eviction, namespaces/finalize.
	Subresources []Subresource
	Singular     string
	ShortNames   []string
	// SelectableFields are the field-selector keys lists and watches accept.
	SelectableFields []string
}

// Subresource is an operation on one object other than status.
type Subresource struct {
	Name string
	// Method is POST (binding, eviction) or PUT (finalize).
	Method string
	// Methods, when set, are served instead of Method: the connect subresources (exec, attach,
	// portforward, proxy) take several.
	Methods []string
	// Subpath serves <name>/{path:*} below the subresource too, as nodes/proxy does.
	Subpath bool
	Verbs   []string
	Kind    string
	// Group and Version, when set, are those of Kind, of another group than the resource's
	// (serviceaccounts/token takes an authentication.orch.io/v1 TokenRequest), as discovery says.
	Group, Version string
	Handler        func(req *restful.Request, resp *restful.Response)
}

// GroupVersion serves the resources of one group version.
type GroupVersion struct {
	GroupVersion schema.GroupVersion
	Resources    []Resource
}

// Path is where the group version is served: /api/v1 for the core group, /apis/<group>/<version>.
func (g GroupVersion) Path() string {
	if g.GroupVersion.Group == "" {
		return "/api/" + g.GroupVersion.Version
	}
	return "/apis/" + g.GroupVersion.String()
}

// APIResourceList is the discovery document of the group version.
func (g GroupVersion) APIResourceList() *metav1.APIResourceList {
	list := &metav1.APIResourceList{
		TypeMeta:     metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"},
		GroupVersion: g.GroupVersion.String(),
		APIResources: []metav1.APIResource{},
	}
	for _, r := range g.Resources {
		s := r.Store.Strategy()
		name := s.Resource().Resource
		namespaced := s.NamespaceScoped()
		verbs := metav1.Verbs{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}
		list.APIResources = append(list.APIResources, metav1.APIResource{
			Name: name, SingularName: r.Singular, Namespaced: namespaced, Kind: s.Kind(), Verbs: verbs,
			ShortNames: r.ShortNames, StorageVersionHash: storageVersionHash(s.Kind(), g.GroupVersion.Version),
		})
		if r.Status != nil {
			list.APIResources = append(list.APIResources, metav1.APIResource{
				Name: name + "/status", Namespaced: namespaced, Kind: s.Kind(), Verbs: metav1.Verbs{"get", "patch", "update"},
			})
		}
		for _, v := range r.Views {
			list.APIResources = append(list.APIResources, metav1.APIResource{
				Name: name + "/" + v.Subresource(), Namespaced: namespaced, Kind: s.Kind(), Verbs: metav1.Verbs{"get", "patch", "update"},
			})
		}
		for _, sub := range r.Subresources {
			list.APIResources = append(list.APIResources, metav1.APIResource{
				Name: name + "/" + sub.Name, Namespaced: namespaced, Kind: sub.Kind, Verbs: sub.Verbs, Group: sub.Group, Version: sub.Version,
			})
		}
	}
	return list
}

// storageVersionHash stands in for Kubernetes' opaque hash of the stored group, version and kind:
// stable and distinct per kind ("orchEventV1").
func storageVersionHash(kind, version string) string {
	return "orch" + kind + strings.ToUpper(version[:1]) + version[1:]
}

// WebService returns the web service of the group version: its discovery document and every
// operation of each resource, at Kubernetes' paths.
func (g GroupVersion) WebService(c Config) *restful.WebService {
	registerProtobuf(g)
	ws := new(restful.WebService)
	ws.Path(g.Path()).Produces("*/*")
	ws.Route(ws.GET("/").To(func(req *restful.Request, resp *restful.Response) {
		WriteObject(resp.ResponseWriter, req.Request, http.StatusOK, g.APIResourceList())
	}))
	for _, r := range g.Resources {
		h := &resourceHandlers{Resource: r, config: c}
		name := r.Store.Strategy().Resource().Resource
		collection := "/" + name
		if r.Store.Strategy().NamespaceScoped() {
			ws.Route(ws.GET(collection).To(h.listOrWatch))
			collection = "/namespaces/{namespace}/" + name
		}
		object := collection + "/{name}"
		ws.Route(ws.GET(collection).To(h.listOrWatch))
		ws.Route(ws.POST(collection).To(h.create))
		ws.Route(ws.DELETE(collection).To(h.deleteCollection))
		ws.Route(ws.GET(object).To(h.get(r.Store)))
		ws.Route(ws.PUT(object).To(h.update(r.Store)))
		ws.Route(ws.PATCH(object).To(h.patch(r.Store)))
		ws.Route(ws.DELETE(object).To(h.delete))
		if r.Status != nil {
			ws.Route(ws.GET(object + "/status").To(h.get(r.Status)))
			ws.Route(ws.PUT(object + "/status").To(h.update(r.Status)))
			ws.Route(ws.PATCH(object + "/status").To(h.patch(r.Status)))
		}
		for _, v := range r.Views {
			ws.Route(ws.GET(object + "/" + v.Subresource()).To(h.get(v)))
			ws.Route(ws.PUT(object + "/" + v.Subresource()).To(h.update(v)))
			ws.Route(ws.PATCH(object + "/" + v.Subresource()).To(h.patch(v)))
		}
		for _, sub := range r.Subresources {
			methods := sub.Methods
			if len(methods) == 0 {
				methods = []string{sub.Method}
			}
			for _, m := range methods {
				ws.Route(ws.Method(m).Path(object + "/" + sub.Name).To(sub.Handler))
				if sub.Subpath {
					ws.Route(ws.Method(m).Path(object + "/" + sub.Name + "/{path:*}").To(sub.Handler))
				}
			}
		}
	}
	return ws
}

type resourceHandlers struct {
	Resource
	config Config
}

func (h *resourceHandlers) selectable(label string) bool {
	return slices.Contains(h.SelectableFields, label)
}

func (h *resourceHandlers) gvk() schema.GroupVersionKind { return h.Store.GroupVersionKind() }

// table renders objects with the strategy's columns, each row carrying the object's metadata.
func (h *resourceHandlers) table(items []runtime.Object, meta metav1.ListMeta) (*metav1.Table, error) {
	printer, ok := h.Store.Strategy().(generic.Table)
	if !ok {
		return nil, notAcceptable()
	}
	now := h.config.Clock.Now()
	t := &metav1.Table{
		TypeMeta:          metav1.TypeMeta{Kind: "Table", APIVersion: "meta.k8s.io/v1"},
		ListMeta:          meta,
		ColumnDefinitions: printer.Columns(),
		Rows:              make([]metav1.TableRow, 0, len(items)),
	}
	for _, obj := range items {
		om, err := metaOf(obj)
		if err != nil {
			return nil, apierrors.NewInternalError(err)
		}
		partial, _ := json.Marshal(&metav1.PartialObjectMetadata{
			TypeMeta:   metav1.TypeMeta{Kind: "PartialObjectMetadata", APIVersion: "meta.k8s.io/v1"},
			ObjectMeta: *om,
		})
		t.Rows = append(t.Rows, metav1.TableRow{Cells: printer.Row(obj, now), Object: runtime.RawExtension{Raw: partial}})
	}
	return t, nil
}

// metaOf is the ObjectMeta of a typed object.
func metaOf(obj runtime.Object) (*metav1.ObjectMeta, error) {
	type hasMeta interface{ GetObjectMeta() metav1.Object }
	if m, ok := obj.(hasMeta); ok {
		if om, ok := m.GetObjectMeta().(*metav1.ObjectMeta); ok {
			return om, nil
		}
	}
	return nil, fmt.Errorf("%T has no ObjectMeta", obj)
}

func (h *resourceHandlers) respondObject(req *restful.Request, resp *restful.Response, code int, obj runtime.Object) {
	if mediaType, ok := negotiateProtobuf(req.Request); ok {
		writeProtobuf(resp.ResponseWriter, code, mediaType, obj)
		return
	}
	if format, _ := negotiate(req.Request); format == formatTable {
		om, err := metaOf(obj)
		if err != nil {
			fail(req, resp, apierrors.NewInternalError(err))
			return
		}
		t, err := h.table([]runtime.Object{obj}, metav1.ListMeta{ResourceVersion: om.ResourceVersion})
		if err != nil {
			fail(req, resp, err)
			return
		}
		respond(req, resp, code, t)
		return
	}
	respond(req, resp, code, obj)
}

func (h *resourceHandlers) get(store *generic.Store) restful.RouteFunction {
	return func(req *restful.Request, resp *restful.Response) {
		obj, err := store.Get(req.Request.Context(), req.PathParameter("namespace"), req.PathParameter("name"))
		if err != nil {
			fail(req, resp, err)
			return
		}
		h.respondObject(req, resp, http.StatusOK, obj)
	}
}

func (h *resourceHandlers) listOrWatch(req *restful.Request, resp *restful.Response) {
	watch, err := parseBool(req.Request, "watch")
	if err != nil {
		fail(req, resp, err)
		return
	}
	if watch != nil && *watch {
		h.watch(req, resp)
		return
	}
	opts, err := parseListOptions(req.Request, h.selectable)
	if err != nil {
		fail(req, resp, err)
		return
	}
	_, protobuf := negotiateProtobuf(req.Request)
	if format, ok := negotiate(req.Request); ok && format == formatJSON && !protobuf {
		list, err := h.Store.PrepareListJSON(req.Request.Context(), req.PathParameter("namespace"), opts)
		if err != nil {
			fail(req, resp, err)
			return
		}
		writeJSONList(resp.ResponseWriter, req.Request, list)
		return
	}
	list, err := h.Store.List(req.Request.Context(), req.PathParameter("namespace"), opts)
	if err != nil {
		fail(req, resp, err)
		return
	}
	if mediaType, ok := negotiateProtobuf(req.Request); ok {
		writeProtobuf(resp.ResponseWriter, http.StatusOK, mediaType, list)
		return
	}
	if format, _ := negotiate(req.Request); format == formatTable {
		lm := metav1.ListMeta{}
		if b, err := json.Marshal(list); err == nil {
			var head struct {
				Metadata metav1.ListMeta `json:"metadata"`
			}
			_ = json.Unmarshal(b, &head)
			lm = head.Metadata
		}
		t, err := h.table(generic.Items(list), lm)
		if err != nil {
			fail(req, resp, err)
			return
		}
		respond(req, resp, http.StatusOK, t)
		return
	}
	respond(req, resp, http.StatusOK, list)
}

// decode reads a create or update body under the request's fieldValidation mode.
func (h *resourceHandlers) decode(req *restful.Request, resp *restful.Response, data []byte, mode fieldValidation) (runtime.Object, error) {
	obj := h.Store.Strategy().New()
	if err := decodeObject(resp.ResponseWriter, data, mode, obj, h.gvk()); err != nil {
		return nil, err
	}
	return obj, nil
}

func (h *resourceHandlers) body(req *restful.Request, resp *restful.Response) (runtime.Object, bool, error) {
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
		obj := h.Store.Strategy().New()
		return obj, dryRun, decodeProtobuf(data, obj, h.gvk())
	}
	data, err := bodyJSON(req.Request, h.gvk().Kind)
	if err != nil {
		return nil, false, err
	}
	obj, err := h.decode(req, resp, data, mode)
	return obj, dryRun, err
}

// write reads the body of a create or update and its field manager, named by the options kind's
// fieldManager parameter; on a failure it answers it and returns nil.
func (h *resourceHandlers) write(req *restful.Request, resp *restful.Response, options string) (in runtime.Object, dryRun bool, ctx context.Context) {
	in, dryRun, err := h.body(req, resp)
	if err == nil {
		ctx, _, err = withManager(req.Request, options)
	}
	if err != nil {
		fail(req, resp, err)
		return nil, false, nil
	}
	return in, dryRun, ctx
}

func (h *resourceHandlers) create(req *restful.Request, resp *restful.Response) {
	in, dryRun, ctx := h.write(req, resp, "CreateOptions")
	if ctx == nil {
		return
	}
	out, data, err := h.Store.CreateJSON(ctx, req.PathParameter("namespace"), in, dryRun)
	if err != nil {
		fail(req, resp, err)
		return
	}
	_, protobuf := negotiateProtobuf(req.Request)
	if format, ok := negotiate(req.Request); ok && data != nil && format == formatJSON && !protobuf {
		writeJSON(resp.ResponseWriter, req.Request, http.StatusCreated, data)
		return
	}
	h.respondObject(req, resp, http.StatusCreated, out)
}

func (h *resourceHandlers) update(store *generic.Store) restful.RouteFunction {
	return func(req *restful.Request, resp *restful.Response) {
		in, dryRun, ctx := h.write(req, resp, "UpdateOptions")
		if ctx == nil {
			return
		}
		out, created, err := store.Update(ctx, req.PathParameter("namespace"), req.PathParameter("name"), in, dryRun)
		h.respondWrite(req, resp, out, created, err)
	}
}

// respondWrite answers a write that may have created its object: 201 then, 200 otherwise.
func (h *resourceHandlers) respondWrite(req *restful.Request, resp *restful.Response, out runtime.Object, created bool, err error) {
	if err != nil {
		fail(req, resp, err)
		return
	}
	code := http.StatusOK
	if created {
		code = http.StatusCreated
	}
	h.respondObject(req, resp, code, out)
}

func (h *resourceHandlers) patch(store *generic.Store) restful.RouteFunction {
	return func(req *restful.Request, resp *restful.Response) {
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
		force, err := parseBool(r, "force")
		if err != nil {
			fail(req, resp, err)
			return
		}
		if patchMediaType(r) == applyPatchType {
			h.applyPatch(store, req, resp, dryRun, mode, force)
			return
		}
		if force != nil {
			fail(req, resp, apierrors.NewInvalid(schema.GroupKind{Group: metav1.GroupName, Kind: "PatchOptions"}, "",
				field.ErrorList{field.Forbidden(field.NewPath("force"), "may not be specified for non-apply patch")}))
			return
		}
		ctx, _, err := withManager(r, "PatchOptions")
		if err != nil {
			fail(req, resp, err)
			return
		}
		apply, err := patcher(r.Header.Get("Content-Type"), h.Store.Strategy().New())
		if err != nil {
			fail(req, resp, err)
			return
		}
		patchBytes, err := readBody(r)
		if err != nil {
			fail(req, resp, err)
			return
		}
		out, err := store.Patch(ctx, req.PathParameter("namespace"), req.PathParameter("name"), func(current []byte) (runtime.Object, error) {
			patched, err := apply(current, patchBytes)
			if err != nil {
				return nil, apierrors.NewBadRequest(fmt.Sprintf("the patch could not be applied: %v", err))
			}
			return h.decode(req, resp, patched, mode)
		}, dryRun)
		if err != nil {
			fail(req, resp, err)
			return
		}
		h.respondObject(req, resp, http.StatusOK, out)
	}
}

// patcher returns the function applying a patch of contentType to a JSON document; strategic
// merge patches follow the patch strategies of schema's Go type.
func patcher(contentType string, schema any) (func(current, patch []byte) ([]byte, error), error) {
	patchType := contentType
	if i := strings.IndexByte(patchType, ';'); i >= 0 {
		patchType = strings.TrimSpace(patchType[:i])
	}
	switch patchType {
	case jsonPatchType:
		return func(current, patch []byte) ([]byte, error) {
			ops, err := jsonpatch.DecodePatch(patch)
			if err != nil {
				return nil, err
			}
			return ops.Apply(current)
		}, nil
	case mergePatchType:
		return jsonpatch.MergePatch, nil
	case strategicPatchType:
		return func(current, patch []byte) ([]byte, error) {
			return strategicpatch.StrategicMergePatch(current, patch, schema)
		}, nil
	}
	return nil, mediaTypeError(jsonPatchType + ", " + mergePatchType + ", " + strategicPatchType + ", " + applyPatchType)
}

// patchMediaType is the patch's media type without parameters.
func patchMediaType(r *http.Request) string {
	t, _, _ := strings.Cut(r.Header.Get("Content-Type"), ";")
	return strings.TrimSpace(t)
}

// deleteOptions reads a delete's parameters from its body and query.
func deleteOptions(r *http.Request) (generic.DeleteOptions, error) {
	var o generic.DeleteOptions
	dryRun, err := parseDryRun(r)
	if err != nil {
		return o, err
	}
	body, err := parseDeleteOptions(r)
	if err != nil {
		return o, err
	}
	o.DryRun = dryRun || len(body.DryRun) > 0
	if body.Preconditions != nil {
		o.UID, o.ResourceVersion = body.Preconditions.UID, body.Preconditions.ResourceVersion
	}
	o.GracePeriodSeconds = body.GracePeriodSeconds
	if v := Query(r).Get("gracePeriodSeconds"); v != "" {
		n, err := parseInt(r, "gracePeriodSeconds")
		if err != nil {
			return o, err
		}
		o.GracePeriodSeconds = &n
	}
	return o, nil
}

func (h *resourceHandlers) delete(req *restful.Request, resp *restful.Response) {
	opts, err := deleteOptions(req.Request)
	if err != nil {
		fail(req, resp, err)
		return
	}
	obj, gone, err := h.Store.Delete(req.Request.Context(), req.PathParameter("namespace"), req.PathParameter("name"), opts)
	if err != nil {
		fail(req, resp, err)
		return
	}
	returnsObject, _ := h.Store.Strategy().(generic.DeleteReturnsObject)
	if !gone || (returnsObject != nil && returnsObject.ReturnDeletedObject()) {
		h.respondObject(req, resp, http.StatusOK, obj)
		return
	}
	om, err := metaOf(obj)
	if err != nil {
		fail(req, resp, apierrors.NewInternalError(err))
		return
	}
	gvr := h.Store.Strategy().Resource()
	respond(req, resp, http.StatusOK, successStatus(&metav1.StatusDetails{Name: om.Name, Group: gvr.Group, Kind: gvr.Resource, UID: om.UID}))
}

func (h *resourceHandlers) deleteCollection(req *restful.Request, resp *restful.Response) {
	opts, err := parseListOptions(req.Request, h.selectable)
	if err != nil {
		fail(req, resp, err)
		return
	}
	d, err := deleteOptions(req.Request)
	if err != nil {
		fail(req, resp, err)
		return
	}
	list, err := h.Store.DeleteCollection(req.Request.Context(), req.PathParameter("namespace"), opts, d)
	if err != nil {
		fail(req, resp, err)
		return
	}
	respond(req, resp, http.StatusOK, list)
}

func (h *resourceHandlers) watch(req *restful.Request, resp *restful.Response) {
	r := req.Request
	opts, ctx, cancel, err := h.config.watchRequest(r, h.selectable)
	if err != nil {
		fail(req, resp, err)
		return
	}
	defer cancel()
	mediaType, protobuf := negotiateProtobuf(r)
	opts.JSON = !protobuf
	stream, err := h.Store.WatchStream(ctx, req.PathParameter("namespace"), opts)
	if err != nil {
		fail(req, resp, err)
		return
	}
	defer stream.Stop()
	if protobuf {
		streamProtobuf(resp.ResponseWriter, mediaType, stream.Next)
		return
	}
	streamFrames(resp.ResponseWriter, stream.Next, func(ev generic.WatchEvent) (watchFrame, []byte) {
		if ev.Status != nil {
			return watchFrame{Type: string(ev.Type), Object: ev.Status}, nil
		}
		return watchFrame{Type: string(ev.Type), Object: ev.Object}, ev.JSON
	})
}

// streamProtobuf writes a watch stream as Kubernetes' length-delimited protobuf frames, flushing
// whenever next would wait for the following event.
func streamProtobuf(w http.ResponseWriter, mediaType string, next func(idle func()) (generic.WatchEvent, bool)) {
	flush := startStream(w, mediaType+";stream=watch")
	for {
		ev, ok := next(flush)
		if !ok {
			return
		}
		var obj runtime.Object = ev.Object
		if ev.Status != nil {
			obj = ev.Status
		}
		frame, err := protobufWatchFrame(ev.Type, obj)
		if err != nil {
			return
		}
		if _, err := w.Write(frame); err != nil {
			return // the client left
		}
	}
}
