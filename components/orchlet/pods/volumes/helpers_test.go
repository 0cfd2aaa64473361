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
	"k8s.io/apimachinery/pkg/types"
)

var t0 = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

// recorder keeps each event's note under its reason.
type recorder struct {
	mu    sync.Mutex
	notes map[string][]string
}

func (r *recorder) Eventf(_ *corev1.ObjectReference, _, reason, _, format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.notes == nil {
		r.notes = map[string][]string{}
	}
	r.notes[reason] = append(r.notes[reason], fmt.Sprintf(format, args...))
}

func (r *recorder) reasons(reason string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.notes[reason]
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

// tmpfs records the mounts and unmounts of the volumes' directories, by base name.
type tmpfs struct {
	mu  sync.Mutex
	log []string
	n   int // mounted now
}

func (f *tmpfs) MountTmpfs(dir string, _ int64) error { return f.note("mount", dir, 1) }
func (f *tmpfs) Unmount(dir string) error             { return f.note("unmount", dir, -1) }

func (f *tmpfs) note(what, dir string, n int) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.log, f.n = append(f.log, what+" "+filepath.Base(dir)), f.n+n
	return nil
}

// newPod is the pod name in namespace default, of UID uid-<name>, with the containers.
func newPod(name string, containers ...corev1.Container) *corev1.Pod {
	pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: containers}}
	pod.Name, pod.Namespace, pod.UID = name, "default", types.UID("uid-"+name)
	return pod
}

func ctr(name, image string) corev1.Container { return corev1.Container{Name: name, Image: image} }

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
