package core

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	restful "github.com/emicklei/go-restful/v3"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/proxy"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/streaming/pkg/httpstream/wsstream"

	"orch.io/orch/components/apiserver/endpoints"
	"orch.io/orch/components/apiserver/nodeproxy"
	"orch.io/orch/components/apiserver/registry/generic"
	translator "orch.io/orch/third_party/forked/streamproxy"
)

// ConnectREST serves the subresources that reach a pod's node through its orchlet server, as
// Kubernetes' pod and node REST do: pods/log, pods/exec, pods/attach, pods/portforward and
// nodes/proxy. Streams are proxied with apimachinery's upgrade-aware proxy; a WebSocket client
// of exec and attach speaking v5.channel.k8s.io is translated to SPDY toward the node, and one of
// port-forward tunnelling SPDY over WebSocket is untunnelled, with k8s.io/apiserver's translator
// and tunnel, so kubectl works unchanged whichever protocol it speaks.
type ConnectREST struct {
	pods, nodes *generic.Store
	client      *nodeproxy.Client
}

// NewConnectREST reaches the nodes of pods through client.
func NewConnectREST(pods, nodes *generic.Store, client *nodeproxy.Client) *ConnectREST {
	return &ConnectREST{pods: pods, nodes: nodes, client: client}
}

var upgradeMethods = []string{http.MethodGet, http.MethodPost}

// PodSubresources describe pods/log, exec, attach and portforward to the endpoints.
func (c *ConnectREST) PodSubresources() []endpoints.Subresource {
	return []endpoints.Subresource{
		{Name: "log", Method: http.MethodGet, Verbs: []string{"get"}, Kind: "Pod", Handler: c.log},
		{Name: "exec", Methods: upgradeMethods, Verbs: []string{"create", "get"}, Kind: "PodExecOptions", Handler: c.exec},
		{Name: "attach", Methods: upgradeMethods, Verbs: []string{"create", "get"}, Kind: "PodAttachOptions", Handler: c.attach},
		{Name: "portforward", Methods: upgradeMethods, Verbs: []string{"create", "get"}, Kind: "PodPortForwardOptions", Handler: c.portForward},
	}
}

// proxyMethods are Kubernetes' for nodes/proxy.
var proxyMethods = []string{"GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"}

// NodeSubresources describe nodes/proxy to the endpoints.
func (c *ConnectREST) NodeSubresources() []endpoints.Subresource {
	return []endpoints.Subresource{{Name: "proxy", Methods: proxyMethods, Subpath: true,
		Verbs: []string{"create", "delete", "get", "patch", "update"}, Kind: "NodeProxyOptions", Handler: c.nodeProxy}}
}

// pod is the pod the request names.
func (c *ConnectREST) pod(req *restful.Request) (*corev1.Pod, error) {
	obj, err := c.pods.Get(req.Request.Context(), req.PathParameter("namespace"), req.PathParameter("name"))
	if err != nil {
		return nil, err
	}
	return obj.(*corev1.Pod), nil
}

// node is the node the pod runs on, or named.
func (c *ConnectREST) node(ctx context.Context, name string) (*corev1.Node, error) {
	obj, err := c.nodes.Get(ctx, "", name)
	if err != nil {
		return nil, err
	}
	return obj.(*corev1.Node), nil
}

