package apipods

import (
	"context"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"orch.io/orch/components/apiserver/server"
	"orch.io/orch/components/apiserver/storage/memory"
	"orch.io/orch/components/authn"
	"orch.io/orch/components/authz"
	"orch.io/orch/components/orchlet/apiclient"
	"orch.io/orch/components/orchlet/sources"
)

// workers is a fake of the pod workers: the pods they run and the pods stopped.
type workers struct {
	mu   sync.Mutex
	pods []corev1.Pod
	// shared hands out the same pointers while pods is unchanged, as the real pod workers do;
	// otherwise every call is a fresh copy.
	shared  bool
	ptrs    []*corev1.Pod
	updates []sources.Update
	running map[types.UID]bool
}

func (w *workers) Update(us ...sources.Update) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.updates = append(w.updates, us...)
}
func (w *workers) SharedPods() []*corev1.Pod {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.shared && len(w.ptrs) == len(w.pods) {
		return w.ptrs
	}
	out := make([]*corev1.Pod, len(w.pods))
	for i := range w.pods {
		out[i] = w.pods[i].DeepCopy()
	}
	w.ptrs = out
	return out
}
func (w *workers) Changed() <-chan struct{} { return make(chan struct{}) }
func (w *workers) Stopped(uid types.UID) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return !w.running[uid]
}

func newSyncer(t testing.TB) (*Syncer, *workers, kubernetes.Interface) {
	t.Helper()
	clk := clock.New()
	st := memory.New(clk)
	stopping := make(chan struct{})
	h, err := server.New(server.Config{Clock: clk, Storage: st, Authenticator: authn.Union(authn.Anonymous()), Authorizer: authz.AlwaysAllow(), MinRequestTimeout: time.Hour, Stopping: stopping})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewTLSServer(h)
	t.Cleanup(func() { close(stopping); srv.Close(); _ = st.Close() })
	cfg := &rest.Config{Host: srv.URL, TLSClientConfig: rest.TLSClientConfig{Insecure: true}}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	clients, err := apiclient.New(cfg, apiclient.Settings{ContentType: apiclient.ProtobufMediaType})
	if err != nil {
		t.Fatal(err)
	}
	node, err := client.CoreV1().Nodes().Create(context.Background(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w := &workers{running: map[types.UID]bool{}}
	s := New(Options{Clock: clk, Core: clients.Core, Node: "n1", NodeUID: func() types.UID { return node.UID }, Workers: w, Logger: klog.Background()})
	return s, w, client
}

func staticPod(uid string, phase corev1.PodPhase) corev1.Pod {
	return corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "etcd-n1", Namespace: "orch-system", UID: types.UID(uid),
			Annotations: map[string]string{sources.ConfigSourceAnnotation: sources.SourceFile}},
		Spec:   corev1.PodSpec{Containers: []corev1.Container{{Name: "etcd", Image: "etcd:3.6"}}},
		Status: corev1.PodStatus{Phase: phase},
	}
}

// A static pod gets a mirror pod with its status; a changed manifest (a new uid) replaces the
// mirror; a pod of the API with the static pod's name is never replaced; a mirror someone deletes
// comes back; the mirror goes with its static pod.
func TestMirrorPods(t *testing.T) {
	s, w, client := newSyncer(t)
	ctx := context.Background()
	mirrors := client.CoreV1().Pods("orch-system")
	w.pods = []corev1.Pod{staticPod("hash-1", corev1.PodRunning)}
	s.Sync(ctx)
	m, err := mirrors.Get(ctx, "etcd-n1", metav1.GetOptions{})
	if err != nil || m.Annotations[MirrorAnnotation] != "hash-1" || m.Spec.NodeName != "n1" || m.Status.Phase != corev1.PodRunning ||
		len(m.OwnerReferences) != 1 || m.OwnerReferences[0].Kind != "Node" {
		t.Fatalf("mirror: %v %+v", err, m)
	}
	// Unchanged status: no write.
	rv := m.ResourceVersion
	s.Sync(ctx)
	if again, _ := mirrors.Get(ctx, "etcd-n1", metav1.GetOptions{}); again.ResourceVersion != rv {
		t.Fatalf("an unchanged status was posted again")
	}

	w.pods = []corev1.Pod{staticPod("hash-2", corev1.PodPending)}
	s.Sync(ctx)
	m2, err := mirrors.Get(ctx, "etcd-n1", metav1.GetOptions{})
	if err != nil || m2.Annotations[MirrorAnnotation] != "hash-2" || m2.UID == m.UID || m2.Status.Phase != corev1.PodPending {
		t.Fatalf("replaced mirror: %v %+v", err, m2)
	}

	// Someone deletes the mirror: the syncer confirms the deletion and makes it again.
	zero := int64(0)
	if err := mirrors.Delete(ctx, "etcd-n1", metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
	s.Observe(m2, true)
	s.Sync(ctx)
	if m3, err := mirrors.Get(ctx, "etcd-n1", metav1.GetOptions{}); err != nil || m3.UID == m2.UID {
		t.Fatalf("mirror not made again: %v", err)
	}

	// The static pod goes: so does its mirror.
	w.pods = nil
	s.Sync(ctx)
	if _, err := mirrors.Get(ctx, "etcd-n1", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("mirror outlived its static pod: %v", err)
	}

	// A pod of the API holding the name is left alone.
	other := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "etcd-n1"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "x", Image: "x:1"}}}}
	if _, err := mirrors.Create(ctx, other, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	w.pods = []corev1.Pod{staticPod("hash-3", corev1.PodRunning)}
	s.Sync(ctx)
	if got, err := mirrors.Get(ctx, "etcd-n1", metav1.GetOptions{}); err != nil || got.Annotations[MirrorAnnotation] != "" {
		t.Fatalf("a pod that is not a mirror was replaced: %v %+v", err, got.Annotations)
	}
}

