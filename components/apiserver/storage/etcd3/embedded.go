package etcd3

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.etcd.io/etcd/server/v3/etcdserver/api/v3client"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// Embedded is an etcd server running in this process, the single-machine default, with a client
// connected to it.
type Embedded struct {
	// Client is connected to the server; Close closes it.
	Client *clientv3.Client
	// Endpoint is the server's client URL on loopback (http://127.0.0.1:PORT).
	Endpoint string

	etcd      *embed.Etcd
	logLevel  zap.AtomicLevel
	closeOnce sync.Once
}

// embeddedStartTimeout bounds the wait for the server to be ready when ctx has no deadline.
const embeddedStartTimeout = time.Minute

// StartEmbedded starts a one-member etcd in this process with its data under dataDir (created if
// missing; an existing one is reopened with its data), serving clients and peers on loopback ports
// the kernel picks, so two servers never collide. It logs through its own zap logger to stderr at
// warn level (silenced while Close stops it, when it reports its listeners closing as errors).
// Writes are fsynced as in any etcd (durability is never traded for speed). Its Client is
// in-process: requests reach the server by function call, so no response size limit applies.
//
// It is a member that never has followers, so it keeps only singleMemberCatchUpEntries raft entries
// in memory past a snapshot, where etcd keeps 5,000 for followers to catch up from (about 8 MiB of
// heap with 1.7 KB writes); everything else is etcd's default, as Kubernetes runs etcd (a snapshot
// every 10,000 writes, 100 ms backend batches).
func StartEmbedded(ctx context.Context, dataDir string) (*Embedded, error) {
	return startEmbedded(ctx, dataDir, singleMemberCatchUpEntries)
}

// singleMemberCatchUpEntries is how many raft entries the embedded member keeps past a snapshot.
const singleMemberCatchUpEntries = 500

// StartEmbeddedEtcdDefaults is StartEmbedded with etcd's defaults throughout, as in a Kubernetes
// cluster: the etcd orchload runs Kubernetes' API server on.
func StartEmbeddedEtcdDefaults(ctx context.Context, dataDir string) (*Embedded, error) {
	return startEmbedded(ctx, dataDir, 0)
}

// startEmbedded is StartEmbedded keeping catchUp raft entries past a snapshot (0: etcd's default).
func startEmbedded(ctx context.Context, dataDir string, catchUp uint64) (*Embedded, error) {
	if dataDir == "" {
		return nil, errors.New("etcd3: StartEmbedded needs a data directory")
	}
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return nil, fmt.Errorf("etcd3: data directory: %w", err)
	}
	level := zap.NewAtomicLevelAt(zapcore.WarnLevel)
	lg := quietLogger(level)
	cfg := embed.NewConfig()
	cfg.Name = "orch"
	cfg.Dir = dataDir
	loopback := url.URL{Scheme: "http", Host: "127.0.0.1:0"}
	cfg.ListenClientUrls = []url.URL{loopback}
	cfg.AdvertiseClientUrls = []url.URL{loopback}
	cfg.ListenPeerUrls = []url.URL{loopback}
	cfg.AdvertisePeerUrls = []url.URL{loopback}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	cfg.Logger = "zap"
	cfg.LogLevel = "warn"
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(lg)
	cfg.UnsafeNoFsync = false
	if catchUp > 0 {
		cfg.SnapshotCatchUpEntries = catchUp
	}

	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return nil, fmt.Errorf("etcd3: start embedded etcd in %s: %w", dataDir, err)
	}
	wait := ctx
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		wait, cancel = context.WithTimeout(ctx, embeddedStartTimeout)
		defer cancel()
	}
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		e.Close()
		return nil, fmt.Errorf("etcd3: embedded etcd failed to start: %w", err)
	case <-wait.Done():
		e.Close()
		return nil, fmt.Errorf("etcd3: embedded etcd not ready: %w", wait.Err())
	}
	if len(e.Clients) == 0 {
		e.Close()
		return nil, errors.New("etcd3: embedded etcd has no client listener")
	}
	endpoint := "http://" + e.Clients[0].Addr().String()
	// The client calls the server's functions directly rather than through gRPC on loopback: no
	// protobuf encoding, HTTP/2 framing or copies between the two halves of one process.
	client := v3client.New(e.Server)
	return &Embedded{Client: client, Endpoint: endpoint, etcd: e, logLevel: level}, nil
}

// Err reports errors the running server hits after it started.
func (e *Embedded) Err() <-chan error { return e.etcd.Err() }

// Close closes the client and stops the server; the data stays in its directory. Close may be called
// more than once.
func (e *Embedded) Close() error {
	var err error
	e.closeOnce.Do(func() {
		err = e.Client.Close()
		if errors.Is(err, context.Canceled) {
			err = nil
		}
		e.logLevel.SetLevel(zapcore.FatalLevel)
		e.etcd.Close()
	})
	return err
}

// quietLogger writes to stderr at level.
func quietLogger(level zap.AtomicLevel) *zap.Logger {
	cfg := zap.NewProductionConfig()
	cfg.Level = level
	cfg.Encoding = "console"
	cfg.EncoderConfig.EncodeTime = zapcore.ISO8601TimeEncoder
	cfg.DisableStacktrace = true
	lg, err := cfg.Build()
	if err != nil {
		return zap.NewNop()
	}
	return lg.Named("etcd")
}
