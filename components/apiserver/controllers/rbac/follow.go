package rbac

import (
	"context"
	"time"

	"github.com/benbjohnson/clock"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/klog/v2"

	"orch.io/orch/components/apiserver/controllers"
	"orch.io/orch/components/apiserver/registry/generic"
)

// RetryInterval is how long a failed list or watch waits before the next.
const RetryInterval = time.Second

// follower is what follow keeps in step with a store.
type follower interface {
	// replace makes objs everything held of the store's kind (a list).
	replace(objs []runtime.Object)
	// apply is one change after it.
	apply(t watch.EventType, obj runtime.Object)
}

// follow keeps f in step with store until ctx ends, as an informer does: a list replaces what f
// holds, then each change is applied; when the watch ends (its window passed, the store dropped
// it) or fails, it lists again, at once the first time and after RetryInterval on failure.
func follow(ctx context.Context, clk clock.Clock, stopping <-chan struct{}, store *generic.Store, f follower) {
	for ctx.Err() == nil {
		err := followOnce(ctx, store, f)
		if controllers.Failed(ctx, stopping, err) {
			klog.ErrorS(err, "Following RBAC objects", "resource", store.Strategy().Resource().Resource)
		}
		if err != nil {
			select {
			case <-ctx.Done():
			case <-clk.After(RetryInterval):
			}
		}
	}
}

func followOnce(ctx context.Context, store *generic.Store, f follower) error {
	list, err := store.List(ctx, "", generic.ListOptions{})
	if err != nil {
		return err
	}
	f.replace(generic.Items(list))
	lm, err := meta.ListAccessor(list)
	if err != nil {
		return err
	}
	events, err := store.Watch(ctx, "", generic.WatchOptions{ListOptions: generic.ListOptions{ResourceVersion: lm.GetResourceVersion()}})
	if err != nil {
		return err
	}
	for ev := range events {
		switch ev.Type {
		case watch.Added, watch.Modified, watch.Deleted:
			f.apply(ev.Type, ev.Object)
		case watch.Error:
			return nil // the window passed: list again
		}
	}
	return nil
}
