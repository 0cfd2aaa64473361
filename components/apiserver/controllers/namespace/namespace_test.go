package namespace

import (
	"context"
	"testing"

	"github.com/benbjohnson/clock"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"orch.io/orch/components/apiserver/registry/core"
	"orch.io/orch/components/apiserver/registry/generic"
	"orch.io/orch/components/apiserver/storage/memory"
)

// The initial namespaces are made once; a deleted namespace is emptied and then goes, while one
// still holding an object that stops gracefully waits for it.
func TestController(t *testing.T) {
	clk := clock.NewMock()
	st := memory.New(clk)
	t.Cleanup(func() { _ = st.Close() })
	ctx := context.Background()
	namespaces := generic.New(generic.Options{Strategy: core.NamespaceStrategy{}, Storage: st, Clock: clk})
	configMaps := generic.New(generic.Options{Strategy: core.ConfigMapStrategy{}, Storage: st, Clock: clk})
	pods := generic.New(generic.Options{Strategy: core.PodStrategy{}, Storage: st, Clock: clk})
	for range 2 {
		if err := EnsureInitial(ctx, namespaces); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range core.InitialNamespaces {
		if _, err := namespaces.Get(ctx, "", name); err != nil {
			t.Errorf("initial namespace %s: %v", name, err)
		}
	}

	c := &Controller{Clock: clk, Namespaces: namespaces, Contents: []*generic.Store{configMaps, pods}}
	finalize := namespaces.WithUpdates("finalize", core.NamespaceFinalizeStrategy{}).WithoutAdmission()
	for _, ns := range []string{"gone", "waiting"} {
		if _, err := namespaces.Create(ctx, "", &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, false); err != nil {
			t.Fatal(err)
		}
		if _, err := configMaps.Create(ctx, ns, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c"}}, false); err != nil {
			t.Fatal(err)
		}
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: corev1.PodSpec{NodeName: "n", Containers: []corev1.Container{{Name: "c", Image: "i"}}}}
	if _, err := pods.Create(ctx, "waiting", pod, false); err != nil {
		t.Fatal(err)
	}
	for _, ns := range []string{"gone", "waiting"} {
		if _, _, err := namespaces.Delete(ctx, "", ns, generic.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.sweep(ctx, finalize); err != nil {
		t.Fatal(err)
	}
	if _, err := namespaces.Get(ctx, "", "gone"); !apierrors.IsNotFound(err) {
		t.Errorf("an emptied namespace is still there: %v", err)
	}
	if _, err := configMaps.Get(ctx, "waiting", "c"); !apierrors.IsNotFound(err) {
		t.Errorf("a terminating namespace's configmap is still there: %v", err)
	}
	obj, err := namespaces.Get(ctx, "", "waiting")
	if err != nil || obj.(*corev1.Namespace).Status.Phase != corev1.NamespaceTerminating {
		t.Fatalf("a namespace whose pod is stopping: %v %v", obj, err)
	}
	if _, _, err := pods.Delete(ctx, "waiting", "p", generic.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
		t.Fatal(err)
	}
	if err := c.sweep(ctx, finalize); err != nil {
		t.Fatal(err)
	}
	if _, err := namespaces.Get(ctx, "", "waiting"); !apierrors.IsNotFound(err) {
		t.Errorf("a namespace whose pod has gone is still there: %v", err)
	}
}
