package volumes

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
)

// flexDrivers records the driver calls.
type flexDrivers struct{ calls []string }

func (f *flexDrivers) Mount(_ context.Context, driver, dir string, options map[string]string) error {
	f.calls = append(f.calls, fmt.Sprintf("mount %s %s %v", driver, dir, options))
	return nil
}

func (f *flexDrivers) Unmount(_ context.Context, driver, dir string) error {
	f.calls = append(f.calls, fmt.Sprintf("unmount %s %s", driver, dir))
	return nil
}

// A flexVolume volume is mounted by its driver once, under the pod's volumes directory, with the
// options the kubelet gives (the secret's keys base64-encoded), and unmounted at teardown.
func TestFlexVolume(t *testing.T) {
	root := t.TempDir()
	drivers := &flexDrivers{}
	m := New(Options{Recorder: &recorder{}, Logger: klog.Background(), Node: Node{RootDir: root, Flex: drivers}})
	m.SetObjects(&fakeObjects{secrets: map[string]*corev1.Secret{"default/nfs-creds": {Data: map[string][]byte{"password": []byte("s3cret")}}}})
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "u1"},
		Spec: corev1.PodSpec{
			ServiceAccountName: "default",
			SecurityContext:    &corev1.PodSecurityContext{FSGroup: ptr.To(int64(2000))},
			Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{FlexVolume: &corev1.FlexVolumeSource{
				Driver: "example.com/nfs", FSType: "nfs", ReadOnly: true, SecretRef: &corev1.LocalObjectReference{Name: "nfs-creds"},
				Options: map[string]string{"share": "/srv"},
			}}}},
		},
	}
	if msg := m.Unsupported(pod); msg != "" {
		t.Fatalf("refused: %s", msg)
	}
	for range 2 {
		if err := m.SetUp(context.Background(), Pod{Pod: pod}); err != nil {
			t.Fatal(err)
		}
	}
	dir := filepath.Join(root, "pods", "u1", "volumes", "example.com~nfs", "data")
	if err := m.TearDown(pod); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"mount example.com/nfs " + dir + " map[kubernetes.io/fsType:nfs kubernetes.io/mounterArgs.FsGroup:2000 kubernetes.io/pod.name:web kubernetes.io/pod.namespace:default kubernetes.io/pod.uid:u1 kubernetes.io/readwrite:ro kubernetes.io/secret/password:czNjcmV0 kubernetes.io/serviceAccount.name:default share:/srv]",
		"unmount example.com/nfs " + dir,
	}
	if strings.Join(drivers.calls, "\n") != strings.Join(want, "\n") {
		t.Errorf("driver calls\n%s\nwant\n%s", strings.Join(drivers.calls, "\n"), strings.Join(want, "\n"))
	}

	// Without drivers (a simulated node), or a secretRef without an API server, the pod is refused.
	bare := New(Options{Recorder: &recorder{}, Logger: klog.Background(), Node: Node{RootDir: root}})
	if msg := bare.Unsupported(pod); !strings.Contains(msg, `spec.volumes[0]: volume "data" of type flexVolume is not supported on a simulated node`) {
		t.Errorf("no drivers: %q", msg)
	}
	standalone := New(Options{Recorder: &recorder{}, Logger: klog.Background(), Node: Node{RootDir: root, Flex: drivers}})
	if msg := standalone.Unsupported(pod); !strings.Contains(msg, "spec.volumes[0].flexVolume.secretRef: volume \"data\": reading API objects is not supported") {
		t.Errorf("secretRef in standalone mode: %q", msg)
	}
}
