package kmsv2

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/benbjohnson/clock"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	kmsapi "k8s.io/kms/apis/v2"
	kmsservice "k8s.io/kms/pkg/service"
	"k8s.io/kms/pkg/util"
)

// grpcService calls a KMS v2 plugin, each call bounded by the provider's timeout.
type grpcService struct {
	conn    *grpc.ClientConn
	client  kmsapi.KeyManagementServiceClient
	clock   clock.Clock
	timeout time.Duration
}

// Dial connects to the plugin at endpoint (unix:///path). The connection is made lazily and
// remade after the plugin restarts; a call waits for it, up to timeout.
func Dial(endpoint string, timeout time.Duration, clk clock.Clock) (kmsservice.Service, func() error, error) {
	addr, err := util.ParseEndpoint(endpoint)
	if err != nil {
		return nil, nil, fmt.Errorf("failed to parse endpoint %q: %w", endpoint, err)
	}
	conn, err := grpc.NewClient("passthrough:///"+addr,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(func(ctx context.Context, a string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", a)
		}),
		grpc.WithDefaultCallOptions(grpc.WaitForReady(true)),
	)
	if err != nil {
		return nil, nil, fmt.Errorf("failed to create connection to %s, error: %w", endpoint, err)
	}
	s := &grpcService{conn: conn, client: kmsapi.NewKeyManagementServiceClient(conn), clock: clk, timeout: timeout}
	return s, conn.Close, nil
}

// bound limits a call to the provider's timeout on the service's clock. The limit cancels the
// call rather than setting a deadline, which gRPC would read against the wall clock.
func (s *grpcService) bound(ctx context.Context) (context.Context, func(error) error) {
	ctx, cancel := context.WithCancelCause(ctx)
	timedOut := fmt.Errorf("the KMS plugin did not answer within the provider's timeout of %v", s.timeout)
	timer := s.clock.AfterFunc(s.timeout, func() { cancel(timedOut) })
	return ctx, func(err error) error {
		timer.Stop()
		if err != nil && errors.Is(context.Cause(ctx), timedOut) {
			err = fmt.Errorf("%w: %v", timedOut, err)
		}
		cancel(nil)
		return err
	}
}

func (s *grpcService) Decrypt(ctx context.Context, uid string, req *kmsservice.DecryptRequest) ([]byte, error) {
	ctx, done := s.bound(ctx)
	resp, err := s.client.Decrypt(ctx, &kmsapi.DecryptRequest{Ciphertext: req.Ciphertext, Uid: uid, KeyId: req.KeyID, Annotations: req.Annotations})
	if err = done(err); err != nil {
		return nil, err
	}
	return resp.Plaintext, nil
}

func (s *grpcService) Encrypt(ctx context.Context, uid string, plaintext []byte) (*kmsservice.EncryptResponse, error) {
	ctx, done := s.bound(ctx)
	resp, err := s.client.Encrypt(ctx, &kmsapi.EncryptRequest{Plaintext: plaintext, Uid: uid})
	if err = done(err); err != nil {
		return nil, err
	}
	return &kmsservice.EncryptResponse{Ciphertext: resp.Ciphertext, KeyID: resp.KeyId, Annotations: resp.Annotations}, nil
}

func (s *grpcService) Status(ctx context.Context) (*kmsservice.StatusResponse, error) {
	ctx, done := s.bound(ctx)
	resp, err := s.client.Status(ctx, &kmsapi.StatusRequest{})
	if err = done(err); err != nil {
		return nil, err
	}
	return &kmsservice.StatusResponse{Version: resp.Version, Healthz: resp.Healthz, KeyID: resp.KeyId}, nil
}
