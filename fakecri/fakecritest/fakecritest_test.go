package fakecritest

import (
	"context"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace/noop"
	remote "k8s.io/cri-client/pkg"

	"orch.io/orch/fakecri"
)

func TestServe(t *testing.T) {
	_, endpoint := Start(t, fakecri.Options{Seed: 1})
	client, err := remote.NewRemoteRuntimeServiceBuilder().WithEndpoint(endpoint).WithConnectionTimeout(10 * time.Second).WithTracerProvider(noop.NewTracerProvider()).Build(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	v, err := client.Version(context.Background(), "v1")
	if err != nil || v.RuntimeName == "" {
		t.Fatalf("Version over %s = %v, %v", endpoint, v, err)
	}
}
