package nodestatus

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	cri "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"

	"orch.io/orch/components/apiserver/server"
	"orch.io/orch/components/apiserver/storage/memory"
	"orch.io/orch/components/authn"
	"orch.io/orch/components/authz"
	"orch.io/orch/components/orchlet/apiclient"
	"orch.io/orch/components/orchlet/pods"
	"orch.io/orch/fakecri"
	"orch.io/orch/fakecri/fakecritest"
)

var start = time.Date(2026, 11, 25, 9, 0, 0, 0, time.UTC)

type env struct {
	// requests are the API server's, as "METHOD path", in order.
	requests *requestLog
	clk      *clock.Mock
	clients  *apiclient.Clients
	rt       cri.RuntimeService
	img      cri.ImageManagerService
}

func newEnv(t *testing.T) *env {
	t.Helper()
	return newEnvWith(t, "application/json")
}

// newEnvWith is newEnv's with clients of the content type given.
func newEnvWith(t *testing.T, contentType string) *env {
	t.Helper()
	clk := clock.NewMock()
	clk.Set(start)
	st := memory.New(clk)
	stopping := make(chan struct{})
	h, err := server.New(server.Config{Clock: clk, Storage: st, Authenticator: authn.Union(authn.Anonymous()), Authorizer: authz.AlwaysAllow(),
		MinRequestTimeout: time.Hour, Stopping: stopping})
	if err != nil {
		t.Fatal(err)
	}
	log := &requestLog{}
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		log.add(r.Method + " " + r.URL.Path)
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(func() { close(stopping); srv.Close(); _ = st.Close() })
	clients, err := apiclient.New(&rest.Config{Host: srv.URL, TLSClientConfig: rest.TLSClientConfig{Insecure: true}}, apiclient.Settings{ContentType: contentType})
	if err != nil {
		t.Fatal(err)
	}
	_, sock := fakecritest.Start(t, fakecri.Options{Seed: 1})
	rt, img, err := pods.Connect(context.Background(), sock, "", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	return &env{requests: log, clk: clk, clients: clients, rt: rt, img: img}
}

func (e *env) controller(tune ...func(*Options)) *Controller {
	o := Options{
		Clock: e.clk, Core: e.clients.Core, Heartbeat: e.clients.Heartbeat, Leases: e.clients.Leases, Node: "n1", Register: true,
		Labels:      map[string]string{"orch.io/hostname": "n1"},
		Addresses:   []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.0.0.1"}, {Type: corev1.NodeHostName, Address: "n1"}},
		Capacity:    corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("8Gi")},
		Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("8092Mi")},
		Port:        10250, StatusFrequency: 10 * time.Second, MaxImages: 50, Runtime: e.rt, Images: e.img, Version: "v0.1.0", Logger: klog.Background(),
	}
	for _, f := range tune {
		f(&o)
	}
	return New(o)
}

type requestLog struct {
	mu   sync.Mutex
	seen []string
}

func (l *requestLog) add(r string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.seen = append(l.seen, r)
}

// take answers the requests seen since the last take.
func (l *requestLog) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	seen := l.seen
	l.seen = nil
	return seen
}