// containerOf picks the container a request names, or the pod's only one, with Kubernetes' errors.
func containerOf(pod *corev1.Pod, name string) (string, error) {
	if name == "" {
		if len(pod.Spec.Containers) == 1 {
			return pod.Spec.Containers[0].Name, nil
		}
		names := make([]string, 0, len(pod.Spec.Containers))
		for _, c := range pod.Spec.Containers {
			names = append(names, c.Name)
		}
		msg := fmt.Sprintf("a container name must be specified for pod %s, choose one of: %v", pod.Name, names)
		if len(pod.Spec.InitContainers) > 0 {
			inits := make([]string, 0, len(pod.Spec.InitContainers))
			for _, c := range pod.Spec.InitContainers {
				inits = append(inits, c.Name)
			}
			msg += fmt.Sprintf(" or one of the init containers: %v", inits)
		}
		return "", apierrors.NewBadRequest(msg)
	}
	for _, c := range pod.Spec.Containers {
		if c.Name == name {
			return name, nil
		}
	}
	for _, c := range pod.Spec.InitContainers {
		if c.Name == name {
			return name, nil
		}
	}
	for _, c := range pod.Spec.EphemeralContainers {
		if c.Name == name {
			return name, nil
		}
	}
	return "", apierrors.NewBadRequest(fmt.Sprintf("container %s is not valid for pod %s", name, pod.Name))
}

// location is path on the orchlet server of the pod's node.
func (c *ConnectREST) location(ctx context.Context, pod *corev1.Pod, path string, query url.Values) (*url.URL, error) {
	if pod.Spec.NodeName == "" {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("pod %s does not have a host assigned", pod.Name))
	}
	node, err := c.node(ctx, pod.Spec.NodeName)
	if err != nil {
		return nil, err
	}
	u, err := c.client.Location(node, path, query)
	if err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("node %s: %v", node.Name, err))
	}
	return u, nil
}

func (c *ConnectREST) log(req *restful.Request, resp *restful.Response) {
	r := req.Request
	opts, err := podLogOptions(r.URL.Query())
	if err != nil {
		endpoints.WriteError(resp, r, err)
		return
	}
	if errs := validatePodLogOptions(opts); len(errs) > 0 {
		endpoints.WriteError(resp, r, apierrors.NewInvalid(schema.GroupKind{Kind: "PodLogOptions"}, req.PathParameter("name"), errs))
		return
	}
	pod, err := c.pod(req)
	if err != nil {
		endpoints.WriteError(resp, r, err)
		return
	}
	container, err := containerOf(pod, opts.Container)
	if err != nil {
		endpoints.WriteError(resp, r, err)
		return
	}
	q := url.Values{}
	if opts.Follow {
		q.Set("follow", "true")
	}
	if opts.Previous {
		q.Set("previous", "true")
	}
	if opts.Timestamps {
		q.Set("timestamps", "true")
	}
	if opts.SinceSeconds != nil {
		q.Set("sinceSeconds", fmt.Sprint(*opts.SinceSeconds))
	}
	if opts.SinceTime != nil {
		q.Set("sinceTime", opts.SinceTime.UTC().Format("2006-01-02T15:04:05Z07:00"))
	}
	if opts.TailLines != nil {
		q.Set("tailLines", fmt.Sprint(*opts.TailLines))
	}
	if opts.LimitBytes != nil {
		q.Set("limitBytes", fmt.Sprint(*opts.LimitBytes))
	}
	if opts.Stream != nil {
		q.Set("stream", *opts.Stream)
	}
	u, err := c.location(r.Context(), pod, "/containerLogs/"+pod.Namespace+"/"+pod.Name+"/"+container, q)
	if err != nil {
		endpoints.WriteError(resp, r, err)
		return
	}
	c.stream(resp, r, u, pod.Name, opts.Follow)
}

// stream copies the orchlet's answer to a log request, flushing as it comes when followed; an
// answer other than 2xx is the error's message, as Kubernetes' location streamer reports it.
func (c *ConnectREST) stream(w http.ResponseWriter, r *http.Request, u *url.URL, name string, follow bool) {
	out, err := http.NewRequestWithContext(r.Context(), http.MethodGet, u.String(), nil)
	if err != nil {
		endpoints.WriteError(w, r, apierrors.NewInternalError(err))
		return
	}
	in, err := c.client.Transport().RoundTrip(out)
	if err != nil {
		endpoints.WriteError(w, r, apierrors.NewInternalError(err))
		return
	}
	defer in.Body.Close()
	if in.StatusCode < 200 || in.StatusCode > 299 {
		body, _ := io.ReadAll(io.LimitReader(in.Body, 1<<10))
		endpoints.WriteError(w, r, apierrors.NewGenericServerResponse(in.StatusCode, "", schema.GroupResource{Resource: "pods/log"}, name, strings.TrimSpace(string(body)), 0, false))
		return
	}
	w.Header().Set("Content-Type", "text/plain")
	w.WriteHeader(http.StatusOK)
	if !follow {
		io.Copy(w, in.Body)
		return
	}
	rc := http.NewResponseController(w)
	buf := make([]byte, 32<<10)
	for {
		n, err := in.Body.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return
			}
			rc.Flush()
		}
		if err != nil {
			return
		}
	}
}

