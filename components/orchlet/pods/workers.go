package pods

import (
	"context"
	"sync"

	"k8s.io/apimachinery/pkg/types"
)

// stepParallel does the items due now as Kubernetes' pod workers do, on a real node: the relist
// and the resync on the calling goroutine, then each pod's items in order on one of m.workers
// goroutines, several pods at once, so that one pod's slow runtime calls do not hold up the
// others. Items a batch makes due now (a sandbox that came up queues its pod's next sync) run in
// the next batch. It returns how many items it did.
func (m *Manager) stepParallel(ctx context.Context) int {
	n := 0
	for {
		var batch [][]itemKey
		index := map[types.UID]int{}
		for {
			k, ok := m.popDue(m.clk.Now())
			if !ok {
				break
			}
			n++
			if k.kind == kindRelist || k.kind == kindResync {
				// They read and add to every pod's state: done while no worker runs.
				m.do(ctx, k)
				continue
			}
			i, ok := index[k.uid]
			if !ok {
				i = len(batch)
				index[k.uid] = i
				batch = append(batch, nil)
			}
			batch[i] = append(batch[i], k)
		}
		if len(batch) == 0 {
			m.publishTouched()
			return n
		}
		m.runBatch(ctx, batch)
		m.publishTouched()
	}
}

// runBatch does each pod's items in order, up to m.workers pods at once, and returns when all are
// done.
func (m *Manager) runBatch(ctx context.Context, batch [][]itemKey) {
	work := make(chan []itemKey)
	var wg sync.WaitGroup
	for range min(m.workers, len(batch)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for items := range work {
				for _, k := range items {
					m.do(ctx, k)
				}
			}
		}()
	}
	for _, items := range batch {
		work <- items
	}
	close(work)
	wg.Wait()
}
