package prober

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// podFormat is Kubernetes' format.Pod: name_namespace(uid).
func podFormat(pod *corev1.Pod) string {
	return fmt.Sprintf("%s_%s(%s)", pod.Name, pod.Namespace, pod.UID)
}

// RunHook runs a postStart or preStop handler in the target's instance id, bounded by limit on the
// clock (0: the runtime request timeout), and returns the message Kubernetes' handler runner gives
// on failure. A sleep handler does nothing here: the caller waits for it on its queue.
func (p *Prober) RunHook(ctx context.Context, tg Target, id string, h *corev1.LifecycleHandler, limit time.Duration) (string, error) {
	c := tg.Container
	if limit <= 0 {
		limit = p.calls.Timeout()
	}
	switch {
	case h.Exec != nil:
		var stdout, stderr []byte
		err := p.calls.Within(ctx, limit, func(ctx context.Context) (err error) {
			stdout, stderr, err = p.rt.ExecSync(ctx, id, h.Exec.Command, 0)
			return err
		})
		if err != nil {
			return fmt.Sprintf("Exec lifecycle hook (%v) for Container %q in Pod %q failed - error: %v, message: %q",
				h.Exec.Command, c.Name, podFormat(tg.Pod), err, string(stdout)+string(stderr)), err
		}
		return "", nil
	case h.HTTPGet != nil:
		err := p.calls.Within(ctx, limit, func(ctx context.Context) error {
			return p.httpGet(ctx, tg, h.HTTPGet, false)
		})
		if err != nil {
			return fmt.Sprintf("HTTP lifecycle hook (%s) for Container %q in Pod %q failed - error: %v", h.HTTPGet.Path, c.Name, podFormat(tg.Pod), err), err
		}
		return "", nil
	case h.Sleep != nil:
		// Not a call: killContainer and startContainer wait for a sleep on the queue instead.
		return "", nil
	}
	// tcpSocket is kept in the API for compatibility only: the kubelet runs no such hook and
	// fails it as an invalid handler, as here.
	err := errors.New("invalid lifecycle handler: one of exec, httpGet or sleep is needed")
	return err.Error(), err
}