// streamQuery is the orchlet's query of an exec or attach: input, output, error and tty.
func streamQuery(stdin, stdout, stderr, tty bool) url.Values {
	q := url.Values{}
	for name, on := range map[string]bool{corev1.ExecStdinParam: stdin, corev1.ExecStdoutParam: stdout, corev1.ExecStderrParam: stderr, corev1.ExecTTYParam: tty} {
		if on {
			q.Set(name, "1")
		}
	}
	return q
}

// runningPod refuses streams into a pod that has completed, as Kubernetes does.
func runningPod(pod *corev1.Pod, what string) error {
	if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return apierrors.NewBadRequest(fmt.Sprintf("cannot %s a container in a completed pod; current phase is %s", what, pod.Status.Phase))
	}
	return nil
}

func (c *ConnectREST) exec(req *restful.Request, resp *restful.Response) {
	r := req.Request
	opts := podExecOptions(r.URL.Query())
	if len(opts.Command) == 0 {
		endpoints.WriteError(resp, r, apierrors.NewBadRequest("you must specify at least 1 command"))
		return
	}
	c.connectStream(req, resp, "exec into", "/exec", opts.Container, opts.Command, opts.Stdin, opts.Stdout, opts.Stderr, opts.TTY)
}

func (c *ConnectREST) attach(req *restful.Request, resp *restful.Response) {
	r := req.Request
	opts := podAttachOptions(r.URL.Query())
	c.connectStream(req, resp, "attach to", "/attach", opts.Container, nil, opts.Stdin, opts.Stdout, opts.Stderr, opts.TTY)
}

// connectStream proxies an exec or attach to the pod's node.
func (c *ConnectREST) connectStream(req *restful.Request, resp *restful.Response, what, path, container string, command []string, stdin, stdout, stderr, tty bool) {
	r := req.Request
	if !stdin && !stdout && !stderr {
		endpoints.WriteError(resp, r, apierrors.NewBadRequest("you must specify at least 1 of stdin, stdout, stderr"))
		return
	}
	pod, err := c.pod(req)
	if err != nil {
		endpoints.WriteError(resp, r, err)
		return
	}
	if err := runningPod(pod, what); err != nil {
		endpoints.WriteError(resp, r, err)
		return
	}
	container, err = containerOf(pod, container)
	if err != nil {
		endpoints.WriteError(resp, r, err)
		return
	}
	q := streamQuery(stdin, stdout, stderr, tty)
	for _, arg := range command {
		q.Add(corev1.ExecCommandParam, arg)
	}
	u, err := c.location(r.Context(), pod, path+"/"+pod.Namespace+"/"+pod.Name+"/"+container, q)
	if err != nil {
		endpoints.WriteError(resp, r, err)
		return
	}
	transport := c.client.Transport()
	var handler http.Handler = proxy.NewUpgradeAwareHandler(u, transport, false, true, responder{})
	streams := translator.NewStreamTranslatorHandler(u, transport, 0, translator.Options{Stdin: stdin, Stdout: stdout, Stderr: stderr, Tty: tty})
	handler = translator.NewTranslatingHandler(handler, streams, wsstream.IsWebSocketRequestWithStreamCloseProtocol)
	handler.ServeHTTP(resp.ResponseWriter, r)
}

