package server

import (
	"net/http"
	"sync"

	"github.com/emicklei/go-restful/v3"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"orch.io/orch/components/apiserver/endpoints"
)

// maxCachedRoutes bounds the selections remembered; past it the cache starts over, so paths
// naming single objects (one entry each) cannot grow it without end.
const maxCachedRoutes = 4096

// routeCache is go-restful's CurlyRouter remembering its selections. The server adds every web
// service before it serves and sets no route conditions, so the route chosen is a function of
// the method, path, Content-Type and Accept alone; CurlyRouter copies every candidate route (a
// few KiB) on each request to choose it again, 15% of the bytes a create allocates.
type routeCache struct {
	restful.CurlyRouter

	mu       sync.RWMutex
	services []*restful.WebService // the services the entries were chosen among
	entries  map[routeKey]selectedRoute
}

type routeKey struct{ method, path, contentType, accept string }

type selectedRoute struct {
	service *restful.WebService
	route   *restful.Route
}

// SelectRoute implements restful.RouteSelector. Failures are not remembered: they are rare, and
// their answer is built afresh each time.
func (c *routeCache) SelectRoute(services []*restful.WebService, r *http.Request) (*restful.WebService, *restful.Route, error) {
	key := routeKey{r.Method, r.URL.Path, r.Header.Get("Content-Type"), r.Header.Get("Accept")}
	c.mu.RLock()
	s, ok := c.entries[key]
	current := sameServices(c.services, services)
	c.mu.RUnlock()
	if ok && current {
		return s.service, s.route, nil
	}
	service, route, err := c.CurlyRouter.SelectRoute(services, r)
	if err != nil {
		return service, route, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !sameServices(c.services, services) || len(c.entries) >= maxCachedRoutes {
		c.services, c.entries = services, nil
	}
	if c.entries == nil {
		c.entries = map[routeKey]selectedRoute{}
	}
	c.entries[key] = selectedRoute{service, route}
	return service, route, nil
}

// sameServices tells whether a and b are the same services: adding or removing one changes the
// container's slice's length or array.
func sameServices(a, b []*restful.WebService) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

func notFoundPath() error {
	err := apierrors.NewGenericServerResponse(http.StatusNotFound, "", schema.GroupResource{}, "", "", 0, false)
	err.ErrStatus.Message = "the server could not find the requested resource"
	err.ErrStatus.Details = &metav1.StatusDetails{}
	return err
}

// serviceError answers go-restful's routing failures with Status bodies, as Kubernetes does.
func serviceError(se restful.ServiceError, req *restful.Request, resp *restful.Response) {
	var err error
	switch se.Code {
	case http.StatusNotFound:
		err = notFoundPath()
	case http.StatusMethodNotAllowed:
		status := apierrors.NewGenericServerResponse(http.StatusMethodNotAllowed, "", schema.GroupResource{}, "", "", 0, false)
		status.ErrStatus.Message = "the server does not allow this method on the requested resource"
		status.ErrStatus.Details = &metav1.StatusDetails{}
		err = status
	default:
		status := apierrors.NewGenericServerResponse(se.Code, "", schema.GroupResource{}, "", "", 0, false)
		status.ErrStatus.Message = se.Message
		status.ErrStatus.Details = nil
		err = status
	}
	endpoints.WriteError(resp.ResponseWriter, req.Request, err)
}
