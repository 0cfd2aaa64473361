package fakecritest

import (
	"context"
	"testing"

	"orch.io/orch/fakecri"
)

// A started runtime answers the kubelet's clients, the runtime and the image service alike.
func TestStartAndClients(t *testing.T) {
	_, endpoint := Start(t, fakecri.Options{Seed: 1})
	client, images := Clients(t, endpoint)
	v, err := client.Version(context.Background(), "v1")
	if err != nil || v.RuntimeName == "" {
		t.Fatalf("Version over %s = %v, %v", endpoint, v, err)
	}
	if _, err := images.ListImages(context.Background(), nil); err != nil {
		t.Fatalf("ListImages over %s: %v", endpoint, err)
	}
}
