package volumes

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

var t0 = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

type event struct{ kind, reason, note string }

type recorder struct {
	mu  sync.Mutex
	all []event
}

func (r *recorder) Eventf(_ *corev1.ObjectReference, eventType, reason, _, format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.all = append(r.all, event{kind: eventType, reason: reason, note: fmt.Sprintf(format, args...)})
}

func (r *recorder) reasons(reason string) []event {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []event
	for _, e := range r.all {
		if e.reason == reason {
			out = append(out, e)
		}
	}
	return out
}

// fakeObjects is the API's configmaps and secrets, by namespace/name.
type fakeObjects struct {
	configMaps map[string]*corev1.ConfigMap
	secrets    map[string]*corev1.Secret
}

func (f *fakeObjects) GetConfigMap(_ context.Context, namespace, name string) (*corev1.ConfigMap, error) {
	if cm, ok := f.configMaps[namespace+"/"+name]; ok {
		return cm.DeepCopy(), nil
	}
	return nil, apierrors.NewNotFound(corev1.Resource("configmap"), name)
}

func (f *fakeObjects) GetSecret(_ context.Context, namespace, name string) (*corev1.Secret, error) {
	if s, ok := f.secrets[namespace+"/"+name]; ok {
		return s.DeepCopy(), nil
	}
	return nil, apierrors.NewNotFound(corev1.Resource("secret"), name)
}

type fakeTmpfs struct {
	mu      sync.Mutex
	mounted map[string]int64
	log     []string
}

func (f *fakeTmpfs) MountTmpfs(dir string, size int64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.mounted[dir] = size
	f.log = append(f.log, "mount "+filepath.Base(dir))
	return nil
}

func (f *fakeTmpfs) Unmount(dir string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.mounted, dir)
	f.log = append(f.log, "unmount "+filepath.Base(dir))
	return nil
}

func newPod(name string, containers ...corev1.Container) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name), Labels: map[string]string{"app": name}},
		Spec:       corev1.PodSpec{Containers: containers},
	}
}

func ctr(name, image string) corev1.Container {
	return corev1.Container{Name: name, Image: image}
}

func TestUnsupportedFieldPath(t *testing.T) {
	m := New(Options{})
	p := Pod{Pod: newPod("p")}
	if _, err := m.PodFieldValue(p, &corev1.ObjectFieldSelector{FieldPath: "spec.hostname"}); err == nil || err.Error() != "unsupported fieldPath: spec.hostname" {
		t.Errorf("err = %v", err)
	}
	if got := formatMap(map[string]string{"b": "2", "a": `x"y`}); got != "a=\"x\\\"y\"\nb=\"2\"" {
		t.Errorf("formatMap = %q", got)
	}
}
