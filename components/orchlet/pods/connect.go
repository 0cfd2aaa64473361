package pods

import (
	"context"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/trace/noop"
	cri "k8s.io/cri-api/pkg/apis"
	remote "k8s.io/cri-client/pkg"
)

// Connect opens Kubernetes' CRI client to the runtime at runtimeEndpoint and the image service at
// imageEndpoint (empty: the runtime's), as --container-runtime-endpoint and
// --image-service-endpoint name them. timeout is --runtime-request-timeout: the client's own
// wall-clock bound, which the Manager's deadline on its clock matches in production.
func Connect(ctx context.Context, runtimeEndpoint, imageEndpoint string, timeout time.Duration) (cri.RuntimeService, cri.ImageManagerService, error) {
	if imageEndpoint == "" {
		imageEndpoint = runtimeEndpoint
	}
	tp := noop.NewTracerProvider()
	rt, err := remote.NewRemoteRuntimeServiceBuilder().
		WithEndpoint(runtimeEndpoint).WithConnectionTimeout(timeout).WithTracerProvider(tp).Build(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("pods: connecting to the runtime at %s: %w", runtimeEndpoint, err)
	}
	img, err := remote.NewRemoteImageServiceBuilder().
		WithEndpoint(imageEndpoint).WithConnectionTimeout(timeout).WithTracerProvider(tp).Build(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("pods: connecting to the image service at %s: %w", imageEndpoint, err)
	}
	return rt, img, nil
}
