package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/benbjohnson/clock"

	"orch.io/orch/components/apiserver/storage"
)

// HealthCheck is a named check of /healthz and /readyz.
type HealthCheck struct {
	Name  string
	Check func(context.Context) error
}

// storageCheck is /healthz's etcd check: storage answers its revision within 2s.
func storageCheck(clk clock.Clock, s storage.Interface) func(context.Context) error {
	return func(ctx context.Context) error {
		ctx, cancel := clk.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		_, err := s.Revision(ctx)
		return err
	}
}

// shutdownCheck fails once terminating closes, as Kubernetes' readyz "shutdown" check does.
func shutdownCheck(terminating <-chan struct{}) func(context.Context) error {
	return func(context.Context) error {
		select {
		case <-terminating:
			return errors.New("process is shutting down")
		default:
			return nil
		}
	}
}

// healthHandler answers like Kubernetes' /healthz: "ok", or with ?verbose one line per check.
// extra, when set, adds the checks it gives at the time of the request.
func healthHandler(name string, checks []HealthCheck, extra func() []HealthCheck) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var report strings.Builder
		failed := false
		all := checks
		if extra != nil {
			all = append(slices.Clip(checks), extra()...)
		}
		for _, c := range all {
			if err := c.Check(r.Context()); err != nil {
				failed = true
				fmt.Fprintf(&report, "[-]%s failed: %v\n", c.Name, err)
			} else {
				fmt.Fprintf(&report, "[+]%s ok\n", c.Name)
			}
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		if failed {
			w.WriteHeader(http.StatusInternalServerError)
			fmt.Fprintf(w, "%s%s check failed\n", report.String(), name)
			return
		}
		if _, verbose := r.URL.Query()["verbose"]; verbose {
			fmt.Fprintf(w, "%s%s check passed\n", report.String(), name)
			return
		}
		fmt.Fprint(w, "ok")
	})
}
