package etcd3

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/benbjohnson/clock"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"orch.io/orch/components/periodic"
)

const (
	// DefaultCompactionInterval is the compactor's interval when StartCompactor is given none.
	DefaultCompactionInterval = 5 * time.Minute
	// CompactRevKey is the key the compactors of all API servers on one etcd share to take turns; its
	// Version counts compaction rounds and its value is the revision recorded in the last one.
	CompactRevKey = "compact_rev_key"
)

// StartCompactor compacts etcd's history in the background until ctx ends, as the Kubernetes
// apiserver does: every interval (DefaultCompactionInterval when interval <= 0), it records the
// current revision and compacts to the revision it recorded one interval earlier, so each compaction
// keeps at least one interval of history for watchers and paged lists to catch up. Several servers
// on one etcd share the work through CompactRevKey: in each round only the first one to bump it
// compacts, and the others adopt its round. The returned channel closes when the compactor stops.
func StartCompactor(ctx context.Context, client *clientv3.Client, clk clock.Clock, interval time.Duration) <-chan struct{} {
	if interval <= 0 {
		interval = DefaultCompactionInterval
	}
	lg := client.GetLogger()
	if lg == nil {
		lg = zap.NewNop()
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		var round, rev int64
		_ = periodic.Every(ctx, clk, interval, false, func(ctx context.Context) bool {
			var err error
			round, rev, err = compact(ctx, client, round, rev)
			if err != nil && ctx.Err() == nil {
				lg.Warn("etcd3: compaction failed", zap.Int64("revision", rev), zap.Error(err))
			}
			return false
		})
	}()
	return done
}

// compact runs one round: if the shared round counter is still at round, this server takes the round,
// records the current revision and compacts to prevRev. It returns the round and revision to use
// next time.
func compact(ctx context.Context, client *clientv3.Client, round, prevRev int64) (int64, int64, error) {
	resp, err := client.Txn(ctx).
		If(clientv3.Compare(clientv3.Version(CompactRevKey), "=", round)).
		Then(clientv3.OpPut(CompactRevKey, strconv.FormatInt(prevRev, 10))).
		Else(clientv3.OpGet(CompactRevKey)).
		Commit()
	if err != nil {
		return round, prevRev, err
	}
	cur := resp.Header.Revision
	if !resp.Succeeded {
		// Another server took this round; follow its count.
		kvs := resp.Responses[0].GetResponseRange().Kvs
		if len(kvs) == 0 {
			return 0, cur, nil
		}
		return kvs[0].Version, cur, nil
	}
	if prevRev == 0 { // the first round only records a revision
		return round + 1, cur, nil
	}
	if _, err := client.Compact(ctx, prevRev); err != nil && !errors.Is(err, rpctypes.ErrCompacted) {
		return round + 1, cur, err
	}
	return round + 1, cur, nil
}
