package rbac

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/benbjohnson/clock"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"orch.io/orch/components/apiserver/registry/generic"
	"orch.io/orch/components/authz/rbac"
)

// Indexer keeps Index in step with the four RBAC stores, and marks it synced once each has been
// listed.
type Indexer struct {
	Clock clock.Clock
	Index *rbac.Index
	// Roles, ClusterRoles, RoleBindings and ClusterRoleBindings are the server's stores.
	Roles, ClusterRoles, RoleBindings, ClusterRoleBindings *generic.Store
	Stopping                                               <-chan struct{}
}

// Run follows every store until ctx ends.
func (i *Indexer) Run(ctx context.Context) {
	stores := []*generic.Store{i.Roles, i.ClusterRoles, i.RoleBindings, i.ClusterRoleBindings}
	var unlisted atomic.Int32
	unlisted.Store(int32(len(stores)))
	listed := func() {
		if unlisted.Add(-1) == 0 {
			i.Index.MarkSynced()
		}
	}
	var done sync.WaitGroup
	for _, s := range stores {
		done.Add(1)
		go func() {
			defer done.Done()
			follow(ctx, i.Clock, i.Stopping, s, &indexFollower{x: i.Index, example: s.Strategy().New(), listed: listed})
		}()
	}
	done.Wait()
}

// indexFollower feeds one kind to the index; listed is called after its first list.
type indexFollower struct {
	x       *rbac.Index
	example runtime.Object
	once    sync.Once
	listed  func()
}

func (f *indexFollower) replace(objs []runtime.Object) {
	f.x.Replace(f.example, objs)
	f.once.Do(f.listed)
}

func (f *indexFollower) apply(t watch.EventType, obj runtime.Object) {
	if t == watch.Deleted {
		f.x.Delete(obj)
		return
	}
	f.x.Set(obj)
}
