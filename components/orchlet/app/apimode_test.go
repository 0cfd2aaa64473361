package app

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"orch.io/orch/components/apiserver/server"
	"orch.io/orch/components/apiserver/storage/memory"
	"orch.io/orch/components/authn"
	"orch.io/orch/components/authz"
	"orch.io/orch/components/orchlet/apiclient"
	"orch.io/orch/components/orchlet/apipods"
	"orch.io/orch/components/orchlet/app/apptest"
	"orch.io/orch/components/orchlet/host"
)

// apiServer starts orch-apiserver's handler on memory storage over real TLS and writes a
// kubeconfig for it; it answers the kubeconfig's path and clients. While down is set, every
// request fails with 503, as from a server that went away. tune, if given, adjusts the server's
// configuration.
func apiServer(t testing.TB, down *atomic.Bool, tune ...func(*server.Config)) (string, kubernetes.Interface, *apiclient.Clients) {
	t.Helper()
	clk := clock.New()
	st := memory.New(clk)
	stopping := make(chan struct{})
	sc := server.Config{
		Clock: clk, Storage: st, EventTTL: time.Hour, Authenticator: authn.Union(authn.Anonymous()), Authorizer: authz.AlwaysAllow(),
		MinRequestTimeout: 30 * time.Minute, BookmarkInterval: time.Minute, Stopping: stopping,
	}
	for _, f := range tune {
		f(&sc)
	}
	h, err := server.New(sc)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if down != nil && down.Load() {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(func() { close(stopping); srv.Close(); _ = st.Close() })
	kubeconfig := apptest.AnonymousKubeconfig(t, srv)
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	clients, err := apiclient.New(cfg, apiclient.Settings{ContentType: "application/json"})
	if err != nil {
		t.Fatal(err)
	}
	admin, err := kubernetes.NewForConfig(clients.Config) // on the agent's shared limiter
	if err != nil {
		t.Fatal(err)
	}
	return kubeconfig, admin, clients
}

func waitFor(t *testing.T, what string, cond func() (bool, error)) {
	t.Helper()
	apptest.WaitWithin(t, clock.New(), what, 20*time.Second, cond)
}

// The agent registers its node, heartbeats, runs the pods bound to it and reports them, mirrors
// its static pods, stops a deleted pod and confirms the deletion, and sends its events to the API.
func TestAPIServerMode(t *testing.T) {
	kubeconfig, client, clients := apiServer(t, nil)
	manifests := t.TempDir()
	if err := os.WriteFile(filepath.Join(manifests, "static.yaml"), []byte("apiVersion: v1\nkind: Pod\nmetadata: {name: static, namespace: orch-system}\nspec:\n  containers:\n  - {name: app, image: busybox:1.36}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	o := parse(t, apptest.WithRuntime(t, "--orchconfig="+kubeconfig, "--hostname-override=Node-A", "--node-labels=example.com/team=a",
		"--register-with-taints=dedicated=a:NoSchedule", "--provider-id=machine-1", "--node-ip=10.1.2.3",
		"--pod-manifest-path="+manifests, "--file-check-frequency=1s")...) // the default protobuf content type
	cancel, done := runAsync(o, host.NewFake(), clock.New())
	defer func() {
		cancel()
		if err := wait(t, done); err != nil {
			t.Error(err)
		}
	}()
	ctx := context.Background()

	var node *corev1.Node
	waitFor(t, "the node registered", func() (bool, error) {
		var err error
		node, err = client.CoreV1().Nodes().Get(ctx, "node-a", metav1.GetOptions{})
		return err == nil, err
	})
	if node.Labels["orch.io/hostname"] != "node-a" || node.Labels["example.com/team"] != "a" || node.Labels["orch.io/os"] != "linux" ||
		node.Spec.ProviderID != "machine-1" || len(node.Spec.Taints) != 1 || node.Spec.Taints[0].Key != "dedicated" {
		t.Errorf("registered node: labels %v providerID %q taints %v", node.Labels, node.Spec.ProviderID, node.Spec.Taints)
	}
	ready := false
	for _, c := range node.Status.Conditions {
		ready = ready || (c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue)
	}
	if !ready || node.Status.Addresses[0].Address != "10.1.2.3" || node.Status.Capacity.Pods().Value() != 110 ||
		node.Status.NodeInfo.ContainerRuntimeVersion == "" || node.Status.NodeInfo.KernelVersion == "" || node.Status.NodeInfo.OSImage == "" || node.Status.DaemonEndpoints.KubeletEndpoint.Port != 10250 {
		t.Errorf("node status: %+v", node.Status)
	}
	waitFor(t, "the node lease", func() (bool, error) {
		lease := &coordinationv1.Lease{}
		err := clients.Leases.Get().Namespace("orch-node-lease").Resource("leases").Name("node-a").Do(ctx).Into(lease)
		return err == nil && *lease.Spec.HolderIdentity == "node-a" && *lease.Spec.LeaseDurationSeconds == 40 && lease.Spec.RenewTime != nil, err
	})

	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec:       corev1.PodSpec{NodeName: "node-a", Containers: []corev1.Container{{Name: "app", Image: "busybox:1.36"}}},
	}
	created, err := client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the pod Running in the API", func() (bool, error) {
		p, err := client.CoreV1().Pods("default").Get(ctx, "web", metav1.GetOptions{})
		return err == nil && p.Status.Phase == corev1.PodRunning && p.Status.PodIP != "" && len(p.Status.ContainerStatuses) == 1 &&
			p.Status.ContainerStatuses[0].State.Running != nil && p.Status.StartTime != nil, err
	})
	waitFor(t, "the static pod's mirror", func() (bool, error) {
		p, err := client.CoreV1().Pods("orch-system").Get(ctx, "static-node-a", metav1.GetOptions{})
		return err == nil && p.Annotations[apipods.MirrorAnnotation] != "" && p.Spec.NodeName == "node-a" && p.Status.Phase == corev1.PodRunning &&
			len(p.OwnerReferences) == 1 && p.OwnerReferences[0].Kind == "Node", err
	})

	if err := client.CoreV1().Pods("default").Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the deleted pod stopped and removed", func() (bool, error) {
		_, err := client.CoreV1().Pods("default").Get(ctx, "web", metav1.GetOptions{})
		return apierrors.IsNotFound(err), err
	})
	waitFor(t, "the agent's events in the API", func() (bool, error) {
		data, err := clients.Events.Get().Namespace("default").Resource("events").Do(ctx).Raw()
		return err == nil && containsAll(string(data), `"name":"web"`, `"uid":"`+string(created.UID)+`"`, `"reportingInstance":"node-a"`), err
	})
}

