package app

import (
	"context"
	"time"

	"github.com/benbjohnson/clock"
	"go.opentelemetry.io/otel"
	"k8s.io/klog/v2"

	"orch.io/orch/components/apiserver/server"
	"orch.io/orch/components/apiserver/tracing"
)

// flushTimeout bounds how long stopping waits for the last spans to reach the collector.
const flushTimeout = 5 * time.Second

// startTracing exports the server's spans as --tracing-config-file says. It returns what adds
// tracing to the server's configuration and what flushes the last spans when the server stops.
func startTracing(ctx context.Context, files *configFiles, clk clock.Clock) (func(*server.Config), func(), error) {
	t := files.tracing
	if t == nil {
		return func(*server.Config) {}, func() {}, nil
	}
	// Export failures (a collector down) are logged, never a failed request.
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) { klog.ErrorS(err, "Exporting traces") }))
	tp, err := tracing.NewProvider(ctx, t.Config)
	if err != nil {
		return nil, nil, err
	}
	endpoint := tracing.DefaultEndpoint
	if e := t.Config.Endpoint; e != nil {
		endpoint = *e
	}
	klog.InfoS("Exporting traces", "file", t.File, "endpoint", endpoint, "sampler", tracing.Sampler(t.Config.SamplingRatePerMillion).Description())
	stop := func() {
		flush, cancel := clk.WithTimeout(context.Background(), flushTimeout)
		defer cancel()
		if err := tp.Shutdown(flush); err != nil {
			klog.ErrorS(err, "Flushing the last traces")
		}
	}
	return func(c *server.Config) { c.TracerProvider = tp }, stop, nil
}
