package apiclient

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	k8seventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	eventsv1 "orch.io/orch/components/apis/events/v1"
	"orch.io/orch/components/apiserver/server"
	"orch.io/orch/components/apiserver/storage/memory"
	"orch.io/orch/components/authn"
	"orch.io/orch/components/authz"
)

// wire records the media types each request and answer carried.
type wire struct {
	mu    sync.Mutex
	lines []string
}

func (w *wire) add(line string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.lines = append(w.lines, line)
}

func (w *wire) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return strings.Join(w.lines, "\n")
}

func newClients(t *testing.T, contentType string) (*Clients, *wire) {
	t.Helper()
	clk := clock.New()
	st := memory.New(clk)
	stopping := make(chan struct{})
	h, err := server.New(server.Config{Clock: clk, Storage: st, EventTTL: time.Hour, Authenticator: authn.Union(authn.Anonymous()), Authorizer: authz.AlwaysAllow(),
		MinRequestTimeout: time.Hour, Stopping: stopping})
	if err != nil {
		t.Fatal(err)
	}
	seen := &wire{}
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r)
		seen.add(r.Method + " " + r.URL.Path + " sent=" + r.Header.Get("Content-Type") + " accept=" + r.Header.Get("Accept") + " got=" + w.Header().Get("Content-Type") +
			" agent=" + r.Header.Get("User-Agent"))
	}))
	t.Cleanup(func() { close(stopping); srv.Close(); _ = st.Close() })
	c, err := New(&rest.Config{Host: srv.URL, TLSClientConfig: rest.TLSClientConfig{Insecure: true}}, Settings{ContentType: contentType, UserAgent: "orchlet/v1.2.3"})
	if err != nil {
		t.Fatal(err)
	}
	return c, seen
}

// With the agent's default content type, every request and answer for pods, nodes and leases is
// Kubernetes' protobuf under orch's media type (the pod informer's list and watch included);
// events stay JSON. Every request carries the agent's user agent.
func TestProtobufOnTheWire(t *testing.T) {
	c, seen := newClients(t, ProtobufMediaType)
	ctx := context.Background()
	pods := c.Core.Pods("default")
	lw := cache.NewListWatchFromClient(c.Core.RESTClient(), "pods", metav1.NamespaceAll, fields.OneTermEqualSelector("spec.nodeName", "n1"))
	w, err := lw.WatchWithContext(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Name: "app", Image: "busybox:1.36"}}}}
	created, err := pods.Create(ctx, pod, metav1.CreateOptions{})
	if err != nil || created.UID == "" || created.Spec.RestartPolicy != corev1.RestartPolicyAlways {
		t.Fatalf("create: %v %+v", err, created)
	}
	select {
	case ev := <-w.ResultChan():
		if ev.Type != watch.Added || ev.Object.(*corev1.Pod).Name != "web" {
			t.Fatalf("watch event %s %T", ev.Type, ev.Object)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no watch event")
	}
	patch := `{"metadata":{"uid":"` + string(created.UID) + `"},"status":{"phase":"Running"}}`
	if patched, err := pods.Patch(ctx, "web", types.MergePatchType, []byte(patch), metav1.PatchOptions{}, "status"); err != nil || patched.Status.Phase != corev1.PodRunning {
		t.Fatalf("patch status: %v", err)
	}
	if list, err := lw.ListWithContext(ctx, metav1.ListOptions{}); err != nil || len(list.(*corev1.PodList).Items) != 1 {
		t.Fatalf("list: %v", err)
	}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}
	if node, err = c.Core.Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create node: %v", err)
	}
	node.Labels = map[string]string{"orch.io/hostname": "n1"}
	if node, err = c.Core.Nodes().Update(ctx, node, metav1.UpdateOptions{}); err != nil || node.Labels["orch.io/hostname"] != "n1" {
		t.Fatalf("update node: %v", err)
	}
	node.Status.Phase = corev1.NodeRunning
	if node, err = c.Heartbeat.Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{}); err != nil || node.Status.Phase != corev1.NodeRunning {
		t.Fatalf("update node status: %v", err)
	}
	zero, uid := int64(0), created.UID
	if err := pods.Delete(ctx, "web", metav1.DeleteOptions{GracePeriodSeconds: &zero, Preconditions: &metav1.Preconditions{UID: &uid}}); err != nil {
		t.Fatalf("delete with protobuf options: %v", err)
	}
	if _, err := pods.Get(ctx, "web", metav1.GetOptions{}); err == nil {
		t.Fatal("the pod outlived a delete with grace 0")
	}
	holder := "n1"
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "n1", Namespace: "orch-node-lease"}, Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder}}
	if err := c.Leases.Post().Namespace("orch-node-lease").Resource("leases").Body(lease).Do(ctx).Into(&coordinationv1.Lease{}); err != nil {
		t.Fatalf("lease: %v", err)
	}
	e := &eventsv1.Event{ObjectMeta: metav1.ObjectMeta{Name: "e1", Namespace: "default"}, EventTime: metav1.NewMicroTime(time.Now()), ReportingController: "orch.io/orchlet", ReportingInstance: "n1",
		Action: "Started", Reason: "Started", Type: "Normal", Regarding: corev1.ObjectReference{Kind: "Pod", Namespace: "default", Name: "web"}}
	if _, err := (EventSink{Client: c.Events}).Create(ctx, e); err != nil {
		t.Fatalf("event: %v", err)
	}
	for _, line := range strings.Split(seen.String(), "\n") {
		isEvent := strings.Contains(line, "/events")
		protobuf := strings.Contains(line, "got=application/vnd.orch.protobuf") && !strings.Contains(line, "vnd.kubernetes")
		if isEvent == protobuf {
			t.Errorf("wrong encoding: %s", line)
		}
		if !strings.HasSuffix(line, " agent=orchlet/v1.2.3") {
			t.Errorf("wrong user agent: %s", line)
		}
	}
	if !strings.Contains(seen.String(), "POST /api/v1/namespaces/default/pods sent=application/vnd.orch.protobuf") {
		t.Errorf("create body not protobuf:\n%s", seen)
	}
}

