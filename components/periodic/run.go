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

// Until calls step at once and then a period after each call returns, on clk, until ctx ends: a
// slow step delays the next rather than crowding it, as apimachinery's wait.Until does.
func Until(ctx context.Context, clk clock.Clock, period time.Duration, step func(context.Context)) error {
	return Run(ctx, clk, step, func() time.Time { return clk.Now().Add(period) })
}

// Every calls fn every period on clk until ctx ends or fn reports it is done, and first at once
// when immediate. The ticker is made before fn first runs, so a clock moved while fn runs is not
// missed. It returns ctx's error, or nil when fn is done.
func Every(ctx context.Context, clk clock.Clock, period time.Duration, immediate bool, fn func(context.Context) (done bool)) error {
	ticker := clk.Ticker(period)
	defer ticker.Stop()
	if immediate && fn(ctx) {
		return nil
	}
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-ticker.C:
			if fn(ctx) {
				return nil
			}
		}
	}
}
