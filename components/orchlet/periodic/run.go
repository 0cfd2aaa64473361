package periodic

import (
	"context"
	"time"

	"github.com/benbjohnson/clock"
)

// Run calls step at once and then whenever next says, on clk, until ctx ends.
func Run(ctx context.Context, clk clock.Clock, step func(context.Context), next func() time.Time) error {
	for {
		step(ctx)
		t := clk.Timer(next().Sub(clk.Now()))
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}
