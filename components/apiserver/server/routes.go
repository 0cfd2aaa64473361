package server

import (
	"encoding/binary"
	"net/http"
	"strings"
	"sync"

	"github.com/emicklei/go-restful/v3"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"orch.io/orch/components/apiserver/endpoints"
)

// maxCachedRoutes bounds the selections remembered; past it the cache starts over, so paths
// whose segments are kept literally (see routeCache.key) cannot grow it without end.
const maxCachedRoutes = 4096

// routeCache is go-restful's CurlyRouter remembering its selections. The server adds every web
// service before it serves and sets no route conditions, so the route chosen is a function of
// the method, path, Content-Type and Accept alone; CurlyRouter copies every candidate route (a
// few KiB) on each request to choose it again, 15% of the bytes a create allocates.
//
// A selection is remembered for the path's shape, not the path: a segment that is no literal
// segment of any route or service root (a name, a namespace) can only be matched by a parameter,
// whatever it says, so it is keyed as anyParam. Keyed by the path, the 10,000 nodes' status and
// lease paths overflowed the cache, and nearly every request was routed afresh.
type routeCache struct {
	restful.CurlyRouter

	mu       sync.RWMutex
	services []*restful.WebService // the services the entries and literals were made of
	// literals are the literal segments of the services' paths; nil when a route's parameter
	// has a regular expression, which tells names apart: the full path is the key then.
	literals map[string]bool
	entries  map[string]selectedRoute
}

// anyParam stands in the key for a segment only a parameter matches.
const anyParam = "{}"

type selectedRoute struct {
	service *restful.WebService
	route   *restful.Route
}

// SelectRoute implements restful.RouteSelector. Failures are not remembered: they are rare, and
// their answer is built afresh each time.
func (c *routeCache) SelectRoute(services []*restful.WebService, r *http.Request) (*restful.WebService, *restful.Route, error) {
	var buf [256]byte
	c.mu.RLock()
	current := sameServices(c.services, services)
	var s selectedRoute
	ok := false
	if current {
		key := c.key(buf[:0], r)
		s, ok = c.entries[string(key)]
	}
	c.mu.RUnlock()
	if ok {
		return s.service, s.route, nil
	}
	service, route, err := c.CurlyRouter.SelectRoute(services, r)
	if err != nil {
		return service, route, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !sameServices(c.services, services) {
		c.services, c.literals, c.entries = services, literalSegments(services), nil
	}
	if c.entries == nil || len(c.entries) >= maxCachedRoutes {
		c.entries = map[string]selectedRoute{}
	}
	c.entries[string(c.key(buf[:0], r))] = selectedRoute{service, route}
	return service, route, nil
}

// key appends to b what the selection for r depends on: the method, the path's shape (every
// segment kept but those only a parameter matches), Content-Type and Accept, each after its
// length, so no two requests' keys run together.
func (c *routeCache) key(b []byte, r *http.Request) []byte {
	b = appendPart(b, r.Method)
	if c.literals == nil {
		b = appendPart(b, r.URL.Path)
	} else {
		// The segments are counted first, for the length; a segment with a ':' may be a custom
		// verb's and an empty one matches no parameter: both are kept.
		path, n := r.URL.Path, 0
		for rest, more := path, true; more; {
			var seg string
			seg, rest, more = strings.Cut(rest, "/")
			n += len(c.segment(seg)) + 1
		}
		b = binary.AppendUvarint(b, uint64(n))
		for rest, more := path, true; more; {
			var seg string
			seg, rest, more = strings.Cut(rest, "/")
			b = append(append(b, c.segment(seg)...), '/')
		}
	}
	b = appendPart(b, r.Header.Get("Content-Type"))
	return appendPart(b, r.Header.Get("Accept"))
}

// segment is a path segment as the key has it.
func (c *routeCache) segment(seg string) string {
	if seg == "" || c.literals[seg] || strings.Contains(seg, ":") {
		return seg
	}
	return anyParam
}

func appendPart(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

// literalSegments are the segments of the services' root paths and routes' paths that are not
// parameters; nil if a parameter has a regular expression other than the wildcard ({path:*}),
// or a route has a condition, which the key cannot tell.
func literalSegments(services []*restful.WebService) map[string]bool {
	literals := map[string]bool{}
	add := func(path string) bool {
		for seg := range strings.SplitSeq(path, "/") {
			switch {
			case !strings.HasPrefix(seg, "{"):
				literals[seg] = true
			case strings.Contains(seg, ":") && !strings.HasSuffix(seg, ":*}"):
				return false
			}
		}
		return true
	}
	for _, ws := range services {
		if !add(ws.RootPath()) {
			return nil
		}
		for _, route := range ws.Routes() {
			if len(route.If) > 0 || !add(route.Path) {
				return nil
			}
		}
	}
	return literals
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