func (c *ConnectREST) portForward(req *restful.Request, resp *restful.Response) {
	r := req.Request
	opts, err := podPortForwardOptions(r.URL.Query())
	if err != nil {
		endpoints.WriteError(resp, r, err)
		return
	}
	pod, err := c.pod(req)
	if err != nil {
		endpoints.WriteError(resp, r, err)
		return
	}
	if err := runningPod(pod, "port-forward to"); err != nil {
		endpoints.WriteError(resp, r, err)
		return
	}
	q := url.Values{}
	for _, p := range opts.Ports {
		q.Add(corev1.PortHeader, fmt.Sprint(p))
	}
	u, err := c.location(r.Context(), pod, "/portForward/"+pod.Namespace+"/"+pod.Name, q)
	if err != nil {
		endpoints.WriteError(resp, r, err)
		return
	}
	var handler http.Handler = proxy.NewUpgradeAwareHandler(u, c.client.Transport(), false, true, responder{})
	handler = translator.NewTranslatingHandler(handler, translator.NewTunnelingHandler(handler), wsstream.IsWebSocketRequestWithTunnelingProtocol)
	handler.ServeHTTP(resp.ResponseWriter, r)
}

// nodeProxy proxies any request below nodes/<name>/proxy/ to that path of the node's orchlet
// server, upgrades included.
func (c *ConnectREST) nodeProxy(req *restful.Request, resp *restful.Response) {
	r := req.Request
	node, err := c.node(r.Context(), req.PathParameter("name"))
	if err != nil {
		endpoints.WriteError(resp, r, err)
		return
	}
	u, err := c.client.Location(node, "/"+req.PathParameter("path"), r.URL.Query())
	if err != nil {
		endpoints.WriteError(resp, r, apierrors.NewBadRequest(fmt.Sprintf("node %s: %v", node.Name, err)))
		return
	}
	handler := proxy.NewUpgradeAwareHandler(u, c.client.Transport(), false, false, responder{})
	handler.UseLocationHost = true
	handler.ServeHTTP(resp.ResponseWriter, r)
}

// responder answers a failed proxying with a Status.
type responder struct{}

func (responder) Error(w http.ResponseWriter, r *http.Request, err error) {
	if _, ok := err.(apierrors.APIStatus); !ok {
		err = apierrors.NewInternalError(err)
	}
	endpoints.WriteError(w, r, err)
}

// validatePodLogOptions is Kubernetes' ValidatePodLogOptions.
func validatePodLogOptions(o *corev1.PodLogOptions) field.ErrorList {
	var errs field.ErrorList
	if o.TailLines != nil && *o.TailLines < 0 {
		errs = append(errs, field.Invalid(field.NewPath("tailLines"), *o.TailLines, "must be greater than or equal to 0"))
	}
	if o.LimitBytes != nil && *o.LimitBytes < 1 {
		errs = append(errs, field.Invalid(field.NewPath("limitBytes"), *o.LimitBytes, "must be greater than 0"))
	}
	switch {
	case o.SinceSeconds != nil && o.SinceTime != nil:
		errs = append(errs, field.Forbidden(field.NewPath(""), "at most one of `sinceTime` or `sinceSeconds` may be specified"))
	case o.SinceSeconds != nil && *o.SinceSeconds < 1:
		errs = append(errs, field.Invalid(field.NewPath("sinceSeconds"), *o.SinceSeconds, "must be greater than 0"))
	}
	if o.Stream != nil {
		switch *o.Stream {
		case corev1.LogStreamAll, corev1.LogStreamStdout, corev1.LogStreamStderr:
		default:
			errs = append(errs, field.NotSupported(field.NewPath("stream"), *o.Stream, []string{corev1.LogStreamAll, corev1.LogStreamStdout, corev1.LogStreamStderr}))
		}
		if *o.Stream != corev1.LogStreamAll && o.TailLines != nil {
			errs = append(errs, field.Forbidden(field.NewPath(""), "`tailLines` and specific `stream` are mutually exclusive for now"))
		}
	}
	return errs
}
