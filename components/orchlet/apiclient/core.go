package apiclient

import (
	"context"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
)

// coreCodecs hold core/v1 alone: client-go's clientset would register, and link, every API
// group, which doubled the agent's memory. They are built at the first client, so an agent without
// an API server never pays for them, and shared by every client after, as client-go's clientsets
// share scheme.Codecs (a simulated node's own codec factories were most of its clients' memory).
var coreCodecs = sync.OnceValues(func() (codecs, error) {
	scheme := runtime.NewScheme()
	if err := corev1.AddToScheme(scheme); err != nil {
		return codecs{}, err
	}
	return codecs{serializer.NewCodecFactory(scheme).WithoutConversion(), runtime.NewParameterCodec(scheme)}, nil
})

// codecs are a client's serializers and query parameter codec, read-only once built.
type codecs struct {
	serializers runtime.NegotiatedSerializer
	params      runtime.ParameterCodec
}

// CoreV1Client is the part of client-go's typed core/v1 client the agent uses, with the same
// methods, requests and errors (an *apierrors.StatusError from the server's Status).
type CoreV1Client struct {
	client *rest.RESTClient
	params runtime.ParameterCodec
	// protobuf says the client sends protobuf (UpdateNodeStatus sends Nodes kept as bytes).
	protobuf bool
	// wireAgent, when set, is the user agent protobufWire puts on the client's requests: a
	// heartbeat sent as bytes carries it and orch's media type itself, so that the wrapper passes
	// the request on rather than copying it to rename them (its Accept is orch's already). Set
	// for the heartbeat clients alone; "" when the client sends no protobuf.
	wireAgent string
}

func newCoreV1(base *rest.Config) (*CoreV1Client, error) {
	c, err := coreCodecs()
	if err != nil {
		return nil, err
	}
	cfg := rest.CopyConfig(base)
	cfg.APIPath = "/api"
	cfg.GroupVersion = &corev1.SchemeGroupVersion
	cfg.NegotiatedSerializer = c.serializers
	client, err := rest.RESTClientFor(cfg)
	if err != nil {
		return nil, err
	}
	return &CoreV1Client{client: client, params: c.params, protobuf: cfg.ContentType == k8sProtobufMediaType}, nil
}

// RESTClient is the client under the typed ones, for watches and subresources they lack.
func (c *CoreV1Client) RESTClient() rest.Interface { return c.client }

func (c *CoreV1Client) Pods(namespace string) Typed[*corev1.Pod] {
	return Typed[*corev1.Pod]{c, namespace, "pods", func() *corev1.Pod { return &corev1.Pod{} }}
}

func (c *CoreV1Client) Nodes() Typed[*corev1.Node] {
	return Typed[*corev1.Node]{c, "", "nodes", func() *corev1.Node { return &corev1.Node{} }}
}

func (c *CoreV1Client) ConfigMaps(namespace string) Typed[*corev1.ConfigMap] {
	return Typed[*corev1.ConfigMap]{c, namespace, "configmaps", func() *corev1.ConfigMap { return &corev1.ConfigMap{} }}
}

func (c *CoreV1Client) Secrets(namespace string) Typed[*corev1.Secret] {
	return Typed[*corev1.Secret]{c, namespace, "secrets", func() *corev1.Secret { return &corev1.Secret{} }}
}

func (c *CoreV1Client) ServiceAccounts(namespace string) Typed[*corev1.ServiceAccount] {
	return Typed[*corev1.ServiceAccount]{c, namespace, "serviceaccounts", func() *corev1.ServiceAccount { return &corev1.ServiceAccount{} }}
}

// Object is what Typed reads and writes.
type Object interface {
	runtime.Object
	GetName() string
}

// Typed is one resource of CoreV1Client, in one namespace (none for a cluster-scoped one); its
// methods are client-go's gentype.Client's.
type Typed[T Object] struct {
	c         *CoreV1Client
	namespace string
	resource  string
	newObject func() T
}

func (t Typed[T]) request(r *rest.Request) *rest.Request {
	return r.NamespaceIfScoped(t.namespace, t.namespace != "").Resource(t.resource)
}

func (t Typed[T]) into(ctx context.Context, r *rest.Request) (T, error) {
	out := t.newObject()
	err := r.Do(ctx).Into(out)
	return out, err
}

func (t Typed[T]) Get(ctx context.Context, name string, opts metav1.GetOptions) (T, error) {
	return t.into(ctx, t.request(t.c.client.Get()).Name(name).VersionedParams(&opts, t.c.params))
}

func (t Typed[T]) Create(ctx context.Context, obj T, opts metav1.CreateOptions) (T, error) {
	return t.into(ctx, t.request(t.c.client.Post()).VersionedParams(&opts, t.c.params).Body(obj))
}

func (t Typed[T]) Update(ctx context.Context, obj T, opts metav1.UpdateOptions) (T, error) {
	return t.into(ctx, t.request(t.c.client.Put()).Name(obj.GetName()).VersionedParams(&opts, t.c.params).Body(obj))
}

func (t Typed[T]) UpdateStatus(ctx context.Context, obj T, opts metav1.UpdateOptions) (T, error) {
	return t.into(ctx, t.request(t.c.client.Put()).Name(obj.GetName()).SubResource("status").VersionedParams(&opts, t.c.params).Body(obj))
}

func (t Typed[T]) Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error {
	return t.request(t.c.client.Delete()).Name(name).Body(&opts).Do(ctx).Error()
}

func (t Typed[T]) Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresources ...string) (T, error) {
	return t.into(ctx, t.request(t.c.client.Patch(pt)).Name(name).SubResource(subresources...).VersionedParams(&opts, t.c.params).Body(data))
}