func (e *env) node(t *testing.T) *corev1.Node {
	t.Helper()
	n, err := e.clients.Core.Nodes().Get(context.Background(), "n1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func condition(n *corev1.Node, t corev1.NodeConditionType) corev1.NodeCondition {
	for _, c := range n.Status.Conditions {
		if c.Type == t {
			return c
		}
	}
	return corev1.NodeCondition{}
}

// notReady is a runtime whose network is not ready.
type notReady struct{ cri.RuntimeService }

func (notReady) Status(context.Context, bool) (*runtimeapi.StatusResponse, error) {
	return &runtimeapi.StatusResponse{Status: &runtimeapi.RuntimeStatus{Conditions: []*runtimeapi.RuntimeCondition{
		{Type: runtimeapi.RuntimeReady, Status: true}, {Type: runtimeapi.NetworkReady, Status: false, Reason: "NoCNI", Message: "no network config"},
	}}}, nil
}

func TestRegisterAndStatusCadence(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	c := e.controller()
	if err := c.Register(ctx); err != nil {
		t.Fatal(err)
	}
	n := e.node(t)
	ready := condition(n, corev1.NodeReady)
	if ready.Status != corev1.ConditionTrue || ready.Reason != "OrchletReady" || !ready.LastHeartbeatTime.Time.Equal(start) ||
		condition(n, corev1.NodeMemoryPressure).Status != corev1.ConditionFalse || condition(n, corev1.NodeDiskPressure).Status != corev1.ConditionFalse ||
		condition(n, corev1.NodePIDPressure).Status != corev1.ConditionFalse {
		t.Fatalf("conditions at registration: %+v", n.Status.Conditions)
	}
	if n.Status.Allocatable.Memory().String() != "8092Mi" || n.Status.NodeInfo.KubeletVersion != "v0.1.0" || n.Status.DaemonEndpoints.KubeletEndpoint.Port != 10250 ||
		c.NodeUID() != string(n.UID) {
		t.Fatalf("status: %+v", n.Status)
	}

	// Ten seconds on, the heartbeat moves and the transition stays.
	e.clk.Add(10 * time.Second)
	if err := c.SyncStatus(ctx); err != nil {
		t.Fatal(err)
	}
	ready = condition(e.node(t), corev1.NodeReady)
	if !ready.LastHeartbeatTime.Time.Equal(start.Add(10*time.Second)) || !ready.LastTransitionTime.Time.Equal(start) {
		t.Fatalf("after 10s: heartbeat %v transition %v", ready.LastHeartbeatTime, ready.LastTransitionTime)
	}
	// The runtime's network goes down: NotReady, with a new transition time.
	c.o.Runtime = notReady{e.rt}
	e.clk.Add(10 * time.Second)
	if err := c.SyncStatus(ctx); err != nil {
		t.Fatal(err)
	}
	ready = condition(e.node(t), corev1.NodeReady)
	if ready.Status != corev1.ConditionFalse || ready.Reason != "OrchletNotReady" || !ready.LastTransitionTime.Time.Equal(start.Add(20*time.Second)) {
		t.Fatalf("runtime not ready: %+v", ready)
	}
}

// A status post writes over the Node the last post answered, as the kubelet posts over its
// informer's copy: one request, no read. Another writer's change makes it a conflict, and the post
// is made again at once over the Node read from the API server, keeping that change.
// In protobuf the answers are kept as their bytes (apiclient.PostedNode), in JSON decoded.
func TestStatusPostsOverTheLastAnsweredNode(t *testing.T) {
	for _, contentType := range []string{"application/json", apiclient.ProtobufMediaType} {
		t.Run(contentType, func(t *testing.T) { testStatusPostsOverTheLastAnsweredNode(t, newEnvWith(t, contentType)) })
	}
}

func testStatusPostsOverTheLastAnsweredNode(t *testing.T, e *env) {
	ctx := context.Background()
	c := e.controller()
	if err := c.Register(ctx); err != nil {
		t.Fatal(err)
	}
	const (
		get  = "GET /api/v1/nodes/n1"
		post = "PUT /api/v1/nodes/n1/status"
	)
	e.requests.take()
	for i := range 3 {
		e.clk.Add(10 * time.Second)
		if err := c.SyncStatus(ctx); err != nil {
			t.Fatal(err)
		}
		if got := e.requests.take(); !slices.Equal(got, []string{post}) {
			t.Fatalf("post %d: requests %q, want %q", i, got, post)
		}
	}
	n := e.node(t)
	n.Labels["example.com/rack"] = "r7"
	if _, err := e.clients.Core.Nodes().Update(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.requests.take()
	e.clk.Add(10 * time.Second)
	if err := c.SyncStatus(ctx); err != nil {
		t.Fatal(err)
	}
	if got, want := e.requests.take(), []string{post, get, post}; !slices.Equal(got, want) {
		t.Fatalf("over another write: requests %q, want %q", got, want)
	}
	n = e.node(t)
	if ready := condition(n, corev1.NodeReady); n.Labels["example.com/rack"] != "r7" || !ready.LastHeartbeatTime.Time.Equal(start.Add(40*time.Second)) {
		t.Fatalf("after the conflict: labels %v, Ready %+v", n.Labels, ready)
	}
	// The Node deleted: the post reads it, and fails with NotFound until it is registered again.
	if err := e.clients.Core.Nodes().Delete(ctx, "n1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.requests.take()
	if err := c.SyncStatus(ctx); !apierrors.IsNotFound(err) {
		t.Fatalf("the Node deleted: %v, want NotFound", err)
	}
	if got, want := e.requests.take(), []string{post, get}; !slices.Equal(got, want) {
		t.Fatalf("the Node deleted: requests %q, want %q", got, want)
	}
	if err := c.SyncStatus(ctx); !apierrors.IsNotFound(err) {
		t.Fatalf("the Node deleted, again: %v, want NotFound", err)
	}
	if got, want := e.requests.take(), []string{get}; !slices.Equal(got, want) {
		t.Fatalf("the Node deleted, again: requests %q, want %q", got, want)
	}
}

func TestRegisterReconcilesAnExistingNode(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	existing := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{"orch.io/hostname": "old", "keep": "me"}}}
	if _, err := e.clients.Core.Nodes().Create(ctx, existing, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := e.controller(func(o *Options) { o.ProviderID = "machine-1" }).Register(ctx); err != nil {
		t.Fatalf("registering over an existing node: %v", err)
	}
	n := e.node(t)
	if n.Labels["orch.io/hostname"] != "n1" || n.Labels["keep"] != "me" || n.Spec.ProviderID != "machine-1" {
		t.Fatalf("reconciled node: labels %v providerID %q", n.Labels, n.Spec.ProviderID)
	}
}

// A restarted agent registers over the Node it posted before: a condition whose status stays keeps
// its transition time, as the kubelet's setters read it from the Node; one that changed moves.
func TestRestartedAgentKeepsTransitionTimes(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	first := e.controller()
	if err := first.Register(ctx); err != nil {
		t.Fatal(err)
	}
	if err := first.SyncStatus(ctx); err != nil {
		t.Fatal(err)
	}
	e.clk.Add(time.Minute)
	for _, tc := range []struct {
		name           string
		tune           func(*Options)
		wantTransition time.Time
	}{
		{"Ready stays", func(*Options) {}, start},
		{"Ready changes", func(o *Options) { o.Runtime = notReady{o.Runtime} }, start.Add(time.Minute)},
	} {
		restarted := e.controller(tc.tune)
		if err := restarted.Register(ctx); err != nil {
			t.Fatal(err)
		}
		if err := restarted.SyncStatus(ctx); err != nil {
			t.Fatal(err)
		}
		c := condition(e.node(t), corev1.NodeReady)
		if !c.LastTransitionTime.Time.Equal(tc.wantTransition) || !c.LastHeartbeatTime.Time.Equal(start.Add(time.Minute)) {
			t.Errorf("%s: Ready %s since %v, heartbeat %v; want since %v", tc.name, c.Status, c.LastTransitionTime, c.LastHeartbeatTime, tc.wantTransition)
		}
	}
}

// --enable-controller-attach-detach annotates the Node at registration and on a Node registered
// before with the other setting, as the kubelet's reconcileCMADAnnotationWithExistingNode.
func TestControllerAttachDetachAnnotation(t *testing.T) {
	tests := []struct {
		name     string
		existing map[string]string // the annotations of a Node already there; nil: none registered
		enabled  bool
		want     string // the annotation's value; "" absent
	}{
		{"registered with it", nil, true, "true"},
		{"registered without it", nil, false, ""},
		{"turned on over a node without it", map[string]string{"keep": "me"}, true, "true"},
		{"turned off over a node with it", map[string]string{ControllerManagedAttachAnnotation: "true", "keep": "me"}, false, ""},
		{"a wrong value corrected", map[string]string{ControllerManagedAttachAnnotation: "false", "keep": "me"}, true, "true"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			ctx := context.Background()
			if tt.existing != nil {
				n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Annotations: tt.existing}}
				if _, err := e.clients.Core.Nodes().Create(ctx, n, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			if err := e.controller(func(o *Options) { o.ControllerAttachDetach = tt.enabled }).Register(ctx); err != nil {
				t.Fatal(err)
			}
			n := e.node(t)
			if got := n.Annotations[ControllerManagedAttachAnnotation]; got != tt.want {
				t.Fatalf("annotation %q, want %q (annotations %v)", got, tt.want, n.Annotations)
			}
			if tt.existing != nil && n.Annotations["keep"] != "me" {
				t.Fatalf("other annotations lost: %v", n.Annotations)
			}
		})
	}
}

// --cloud-provider=external, as the kubelet: the Node registers with the uninitialized taint
// beside --register-with-taints, the provided-node-ip annotation when --node-ip is given, and its
// status keeps the addresses a cloud controller set.
func TestExternalCloudProvider(t *testing.T) {
	for _, contentType := range []string{"application/json", apiclient.ProtobufMediaType} {
		t.Run(contentType, func(t *testing.T) { testExternalCloudProvider(t, newEnvWith(t, contentType)) })
	}
}

func testExternalCloudProvider(t *testing.T, e *env) {
	ctx := context.Background()
	own := corev1.Taint{Key: "example.com/dedicated", Value: "db", Effect: corev1.TaintEffectNoSchedule}
	c := e.controller(func(o *Options) {
		o.ExternalCloudProvider, o.ProvidedNodeIP, o.Taints = true, "10.0.0.5", []corev1.Taint{own}
		o.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.0.0.5"}, {Type: corev1.NodeHostName, Address: "n1"}}
	})
	if err := c.Register(ctx); err != nil {
		t.Fatal(err)
	}
	n := e.node(t)
	uninitialized := corev1.Taint{Key: "node.cloudprovider.orch.io/uninitialized", Value: "true", Effect: corev1.TaintEffectNoSchedule}
	if len(n.Spec.Taints) != 2 || n.Spec.Taints[0] != own || n.Spec.Taints[1] != uninitialized {
		t.Errorf("taints %v, want %v and %v", n.Spec.Taints, own, uninitialized)
	}
	if got := n.Annotations["alpha.orch.io/provided-node-ip"]; got != "10.0.0.5" {
		t.Errorf("provided-node-ip %q, want 10.0.0.5", got)
	}
	// The cloud controller initializes the Node: its addresses stay through the next status.
	cloud := []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.1.2.3"}, {Type: corev1.NodeExternalIP, Address: "203.0.113.7"}}
	n.Status.Addresses = cloud
	if _, err := e.clients.Core.Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := c.SyncStatus(ctx); err != nil {
		t.Fatal(err)
	}
	if got := e.node(t).Status.Addresses; !reflect.DeepEqual(got, cloud) {
		t.Errorf("addresses after a status update %v, want the cloud controller's %v", got, cloud)
	}
	// And through the next, over the answer of that one.
	e.clk.Add(10 * time.Second)
	if err := c.SyncStatus(ctx); err != nil {
		t.Fatal(err)
	}
	if got := e.node(t); !reflect.DeepEqual(got.Status.Addresses, cloud) || !condition(got, corev1.NodeReady).LastHeartbeatTime.Time.Equal(start.Add(10*time.Second)) {
		t.Errorf("addresses after a second status update %v, want the cloud controller's %v; Ready %+v", got.Status.Addresses, cloud, condition(got, corev1.NodeReady))
	}

	// Without a cloud provider the agent's addresses are posted, and no taint or annotation added.
	plain := newEnv(t)
	if err := plain.controller().Register(ctx); err != nil {
		t.Fatal(err)
	}
	if n := plain.node(t); len(n.Spec.Taints) != 0 || n.Annotations["alpha.orch.io/provided-node-ip"] != "" {
		t.Errorf("no cloud provider: taints %v annotations %v", n.Spec.Taints, n.Annotations)
	}
}

func TestWithoutRegisterTheNodeMustExist(t *testing.T) {
	e := newEnv(t)
	err := e.controller(func(o *Options) { o.Register = false }).Register(context.Background())
	if !apierrors.IsNotFound(err) {
		t.Fatalf("err = %v, want NotFound", err)
	}
	if _, err := e.clients.Core.Nodes().Get(context.Background(), "n1", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("a node was created without --register-node: %v", err)
	}
}

func TestImagesLargestFirstAndCapped(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	for _, ref := range []string{"busybox:1.36", "nginx:1.27", "redis:7"} {
		if _, err := e.img.PullImage(ctx, &runtimeapi.ImageSpec{Image: ref}, nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	list, err := e.img.ListImages(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var largest *runtimeapi.Image
	for _, img := range list {
		if largest == nil || img.Size > largest.Size {
			largest = img
		}
	}
	for _, tc := range []struct {
		max  int32
		want int
	}{{0, 0}, {1, 1}, {-1, 3}} {
		c := e.controller(func(o *Options) { o.MaxImages = tc.max })
		images, err := c.images(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(images) != tc.want || (tc.want > 0 && images[0].SizeBytes != int64(largest.Size)) {
			t.Errorf("max %d: %d images, first %+v", tc.max, len(images), images)
		}
	}
}

// In protobuf the answers are kept as their bytes (apiclient.PostedLease), in JSON decoded.
func TestLeaseRenewal(t *testing.T) {
	for _, contentType := range []string{"application/json", apiclient.ProtobufMediaType} {
		t.Run(contentType, func(t *testing.T) { testLeaseRenewal(t, newEnvWith(t, contentType)) })
	}
}

func testLeaseRenewal(t *testing.T, e *env) {
	ctx := context.Background()
	c := e.controller()
	if err := c.Register(ctx); err != nil {
		t.Fatal(err)
	}
	get := func() *coordinationv1.Lease {
		l := &coordinationv1.Lease{}
		if err := e.clients.Leases.Get().Namespace(LeaseNamespace).Resource("leases").Name("n1").Do(ctx).Into(l); err != nil {
			t.Fatal(err)
		}
		return l
	}
	if err := c.RenewLease(ctx); err != nil {
		t.Fatal(err)
	}
	l := get()
	if *l.Spec.HolderIdentity != "n1" || *l.Spec.LeaseDurationSeconds != 40 || !l.Spec.RenewTime.Time.Equal(start) ||
		len(l.OwnerReferences) != 1 || string(l.OwnerReferences[0].UID) != c.NodeUID() {
		t.Fatalf("created lease: %+v", l)
	}
	e.clk.Add(RenewInterval)
	if err := c.RenewLease(ctx); err != nil {
		t.Fatal(err)
	}
	if got := get().Spec.RenewTime.Time; !got.Equal(start.Add(RenewInterval)) {
		t.Fatalf("renewed at %v", got)
	}
	// Someone else wrote the lease: the renewal fails once, reads it again, and then succeeds.
	other := get()
	other.Labels = map[string]string{"touched": "yes"}
	transitions := int32(3)
	other.Spec.LeaseTransitions = &transitions
	if err := e.clients.Leases.Put().Namespace(LeaseNamespace).Resource("leases").Name("n1").Body(other).Do(ctx).Error(); err != nil {
		t.Fatal(err)
	}
	e.clk.Add(RenewInterval)
	if err := c.RenewLease(ctx); !apierrors.IsConflict(err) {
		t.Fatalf("renewing over another write: %v, want a conflict", err)
	}
	if err := c.RenewLease(ctx); err != nil {
		t.Fatal(err)
	}
	if l := get(); l.Labels["touched"] != "yes" || !l.Spec.RenewTime.Time.Equal(start.Add(2*RenewInterval)) {
		t.Fatalf("after the conflict: %+v", l)
	}
	// Renewals over the last answer keep what others wrote.
	for i := 3; i <= 4; i++ {
		e.clk.Add(RenewInterval)
		if err := c.RenewLease(ctx); err != nil {
			t.Fatal(err)
		}
		if l := get(); l.Labels["touched"] != "yes" || l.Spec.LeaseTransitions == nil || *l.Spec.LeaseTransitions != 3 ||
			*l.Spec.HolderIdentity != "n1" || !l.Spec.RenewTime.Time.Equal(start.Add(time.Duration(i)*RenewInterval)) {
			t.Fatalf("renewal %d: %+v", i, l)
		}
	}
}

// Run posts status every StatusFrequency and renews the lease every RenewInterval, on the clock.
func TestRunOnTheClock(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := e.controller(func(o *Options) { o.StatusFrequency = 20 * time.Second })
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	heartbeat := func() time.Time {
		n, err := e.clients.Core.Nodes().Get(ctx, "n1", metav1.GetOptions{})
		if err != nil {
			return time.Time{}
		}
		return condition(n, corev1.NodeReady).LastHeartbeatTime.Time
	}
	renewed := func() time.Time {
		l := &coordinationv1.Lease{}
		if err := e.clients.Leases.Get().Namespace(LeaseNamespace).Resource("leases").Name("n1").Do(ctx).Into(l); err != nil || l.Spec.RenewTime == nil {
			return time.Time{}
		}
		return l.Spec.RenewTime.Time
	}
	waitUntil(t, func() bool { return heartbeat().Equal(start) && renewed().Equal(start) })
	e.clk.Add(10 * time.Second)
	waitUntil(t, func() bool { return renewed().Equal(start.Add(10 * time.Second)) })
	if !heartbeat().Equal(start) {
		t.Fatalf("status posted after 10s with a 20s frequency")
	}
	e.clk.Add(10 * time.Second)
	waitUntil(t, func() bool {
		return heartbeat().Equal(start.Add(20*time.Second)) && renewed().Equal(start.Add(20*time.Second))
	})
	cancel()
	if err := <-done; err != context.Canceled {
		t.Fatalf("Run = %v", err)
	}
}

func waitUntil(t *testing.T, cond func() bool) {
	t.Helper()
	for i := 0; i < 300; i++ {
		if cond() {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("condition not met within 3s")
}

// A renewal the API server never answered keeps the last answered Lease: the next renewal writes
// over it without a conflict, with its own time. The posts leave the options' capacity as given
// (the status carries the options' maps, not copies).
func TestUnansweredRenewalAndOptionsKept(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	c := e.controller()
	capacity, allocatable := c.o.Capacity.DeepCopy(), c.o.Allocatable.DeepCopy()
	if err := c.Register(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.RenewLease(ctx); err != nil {
		t.Fatal(err)
	}
	unreachable, err := apiclient.New(&rest.Config{Host: "https://127.0.0.1:1"}, apiclient.Settings{ContentType: "application/json"})
	if err != nil {
		t.Fatal(err)
	}
	leases := c.o.Leases
	c.o.Leases = unreachable.Leases
	e.clk.Add(RenewInterval)
	var status apierrors.APIStatus
	if err := c.RenewLease(ctx); err == nil || errors.As(err, &status) {
		t.Fatalf("renewing unreachable: %v, want no answer", err)
	}
	c.o.Leases = leases
	e.clk.Add(RenewInterval)
	if err := c.RenewLease(ctx); err != nil {
		t.Fatalf("renewing after the unanswered one: %v", err)
	}
	l := &coordinationv1.Lease{}
	if err := e.clients.Leases.Get().Namespace(LeaseNamespace).Resource("leases").Name("n1").Do(ctx).Into(l); err != nil {
		t.Fatal(err)
	}
	if !l.Spec.RenewTime.Time.Equal(start.Add(2*RenewInterval)) || *l.Spec.HolderIdentity != "n1" || *l.Spec.LeaseDurationSeconds != LeaseDurationSeconds {
		t.Fatalf("lease after the unanswered renewal: %+v", l.Spec)
	}
	for range 2 {
		e.clk.Add(10 * time.Second)
		if err := c.SyncStatus(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if !reflect.DeepEqual(c.o.Capacity, capacity) || !reflect.DeepEqual(c.o.Allocatable, allocatable) {
		t.Fatalf("the options' lists changed: %v %v", c.o.Capacity, c.o.Allocatable)
	}
	if n := e.node(t); !n.Status.Capacity.Memory().Equal(*capacity.Memory()) || !n.Status.Allocatable.Memory().Equal(*allocatable.Memory()) {
		t.Fatalf("posted capacity %v allocatable %v", n.Status.Capacity, n.Status.Allocatable)
	}
}

// listedImages is an image service whose list is given.
type listedImages struct {
	cri.ImageManagerService
	list []*runtimeapi.Image
}

func (l listedImages) ListImages(context.Context, *runtimeapi.ImageFilter) ([]*runtimeapi.Image, error) {
	return slices.Clone(l.list), nil
}

// The images are posted largest first, those of one size in the runtime's order, digests before
// tags; an image without names is left out and does not count against the cap.
func TestImagesOrder(t *testing.T) {
	list := []*runtimeapi.Image{
		{Id: "a", RepoTags: []string{"a:1"}, Size: 10},
		{Id: "b", RepoTags: []string{"b:1"}, Size: 30},
		{Id: "nameless", Size: 50},
		{Id: "c", RepoDigests: []string{"c@sha256:1"}, RepoTags: []string{"c:1"}, Size: 10},
		{Id: "d", RepoTags: []string{"d:1", "d:2"}, Size: 30},
	}
	for _, tc := range []struct {
		max  int32
		want [][]string
	}{
		{-1, [][]string{{"b:1"}, {"d:1", "d:2"}, {"a:1"}, {"c@sha256:1", "c:1"}}},
		{3, [][]string{{"b:1"}, {"d:1", "d:2"}, {"a:1"}}},
		{1, [][]string{{"b:1"}}},
	} {
		c := New(Options{MaxImages: tc.max, Images: listedImages{list: list}})
		images, err := c.images(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		var got [][]string
		for _, img := range images {
			got = append(got, img.Names)
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("max %d: %q, want %q", tc.max, got, tc.want)
		}
	}
}