// With application/json everything is JSON, as before.
func TestJSONOnTheWire(t *testing.T) {
	c, seen := newClients(t, "application/json")
	if _, err := c.Core.Pods("default").Create(context.Background(), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "busybox:1.36"}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(seen.String(), "got=application/json") || strings.Contains(seen.String(), "protobuf") {
		t.Errorf("wire:\n%s", seen)
	}
}

// The server's Status comes back as client-go's typed clients return it, an *apierrors.StatusError,
// in either encoding: the agent tells NotFound, AlreadyExists and Conflict apart by it.
func TestStatusErrors(t *testing.T) {
	for _, contentType := range []string{ProtobufMediaType, "application/json"} {
		t.Run(contentType, func(t *testing.T) {
			c, _ := newClients(t, contentType)
			ctx := context.Background()
			pods := c.Core.Pods("default")
			if _, err := pods.Get(ctx, "web", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				t.Fatalf("get of a missing pod: %v", err)
			}
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "busybox:1.36"}}}}
			if _, err := pods.Create(ctx, pod, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			if _, err := pods.Create(ctx, pod, metav1.CreateOptions{}); !apierrors.IsAlreadyExists(err) {
				t.Fatalf("second create: %v", err)
			}
			zero, other := int64(0), types.UID("not-the-pod")
			err := pods.Delete(ctx, "web", metav1.DeleteOptions{GracePeriodSeconds: &zero, Preconditions: &metav1.Preconditions{UID: &other}})
			if !apierrors.IsConflict(err) {
				t.Fatalf("delete with another uid: %v", err)
			}
			if _, err := pods.Patch(ctx, "gone", types.MergePatchType, []byte(`{"status":{"phase":"Running"}}`), metav1.PatchOptions{}, "status"); !apierrors.IsNotFound(err) {
				t.Fatalf("status patch of a missing pod: %v", err)
			}
			if _, err := c.Heartbeat.Nodes().Get(ctx, "n1", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				t.Fatalf("get of a missing node: %v", err)
			}
			objects := Objects{Client: c.Core}
			if _, err := objects.GetConfigMap(ctx, "default", "cfg"); !apierrors.IsNotFound(err) || err.Error() != `configmap "cfg" not found` {
				t.Fatalf("missing configmap: %v", err)
			}
			if _, err := objects.GetSecret(ctx, "default", "sec"); !apierrors.IsNotFound(err) || err.Error() != `secret "sec" not found` {
				t.Fatalf("missing secret: %v", err)
			}
		})
	}
}

