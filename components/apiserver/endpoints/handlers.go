package endpoints

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/benbjohnson/clock"
	restful "github.com/emicklei/go-restful/v3"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Config wires the handlers to the world.
type Config struct {
	Clock clock.Clock
	// MinRequestTimeout bounds a watch without timeoutSeconds: it lasts between one and two times
	// this, spread by Jitter so clients do not reconnect together.
	MinRequestTimeout time.Duration
	// Jitter returns a number in [0,1); a simulator passes a seeded source.
	Jitter func() float64
	// BookmarkInterval is how often a watch that allows bookmarks gets one.
	BookmarkInterval time.Duration
	// Stopping is done when the server begins to shut down; open watches end then, as in
	// Kubernetes, so shutdown does not wait for clients to hang up.
	Stopping context.Context
}

// respond answers with obj in the negotiated format, or 406 when the client accepts none orch makes.
func respond(req *restful.Request, resp *restful.Response, code int, obj any) {
	if mediaType, ok := negotiateProtobuf(req.Request); ok {
		out, isObject := obj.(runtime.Object)
		if !isObject {
			WriteError(resp.ResponseWriter, req.Request, apierrors.NewInternalError(fmt.Errorf("%T has no protobuf form", obj)))
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
	status := apierrors.NewGenericServerResponse(http.StatusNotAcceptable, "", schema.GroupResource{}, "", "", 0, false)
	status.ErrStatus.Message = "only the following media types are accepted: application/json, application/yaml, application/vnd.orch.protobuf, application/json;as=Table;v=v1;g=meta.k8s.io"
	status.ErrStatus.Details = nil
	return status
}

func fail(req *restful.Request, resp *restful.Response, err error) {
	WriteError(resp.ResponseWriter, req.Request, err)
}

// Patch content types orch applies.
const (
	jsonPatchType      = "application/json-patch+json"
	mergePatchType     = "application/merge-patch+json"
	strategicPatchType = "application/strategic-merge-patch+json"
)
