package app

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"

	"orch.io/orch/fakecri/fakecritest"
)

// kubectl debug -it web --image=busybox --target=app through orch-apiserver: the ephemeral
// container added by a strategic merge patch of pods/ephemeralcontainers, as kubectl sends it,
// runs in the pod and shows in ephemeralContainerStatuses; attach reaches its shell and exec runs
// in it. A user allowed only get pods may not add one; an invalid one is refused.
func TestDebugContainerThroughTheAPIServer(t *testing.T) {
	cfg, client := streamsCluster(t, nil)
	ctx := context.Background()
	pods := client.CoreV1().Pods("default")
	web, err := pods.Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	debug := corev1.EphemeralContainer{TargetContainerName: "app", EphemeralContainerCommon: corev1.EphemeralContainerCommon{
		Name: "debugger-x1", Image: "busybox", Command: []string{"sh"}, Stdin: true, TTY: false,
		TerminationMessagePolicy: corev1.TerminationMessageReadFile}}
	patch := func(c corev1.EphemeralContainer, client kubernetes.Interface) error {
		// kubectl debug's request: the strategic merge patch from the pod to the pod with one more
		// ephemeral container, sent to the subresource.
		old, _ := json.Marshal(web)
		added := web.DeepCopy()
		added.Spec.EphemeralContainers = append(added.Spec.EphemeralContainers, c)
		updated, _ := json.Marshal(added)
		p, err := strategicpatch.CreateTwoWayMergePatch(old, updated, web)
		if err != nil {
			t.Fatal(err)
		}
		_, err = client.CoreV1().Pods("default").Patch(ctx, "web", types.StrategicMergePatchType, p, metav1.PatchOptions{}, "ephemeralcontainers")
		return err
	}

	viewer := rest.CopyConfig(cfg)
	viewer.BearerToken = "viewer-token"
	if err := patch(debug, kubernetes.NewForConfigOrDie(viewer)); !apierrors.IsForbidden(err) ||
		!strings.Contains(err.Error(), `User "viewer" cannot patch resource "pods/ephemeralcontainers" in API group "" in the namespace "default"`) {
		t.Errorf("the viewer's debug: %v, want Kubernetes' 403", err)
	}
	bad := debug
	bad.TargetContainerName = "nope"
	if err := patch(bad, client); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), `spec.ephemeralContainers[0].targetContainerName: Not found: "nope"`) {
		t.Errorf("a debug container targeting nope: %v, want 422", err)
	}

	if err := patch(debug, client); err != nil {
		t.Fatalf("kubectl debug's patch: %v", err)
	}
	waitFor(t, "the debug container Running", func() (bool, error) {
		p, err := pods.Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		es := p.Status.EphemeralContainerStatuses
		return len(es) == 1 && es[0].Name == "debugger-x1" && es[0].State.Running != nil, nil
	})
	got, err := client.CoreV1().RESTClient().Get().Resource("pods").Namespace("default").Name("web").SubResource("ephemeralcontainers").Do(ctx).Get()
	if ecs := got.(*corev1.Pod).Spec.EphemeralContainers; err != nil || len(ecs) != 1 || ecs[0].ImagePullPolicy != corev1.PullAlways {
		t.Errorf("get pods/ephemeralcontainers: %+v, %v", got, err)
	}

	attach := client.CoreV1().RESTClient().Post().Resource("pods").Namespace("default").Name("web").SubResource("attach").
		VersionedParams(&corev1.PodAttachOptions{Container: "debugger-x1", Stdin: true, Stdout: true, Stderr: true}, scheme.ParameterCodec)
	if stdout, stderr, err := fakecritest.Stream(cfg, attach.URL(), true, "echo -n hello\n"); err != nil || stdout != "hello" {
		t.Errorf("attach to the debug container: %q (stderr %q), %v", stdout, stderr, err)
	}
	exec := client.CoreV1().RESTClient().Post().Resource("pods").Namespace("default").Name("web").SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{Container: "debugger-x1", Command: []string{"hostname"}, Stdout: true, Stderr: true}, scheme.ParameterCodec)
	if stdout, _, err := fakecritest.Stream(cfg, exec.URL(), true, ""); err != nil || stdout != "web\n" {
		t.Errorf("exec hostname in the debug container: %q, %v", stdout, err)
	}
}