// A repeat of an event is a merge patch of its series, as Kubernetes' events recorder sends it.
func TestEventSeriesIsPatched(t *testing.T) {
	c, seen := newClients(t, "application/json")
	ctx := context.Background()
	sink := EventSink{Client: c.Events}
	e := &eventsv1.Event{ObjectMeta: metav1.ObjectMeta{Name: "e1", Namespace: "default"}, EventTime: metav1.NewMicroTime(time.Now()), ReportingController: "orch.io/orchlet", ReportingInstance: "n1",
		Action: "Pulling", Reason: "BackOff", Type: "Warning", Regarding: corev1.ObjectReference{Kind: "Pod", Namespace: "default", Name: "web"}}
	if _, err := sink.Create(ctx, e); err != nil {
		t.Fatal(err)
	}
	e.Series = &eventsv1.EventSeries{Count: 2, LastObservedTime: metav1.NewMicroTime(time.Now())}
	got, err := sink.Update(ctx, e)
	if err != nil || got.Series == nil || got.Series.Count != 2 || got.Reason != "BackOff" {
		t.Fatalf("update: %v %+v", err, got)
	}
	if !strings.Contains(seen.String(), "PATCH /apis/events.orch.io/v1/namespaces/default/events/e1 sent=application/merge-patch+json") {
		t.Errorf("the series was not patched:\n%s", seen)
	}
}

// --kube-api-qps and --kube-api-burst of 0 mean 50 and 100, as the kubelet's.
func TestZeroQPSMeansDefaults(t *testing.T) {
	c, err := New(&rest.Config{Host: "https://127.0.0.1:1"}, Settings{})
	if err != nil {
		t.Fatal(err)
	}
	if c.Config.QPS != DefaultQPS || c.Config.Burst != DefaultBurst || c.Core.RESTClient().GetRateLimiter().QPS() != DefaultQPS {
		t.Fatalf("qps %v burst %d limiter %v", c.Config.QPS, c.Config.Burst, c.Core.RESTClient().GetRateLimiter().QPS())
	}
	c, err = New(&rest.Config{Host: "https://127.0.0.1:1"}, Settings{QPS: 5, Burst: 7})
	if err != nil {
		t.Fatal(err)
	}
	if c.Core.RESTClient().GetRateLimiter().QPS() != 5 || c.Heartbeat.RESTClient().GetRateLimiter() != nil && c.Heartbeat.RESTClient().GetRateLimiter().QPS() == 5 {
		t.Fatalf("the heartbeat client shares the limit")
	}
}

