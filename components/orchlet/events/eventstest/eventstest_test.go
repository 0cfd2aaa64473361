package eventstest

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestRecorder(t *testing.T) {
	var r Recorder
	r.Eventf(&corev1.ObjectReference{Kind: "Node", Name: "node-a"}, "Warning", "ImageGCFailed", "GarbageCollect", "%d images", 3)
	if got, want := r.Events(), []string{"Warning ImageGCFailed Node/node-a: 3 images"}; !slices.Equal(got, want) {
		t.Fatalf("Events() = %q, want %q", got, want)
	}
}