// An API pod being deleted is removed from the workers at once and deleted from the API only once
// the workers stopped it; its status is not posted meanwhile.
func TestDeletionWaitsForTheWorkers(t *testing.T) {
	s, w, client := newSyncer(t)
	ctx := context.Background()
	pods := client.CoreV1().Pods("default")
	pod, err := pods.Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Name: "app", Image: "nginx:1.27"}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s.Observe(pod, false)
	if len(w.updates) != 1 || w.updates[0].Op != sources.OpAdd || w.updates[0].Pod.Annotations[sources.ConfigSourceAnnotation] != sources.SourceAPI {
		t.Fatalf("updates: %v", w.updates)
	}
	running := *pod
	running.Annotations = map[string]string{sources.ConfigSourceAnnotation: sources.SourceAPI}
	running.Status.Phase = corev1.PodRunning
	w.pods, w.running[pod.UID] = []corev1.Pod{running}, true
	s.Sync(ctx)
	if got, _ := pods.Get(ctx, "web", metav1.GetOptions{}); got.Status.Phase != corev1.PodRunning {
		t.Fatalf("status not posted: %s", got.Status.Phase)
	}

	if err := pods.Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	deleting, err := pods.Get(ctx, "web", metav1.GetOptions{})
	if err != nil || deleting.DeletionTimestamp == nil {
		t.Fatalf("graceful delete: %v", err)
	}
	s.Observe(deleting, false)
	if u := w.updates[len(w.updates)-1]; u.Op != sources.OpRemove || *u.Pod.DeletionGracePeriodSeconds != 30 {
		t.Fatalf("last update %v", u)
	}
	s.Sync(ctx) // still running: the pod stays
	if _, err := pods.Get(ctx, "web", metav1.GetOptions{}); err != nil {
		t.Fatalf("deleted before the workers stopped it: %v", err)
	}
	w.mu.Lock()
	w.pods, w.running[pod.UID] = nil, false
	w.mu.Unlock()
	s.Sync(ctx)
	if _, err := pods.Get(ctx, "web", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("not deleted once stopped: %v", err)
	}
}

// A new pod's first status waits up to a second while Pending, so a pod that starts at once is
// reported once; one still Pending after that is reported Pending.
func TestFirstStatusHeldWhilePending(t *testing.T) {
	s, w, client := newSyncer(t)
	mock := clock.NewMock()
	s.o.Clock = mock
	ctx := context.Background()
	pods := client.CoreV1().Pods("default")
	for _, name := range []string{"fast", "slow"} {
		pod, err := pods.Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Name: "app", Image: "nginx:1.27"}}}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		s.Observe(pod, false)
		reported := *pod
		reported.Annotations = map[string]string{sources.ConfigSourceAnnotation: sources.SourceAPI}
		reported.Status = corev1.PodStatus{Phase: corev1.PodPending, Message: "starting"}
		w.pods = append(w.pods, reported)
	}
	phase := func(name string) (corev1.PodPhase, string) {
		p, err := pods.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return p.Status.Phase, p.Status.Message
	}
	s.Sync(ctx)
	if _, msg := phase("slow"); msg != "" {
		t.Fatalf("a Pending first status was posted at once")
	}
	mock.Add(500 * time.Millisecond)
	w.pods[0].Status = corev1.PodStatus{Phase: corev1.PodRunning, Message: "up"}
	s.Sync(ctx)
	if p, msg := phase("fast"); p != corev1.PodRunning || msg != "up" {
		t.Fatalf("fast: %s %q", p, msg)
	}
	if _, msg := phase("slow"); msg != "" {
		t.Fatalf("slow reported before a second")
	}
	mock.Add(500 * time.Millisecond)
	s.Sync(ctx)
	if p, msg := phase("slow"); p != corev1.PodPending || msg != "starting" {
		t.Fatalf("slow after a second: %s %q", p, msg)
	}
}

// A restarted agent's pod, whose status the killed agent had posted Running, keeps it in the API
// until the workers have synced the pod: their first status, Pending with nothing known of the
// containers, is never posted over it, however long the workers take.
func TestAdoptedPodNotPostedBeforeItsSync(t *testing.T) {
	s, w, client := newSyncer(t)
	mock := clock.NewMock()
	s.o.Clock = mock
	ctx := context.Background()
	pods := client.CoreV1().Pods("default")
	pod, err := pods.Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Name: "app", Image: "nginx:1.27"}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	running := corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{{Name: "app", Image: "nginx:1.27",
		State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}}
	pod.Status = running
	if pod, err = pods.UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	s.Observe(pod, false)
	adopted := *pod
	adopted.Annotations = map[string]string{sources.ConfigSourceAnnotation: sources.SourceAPI}
	adopted.Status = corev1.PodStatus{Phase: corev1.PodPending}
	w.pods = append(w.pods, adopted)
	for range 3 {
		mock.Add(time.Second)
		s.Sync(ctx)
		if got, err := pods.Get(ctx, "web", metav1.GetOptions{}); err != nil || got.Status.Phase != corev1.PodRunning {
			t.Fatalf("before the workers synced it: %v %v", got.Status.Phase, err)
		}
	}
	w.pods[0].Status = *running.DeepCopy()
	w.pods[0].Status.Message = "synced"
	s.Sync(ctx)
	if got, err := pods.Get(ctx, "web", metav1.GetOptions{}); err != nil || got.Status.Message != "synced" {
		t.Fatalf("once synced: %q %v", got.Status.Message, err)
	}
}