// events.orch.io/v1 speaks protobuf too: Kubernetes' events.k8s.io/v1 encoding under orch's group.
func TestEventsInProtobuf(t *testing.T) {
	c, seen := newClients(t, ProtobufMediaType)
	cfg := rest.CopyConfig(c.Config)
	cfg.ContentType, cfg.AcceptContentTypes = k8sProtobufMediaType, k8sProtobufMediaType
	events, err := groupClient(cfg, eventsv1.SchemeGroupVersion, groupSerializers(eventsv1.SchemeGroupVersion, &k8seventsv1.Event{}, &k8seventsv1.EventList{}))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	w, err := events.Get().Namespace("default").Resource("events").Param("watch", "true").Watch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	e := &k8seventsv1.Event{ObjectMeta: metav1.ObjectMeta{Name: "e1", Namespace: "default"}, EventTime: metav1.NewMicroTime(time.Now()), ReportingController: "orch.io/orchlet", ReportingInstance: "n1",
		Action: "Pulling", Reason: "Pulled", Type: "Normal", Regarding: corev1.ObjectReference{Kind: "Pod", Namespace: "default", Name: "web"}}
	created := &k8seventsv1.Event{}
	if err := events.Post().Namespace("default").Resource("events").Body(e).Do(ctx).Into(created); err != nil || created.UID == "" || created.Reason != "Pulled" {
		t.Fatalf("create: %v %+v", err, created)
	}
	select {
	case ev := <-w.ResultChan():
		if got, ok := ev.Object.(*k8seventsv1.Event); !ok || ev.Type != watch.Added || got.Name != "e1" {
			t.Fatalf("watch: %s %T", ev.Type, ev.Object)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no watch event")
	}
	list := &k8seventsv1.EventList{}
	if err := events.Get().Namespace("default").Resource("events").Do(ctx).Into(list); err != nil || len(list.Items) != 1 || list.Items[0].Note != "" && list.Items[0].Reason != "Pulled" {
		t.Fatalf("list: %v %+v", err, list)
	}
	for _, line := range strings.Split(seen.String(), "\n") {
		if strings.Contains(line, "/events") && !strings.Contains(line, "got=application/vnd.orch.protobuf") {
			t.Errorf("not protobuf: %s", line)
		}
	}
	if !strings.Contains(seen.String(), "POST /apis/events.orch.io/v1/namespaces/default/events sent=application/vnd.orch.protobuf") {
		t.Errorf("create body not protobuf:\n%s", seen)
	}
}

// roundTripFunc is a RoundTripper of a function.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// protobufWire renames Kubernetes' protobuf to orch's on the request and back on the answer, sets
// the user agent only when the request has none, and leaves its caller's request as it was; a
// request with nothing to change is passed on as it is, not copied.
func TestProtobufWire(t *testing.T) {
	for _, tc := range []struct {
		name                      string
		header                    http.Header
		answered                  string
		wantSent, wantAgent, want string
		wantAccept                string
		passed                    bool // the request itself sent
	}{
		{
			name:     "a heartbeat in its wire form is passed on",
			header:   http.Header{"Accept": {orchProtobufAccept}, "Content-Type": {ProtobufMediaType}, "User-Agent": {"orchlet/v1"}},
			answered: ProtobufMediaType, wantSent: ProtobufMediaType, wantAccept: orchProtobufAccept,
			wantAgent: "orchlet/v1", want: k8sProtobufMediaType, passed: true,
		},
		{
			name:     "another user agent is kept, and the request passed on",
			header:   http.Header{"Accept": {"application/json", k8sProtobufMediaType}, "User-Agent": {"other/v2"}},
			answered: "application/json", wantAccept: "application/json",
			wantAgent: "other/v2", want: "application/json", passed: true,
		},
		{
			name:     "orch's types without a user agent are copied for it",
			header:   http.Header{"Accept": {orchProtobufAccept}, "Content-Type": {ProtobufMediaType}},
			answered: ProtobufMediaType, wantSent: ProtobufMediaType, wantAccept: orchProtobufAccept,
			wantAgent: "orchlet/v1", want: k8sProtobufMediaType,
		},
		{
			name:     "a second value naming Kubernetes' protobuf is not read",
			header:   http.Header{"Content-Type": {ProtobufMediaType, k8sProtobufMediaType}, "User-Agent": {"orchlet/v1"}},
			answered: ProtobufMediaType, wantSent: ProtobufMediaType,
			wantAgent: "orchlet/v1", want: k8sProtobufMediaType, passed: true,
		},
		{
			name:     "protobuf request and answer",
			header:   http.Header{"Accept": {k8sProtobufMediaType + ",application/json"}, "Content-Type": {k8sProtobufMediaType}},
			answered: ProtobufMediaType, wantSent: ProtobufMediaType, wantAccept: ProtobufMediaType + ",application/json",
			wantAgent: "orchlet/v1", want: k8sProtobufMediaType,
		},
		{
			name:     "the request's own user agent is kept",
			header:   http.Header{"Accept": {k8sProtobufMediaType}, "User-Agent": {"other/v2"}},
			answered: ProtobufMediaType + ";stream=watch", wantAccept: ProtobufMediaType,
			wantAgent: "other/v2", want: k8sProtobufMediaType + ";stream=watch",
		},
		{
			name:     "JSON passes as it is",
			header:   http.Header{"Accept": {"application/json"}, "Content-Type": {"application/merge-patch+json"}},
			answered: "application/json", wantSent: "application/merge-patch+json", wantAccept: "application/json",
			wantAgent: "orchlet/v1", want: "application/json",
		},
		{name: "no header", answered: "application/json", wantAgent: "orchlet/v1", want: "application/json"},
		{
			name:     "of two values the first renamed alone is sent, as Header.Set leaves it",
			header:   http.Header{"Accept": {k8sProtobufMediaType, "application/json"}, "Content-Type": {k8sProtobufMediaType, "text/plain"}},
			answered: ProtobufMediaType, wantSent: ProtobufMediaType, wantAccept: ProtobufMediaType,
			wantAgent: "orchlet/v1", want: k8sProtobufMediaType,
		},
		{
			name:     "a value naming protobuf among others has each renamed",
			header:   http.Header{"Accept": {"application/json;q=0.9, " + k8sProtobufMediaType + ", " + k8sProtobufMediaType + ";q=0.5"}},
			answered: ProtobufMediaType + ";q=1", wantAccept: "application/json;q=0.9, " + ProtobufMediaType + ", " + ProtobufMediaType + ";q=0.5",
			wantAgent: "orchlet/v1", want: k8sProtobufMediaType + ";q=1",
		},
		{
			name:     "JSON first is not renamed",
			header:   http.Header{"Accept": {"application/json", k8sProtobufMediaType}},
			answered: "application/json", wantAccept: "application/json",
			wantAgent: "orchlet/v1", want: "application/json",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequest(http.MethodPut, "https://api.invalid/api/v1/nodes/n1/status", strings.NewReader("body"))
			if err != nil {
				t.Fatal(err)
			}
			req.Header = tc.header
			before := tc.header.Clone()
			var got *http.Request
			w := protobufWire{next: roundTripFunc(func(r *http.Request) (*http.Response, error) {
				got = r
				return &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {tc.answered}}, Body: http.NoBody, Request: r}, nil
			}), userAgent: "orchlet/v1"}
			resp, err := w.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			if s := got.Header.Get("Content-Type"); s != tc.wantSent {
				t.Errorf("sent Content-Type %q, want %q", s, tc.wantSent)
			}
			if s := got.Header.Get("Accept"); s != tc.wantAccept {
				t.Errorf("sent Accept %q, want %q", s, tc.wantAccept)
			}
			for _, h := range []string{"Accept", "Content-Type"} {
				if vs := req.Header[h]; len(vs) > 1 && strings.Contains(vs[0], k8sProtobufMediaType) && len(got.Header[h]) != 1 {
					t.Errorf("sent %s %q, want the renamed value alone", h, got.Header[h])
				} else if len(vs) > 1 && !strings.Contains(vs[0], k8sProtobufMediaType) && !reflect.DeepEqual(got.Header[h], vs) {
					t.Errorf("sent %s %q, want %q as it was", h, got.Header[h], vs)
				}
			}
			if s := got.Header.Get("User-Agent"); s != tc.wantAgent {
				t.Errorf("sent User-Agent %q, want %q", s, tc.wantAgent)
			}
			if s := resp.Header.Get("Content-Type"); s != tc.want {
				t.Errorf("answer's Content-Type %q, want %q", s, tc.want)
			}
			if tc.passed {
				if got != req {
					t.Errorf("copied a request with nothing to change")
				}
			} else if got == req || got.URL != req.URL || got.Body != req.Body || got.Context() != req.Context() || got.Method != req.Method {
				t.Errorf("not a copy of the request with its URL, body and context")
			}
			if !reflect.DeepEqual(req.Header, before) {
				t.Errorf("the caller's header changed: %v, was %v", req.Header, before)
			}
		})
	}
}

