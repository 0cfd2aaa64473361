package kmsplugin

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"

	"google.golang.org/grpc"
	kmsapi "k8s.io/kms/apis/v2"
	kmsservice "k8s.io/kms/pkg/service"
)

// Listen listens on the unix socket at endpoint (a path or unix:///path), replacing a socket a
// previous run left behind.
func Listen(endpoint string) (net.Listener, error) {
	path := strings.TrimPrefix(endpoint, "unix://")
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("removing the old socket %s: %w", path, err)
	}
	return net.Listen("unix", path)
}

// Serve answers the KMS v2 API with svc on l until ctx ends, then stops after the calls in flight.
func Serve(ctx context.Context, l net.Listener, svc kmsservice.Service) error {
	server := grpc.NewServer()
	kmsapi.RegisterKeyManagementServiceServer(server, kmsservice.NewGRPCService(l.Addr().String(), 0, svc))
	errc := make(chan error, 1)
	go func() { errc <- server.Serve(l) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
		server.GracefulStop()
		return nil
	}
}
