package status

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Shared hands out the published pods themselves, in a slice of its own; Pods hands out copies.
func TestSharedPods(t *testing.T) {
	c := NewCache()
	a := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "a", UID: "a"}}
	b := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "b", UID: "b"}}
	known := func(types.UID) (bool, bool) { return true, false }
	c.Publish([]*corev1.Pod{a, b}, nil, known)
	shared := c.Shared()
	if len(shared) != 2 || shared[0] != a || shared[1] != b {
		t.Fatalf("shared %v, want the published pointers", shared)
	}
	shared[0] = nil
	if c.Shared()[0] != a {
		t.Fatal("the caller's slice is the cache's own")
	}
	if copies := c.Pods(); &copies[0] == a || copies[0].Name != "a" {
		t.Fatal("Pods does not copy")
	}
	// A later publish keeping a untouched keeps its pointer.
	b2 := b.DeepCopy()
	b2.Status.Phase = corev1.PodRunning
	c.Publish([]*corev1.Pod{a, b2}, nil, known)
	if s := c.Shared(); s[0] != a || s[1] != b2 {
		t.Fatalf("after a republish: %v", s)
	}
}