// A protobuf client's requests carry the user agent its wire wrapper sets; Config, for the clients
// others build, keeps the user agent and the shared rate limiter.
func TestProtobufClientConfig(t *testing.T) {
	var seen []*http.Request
	cfg := &rest.Config{Host: "https://api.invalid", Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		seen = append(seen, r)
		return nil, errors.New("no server")
	})}
	c, err := New(cfg, Settings{ContentType: ProtobufMediaType, UserAgent: "orchlet/v1"})
	if err != nil {
		t.Fatal(err)
	}
	if c.Config.UserAgent != "orchlet/v1" || c.Config.RateLimiter == nil || c.Config.RateLimiter != c.Core.RESTClient().GetRateLimiter() {
		t.Errorf("Config's user agent %q, rate limiter %v", c.Config.UserAgent, c.Config.RateLimiter)
	}
	_, _ = c.Heartbeat.Nodes().UpdateStatus(context.Background(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}, metav1.UpdateOptions{})
	if len(seen) != 1 || seen[0].Header.Get("User-Agent") != "orchlet/v1" || seen[0].Header.Get("Content-Type") != ProtobufMediaType {
		t.Fatalf("requests %d, header %v", len(seen), seen[0].Header)
	}
}

// Every node's clients share their serializers: building them is a few allocations (main's
// clients, with four codec factories and two schemes of their own, took 627 and held 27 KB, most
// of a simulated node's clients), and clients of both encodings used at once from several
// goroutines each read their own answers (run with -race).
func TestClientsShareSerializers(t *testing.T) {
	c, _ := newClients(t, ProtobufMediaType)
	base := &rest.Config{Host: c.Config.Host, TLSClientConfig: rest.TLSClientConfig{Insecure: true}}
	allocs := testing.AllocsPerRun(20, func() {
		if _, err := New(base, Settings{ContentType: ProtobufMediaType, UserAgent: "orchlet/v1.2.3"}); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > 200 {
		t.Errorf("New made %.0f allocations, want the serializers shared (at most 200)", allocs)
	}
	ctx := context.Background()
	var wg sync.WaitGroup
	for i, contentType := range []string{ProtobufMediaType, "application/json", ProtobufMediaType, "application/json"} {
		clients, err := New(base, Settings{ContentType: contentType})
		if err != nil {
			t.Fatal(err)
		}
		name := "n" + string(rune('a'+i))
		wg.Go(func() {
			for range 5 {
				node, err := clients.Heartbeat.Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
				if err != nil || node.Name != name {
					t.Errorf("%s: node %v %v", contentType, node, err)
					return
				}
				lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "orch-node-lease"}}
				got := &coordinationv1.Lease{}
				if err := clients.Leases.Post().Namespace("orch-node-lease").Resource("leases").Body(lease).Do(ctx).Into(got); err != nil || got.Name != name {
					t.Errorf("%s: lease %v %v", contentType, got, err)
					return
				}
				e := &eventsv1.Event{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}, EventTime: metav1.NewMicroTime(time.Now()), ReportingController: "orch.io/orchlet", ReportingInstance: name,
					Action: "Started", Reason: "Started", Type: "Normal", Regarding: corev1.ObjectReference{Kind: "Node", Name: name}}
				if got, err := (EventSink{Client: clients.Events}).Create(ctx, e); err != nil || got.Name != name {
					t.Errorf("%s: event %v %v", contentType, got, err)
					return
				}
				for _, del := range []*rest.Request{
					clients.Heartbeat.RESTClient().Delete().Resource("nodes").Name(name),
					clients.Leases.Delete().Namespace("orch-node-lease").Resource("leases").Name(name),
					clients.Events.Delete().Namespace("default").Resource("events").Name(name),
				} {
					if err := del.Do(ctx).Error(); err != nil {
						t.Errorf("%s: delete: %v", contentType, err)
						return
					}
				}
			}
		})
	}
	wg.Wait()
}

// The renames of the values New's clients send make nothing: a request's copy, its user agent and
// the answer's renamed type are the wrapper's allocations.
func TestProtobufWireAllocations(t *testing.T) {
	answered := []string{ProtobufMediaType}
	answer := &http.Response{StatusCode: http.StatusOK, Header: http.Header{}, Body: http.NoBody}
	w := protobufWire{next: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		answer.Header["Content-Type"] = answered // the wrapper replaces the value, not changing it
		return answer, nil
	}), userAgent: "orchlet/v1"}
	req, err := http.NewRequest(http.MethodPut, "https://api.invalid/api/v1/nodes/n1/status", http.NoBody)
	if err != nil {
		t.Fatal(err)
	}
	req.Header = http.Header{"Accept": {k8sProtobufAccept}, "Content-Type": {k8sProtobufMediaType}}
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := w.RoundTrip(req); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > 7 { // main's wrapper: 10
		t.Errorf("%.0f allocations a request, want at most 7", allocs)
	}
}