func containsAll(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}

func runningPod(t *testing.T, client kubernetes.Interface, name string) *corev1.Pod {
	t.Helper()
	var pod *corev1.Pod
	waitFor(t, name+" Running in the API", func() (bool, error) {
		p, err := client.CoreV1().Pods("default").Get(context.Background(), name, metav1.GetOptions{})
		pod = p
		return err == nil && p.Status.Phase == corev1.PodRunning && len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].State.Running != nil, err
	})
	return pod
}

func createBound(t *testing.T, client kubernetes.Interface, name string) {
	t.Helper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec:       corev1.PodSpec{NodeName: "node-a", Containers: []corev1.Container{{Name: "app", Image: "busybox:1.36"}}},
	}
	if _, err := client.CoreV1().Pods("default").Create(context.Background(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// The API server going away stops nothing: pods keep running, and once it is back the agent
// catches up with what changed meanwhile. An agent killed and started again on the same runtime
// starts nothing twice.
func TestAPIServerOutageAndAgentRestart(t *testing.T) {
	var down atomic.Bool
	kubeconfig, client, _ := apiServer(t, &down)
	args := apptest.WithRuntime(t, "--orchconfig="+kubeconfig, "--hostname-override=node-a", "--kube-api-content-type=application/json")
	cancel, done := runAsync(parse(t, args...), host.NewFake(), clock.New())
	createBound(t, client, "web")
	before := runningPod(t, client, "web")

	down.Store(true)
	time.Sleep(2 * time.Second) // the agent's watch and status posts fail meanwhile
	down.Store(false)
	createBound(t, client, "late") // created while the agent was cut off from the server's watch
	runningPod(t, client, "late")
	if p := runningPod(t, client, "web"); p.Status.ContainerStatuses[0].ContainerID != before.Status.ContainerStatuses[0].ContainerID {
		t.Fatalf("the outage restarted web: %s then %s", before.Status.ContainerStatuses[0].ContainerID, p.Status.ContainerStatuses[0].ContainerID)
	}

	// Stop the agent without tearing anything down, as a kill -9 would, and start it again.
	cancel()
	if err := wait(t, done); err != nil {
		t.Fatal(err)
	}
	cancel, done = runAsync(parse(t, args...), host.NewFake(), clock.New())
	defer func() {
		cancel()
		if err := wait(t, done); err != nil {
			t.Error(err)
		}
	}()
	createBound(t, client, "after")
	runningPod(t, client, "after")
	for _, name := range []string{"web", "late"} {
		p := runningPod(t, client, name)
		if cs := p.Status.ContainerStatuses[0]; cs.RestartCount != 0 || (name == "web" && cs.ContainerID != before.Status.ContainerStatuses[0].ContainerID) {
			t.Fatalf("%s after the restart: %+v", name, cs)
		}
	}
}
