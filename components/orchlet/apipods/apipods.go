package apipods

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/benbjohnson/clock"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"orch.io/orch/components/orchlet/apiclient"
	"orch.io/orch/components/orchlet/sources"
)

// MirrorAnnotation marks a mirror pod: the API's copy of a static pod, which the agent does not run.
const MirrorAnnotation = "orch.io/config.mirror"

// retryPeriod is how often failed status posts, deletions and mirror pod writes are tried again
// when nothing else wakes the syncer.
const retryPeriod = time.Second

// statusBatch is how long the syncer lets the pod workers' changes gather before it posts them.
const statusBatch = 50 * time.Millisecond

// firstStatusHold is how long a new pod's first status waits while it is still Pending: a pod that
// starts within it is reported once, Running, rather than Pending and then Running, which halves
// what a burst of new pods costs of --kube-api-qps.
const firstStatusHold = time.Second

// Workers is what the syncer needs of the pod workers.
type Workers interface {
	Update(us ...sources.Update)
	// SharedPods are the pods with their latest statuses, shared: never modified, and the same
	// pointer while a pod's status has not changed.
	SharedPods() []*corev1.Pod
	Changed() <-chan struct{}
	Stopped(uid types.UID) bool
}

// Options configure a Syncer.
type Options struct {
	Clock clock.Clock
	Core  *apiclient.CoreV1Client
	Node  string
	// NodeUID is the registered Node's uid, empty before registration.
	NodeUID func() types.UID
	Workers Workers
	Logger  klog.Logger
}

// Syncer connects the API server's pods and the pod workers.
type Syncer struct {
	o Options

	mu sync.Mutex
	// deleting are the API pods with a deletionTimestamp, by uid, whose stop is not yet confirmed.
	deleting map[types.UID]*corev1.Pod
	// posted is the pod whose status was posted last, per pod uid (the mirror pod's for a static
	// pod): a shared pod of the workers, never modified.
	posted map[types.UID]*corev1.Pod
	// mirrors are the mirror pods in the API, by the static pod's full name.
	mirrors map[string]*corev1.Pod
	// arrived is when each API pod not yet reported reached the syncer.
	arrived map[types.UID]time.Time
	// earlier are the API pods not yet reported whose status an earlier agent posted (they have
	// container statuses): a restarted agent's pods, listed before the workers synced them.
	earlier map[types.UID]bool
	wake    chan struct{}
	synced  atomic.Bool
}

// HasSynced tells whether the watch has delivered every pod bound to the node at least once.
func (s *Syncer) HasSynced() bool { return s.synced.Load() }

// New returns a Syncer; Run starts it.
func New(o Options) *Syncer {
	return &Syncer{
		o: o, deleting: map[types.UID]*corev1.Pod{}, posted: map[types.UID]*corev1.Pod{},
		mirrors: map[string]*corev1.Pod{}, arrived: map[types.UID]time.Time{}, earlier: map[types.UID]bool{}, wake: make(chan struct{}, 1),
	}
}

// Run watches the node's pods with an informer, handing each change to Observe, and syncs until
// ctx ends. The watch re-lists and resumes by itself when the API server goes away and comes back;
// pods keep running meanwhile. A simulator instead calls Observe and Sync itself.
func (s *Syncer) Run(ctx context.Context) error {
	_, informer := cache.NewInformerWithOptions(cache.InformerOptions{
		ListerWatcher: s.ListWatch(),
		ObjectType:    &corev1.Pod{},
		Handler: cache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { s.Observe(obj.(*corev1.Pod), false) },
			UpdateFunc: func(_, obj any) { s.Observe(obj.(*corev1.Pod), false) },
			DeleteFunc: func(obj any) {
				if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
					obj = tomb.Obj
				}
				if pod, ok := obj.(*corev1.Pod); ok {
					s.Observe(pod, true)
				}
			},
		},
	})
	go informer.Run(ctx.Done())
	go func() {
		if cache.WaitForCacheSync(ctx.Done(), informer.HasSynced) {
			s.synced.Store(true)
		}
	}()
	ticker := s.o.Clock.Ticker(retryPeriod)
	defer ticker.Stop()
	for {
		changed := s.o.Workers.Changed()
		s.Sync(ctx)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-changed:
			// Changes that follow closely are posted together: a pod that starts at once goes
			// from Pending to Running in one patch, which --kube-api-qps then counts once.
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-s.o.Clock.After(statusBatch):
			}
		case <-s.wake:
		case <-ticker.C:
		}
	}
}

// ListWatch lists and watches the pods bound to the node, as Run's informer does; a simulator
// lists through it when an agent restarts.
func (s *Syncer) ListWatch() *cache.ListWatch {
	return cache.NewListWatchFromClient(s.o.Core.RESTClient(), "pods", metav1.NamespaceAll,
		fields.OneTermEqualSelector("spec.nodeName", s.o.Node))
}

// Observe hands a change of an API pod to the workers: a pod being deleted, or gone, is removed
// (stopped within its deletion's grace period); mirror pods are the agent's own and never run.
func (s *Syncer) Observe(pod *corev1.Pod, gone bool) {
	if _, mirror := pod.Annotations[MirrorAnnotation]; mirror {
		s.observeMirror(pod, gone)
		return
	}
	pod = pod.DeepCopy()
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations[sources.ConfigSourceAnnotation] = sources.SourceAPI
	op := sources.OpAdd
	switch {
	case gone:
		op = sources.OpRemove
		s.mu.Lock()
		delete(s.deleting, pod.UID)
		delete(s.arrived, pod.UID)
		delete(s.earlier, pod.UID)
		s.mu.Unlock()
	case pod.DeletionTimestamp != nil:
		op = sources.OpRemove
		s.mu.Lock()
		s.deleting[pod.UID] = pod
		delete(s.arrived, pod.UID)
		delete(s.earlier, pod.UID)
		s.mu.Unlock()
		s.poke()
	default:
		s.mu.Lock()
		if _, reported := s.posted[pod.UID]; !reported {
			if _, seen := s.arrived[pod.UID]; !seen {
				s.arrived[pod.UID] = s.o.Clock.Now()
			}
			if len(pod.Status.ContainerStatuses)+len(pod.Status.InitContainerStatuses) > 0 {
				s.earlier[pod.UID] = true
			}
		}
		s.mu.Unlock()
	}
	s.o.Workers.Update(sources.Update{Op: op, Source: sources.SourceAPI, Pod: pod})
}

// observeMirror forgets a mirror pod deleted by someone else, and confirms its deletion at once
// (the agent runs nothing for it); the next Sync creates it again, as the kubelet does.
func (s *Syncer) observeMirror(pod *corev1.Pod, gone bool) {
	if !gone && pod.DeletionTimestamp == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if m := s.mirrors[fullName(pod)]; m != nil && m.UID == pod.UID {
		delete(s.mirrors, fullName(pod))
	}
	if !gone {
		s.deleting[pod.UID] = pod.DeepCopy()
	}
	s.poke()
}

func (s *Syncer) poke() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Sync confirms finished deletions, posts changed statuses and keeps mirror pods; a failure is
// logged and tried again at the next Sync.
func (s *Syncer) Sync(ctx context.Context) {
	s.confirmDeletions(ctx)
	static := map[string]bool{}
	for _, pod := range s.o.Workers.SharedPods() {
		switch pod.Annotations[sources.ConfigSourceAnnotation] {
		case sources.SourceAPI:
			if s.holdFirstStatus(pod) {
				continue
			}
			if err := s.postStatus(ctx, pod.Namespace, pod.Name, pod.UID, pod.UID, pod); err != nil {
				s.o.Logger.Error(err, "Posting pod status failed; will retry", "pod", klog.KObj(pod))
			}
		default:
			static[fullName(pod)] = true
			if err := s.syncMirror(ctx, pod); err != nil {
				s.o.Logger.Error(err, "Syncing the mirror pod failed; will retry", "pod", klog.KObj(pod))
			}
		}
	}
	s.dropMirrors(ctx, static)
}

func fullName(pod *corev1.Pod) string { return pod.Namespace + "/" + pod.Name }

func sortPods(pods []*corev1.Pod) {
	sort.Slice(pods, func(i, j int) bool {
		if a, b := fullName(pods[i]), fullName(pods[j]); a != b {
			return a < b
		}
		return pods[i].UID < pods[j].UID
	})
}

// holdFirstStatus tells whether pod's first status, still Pending, waits for firstStatusHold; or,
// for a pod whose status an earlier agent posted, until the workers have synced it.
func (s *Syncer) holdFirstStatus(pod *corev1.Pod) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, reported := s.posted[pod.UID]; reported {
		delete(s.arrived, pod.UID)
		delete(s.earlier, pod.UID)
		return false
	}
	if s.earlier[pod.UID] && unsynced(pod) {
		// The kubelet's status manager has nothing to post for a pod before its first sync: the
		// workers' first status would put an adopted pod back to Pending in the API.
		return true
	}
	at, ok := s.arrived[pod.UID]
	if !ok {
		return false
	}
	if pod.Status.Phase == corev1.PodPending && s.o.Clock.Since(at) < firstStatusHold {
		return true
	}
	delete(s.arrived, pod.UID)
	return false
}

// unsynced tells the status the workers give a pod they admitted and have not synced yet: Pending,
// nothing known of its containers. A status the workers generate has each container of the spec.
func unsynced(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodPending && len(pod.Status.ContainerStatuses)+len(pod.Status.InitContainerStatuses) == 0
}

// confirmDeletions deletes from the API, with no grace and the uid as precondition, each pod
// being deleted whose containers have stopped.
func (s *Syncer) confirmDeletions(ctx context.Context) {
	s.mu.Lock()
	var done []*corev1.Pod
	for uid, pod := range s.deleting {
		if s.o.Workers.Stopped(uid) {
			done = append(done, pod)
		}
	}
	s.mu.Unlock()
	sortPods(done) // in a fixed order, so a simulation's requests are
	for _, pod := range done {
		zero, uid := int64(0), pod.UID
		err := s.o.Core.Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{
			GracePeriodSeconds: &zero, Preconditions: &metav1.Preconditions{UID: &uid},
		})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			s.o.Logger.Error(err, "Confirming a pod's deletion failed; will retry", "pod", klog.KObj(pod))
			continue
		}
		s.mu.Lock()
		delete(s.deleting, pod.UID)
		delete(s.posted, pod.UID)
		s.mu.Unlock()
		s.o.Logger.V(2).Info("Pod deleted", "pod", klog.KObj(pod))
	}
}

// postStatus patches the status of namespace/name to pod's when it differs from the last one
// posted for key; the uid is a precondition, so a status never lands on a newer pod of the same
// name. The pod is the workers' shared one: the same pointer as last time is the same status, so
// the pods that did not change since the last Sync cost no comparison.
func (s *Syncer) postStatus(ctx context.Context, namespace, name string, key, uid types.UID, pod *corev1.Pod) error {
	s.mu.Lock()
	last, ok := s.posted[key]
	_, deleting := s.deleting[key]
	s.mu.Unlock()
	if deleting || ok && last == pod {
		return nil
	}
	if ok && apiequality.Semantic.DeepEqual(&last.Status, &pod.Status) {
		s.mu.Lock()
		s.posted[key] = pod
		s.mu.Unlock()
		return nil
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"uid": uid}, "status": &pod.Status})
	if err != nil {
		return err
	}
	_, err = s.o.Core.Pods(namespace).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}, "status")
	if apierrors.IsNotFound(err) {
		return nil // deleted meanwhile: its removal reaches the workers through the watch
	}
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.posted[key] = pod
	s.mu.Unlock()
	return nil
}

// syncMirror makes sure the API shows the static pod: a mirror pod of the same name whose
// annotation holds the static pod's uid, bound to this node and owned by the Node; then its status.
func (s *Syncer) syncMirror(ctx context.Context, static *corev1.Pod) error {
	name := fullName(static)
	pods := s.o.Core.Pods(static.Namespace)
	s.mu.Lock()
	mirror := s.mirrors[name]
	s.mu.Unlock()
	if mirror == nil || mirror.Annotations[MirrorAnnotation] != string(static.UID) {
		if s.o.NodeUID() == "" {
			return nil // a mirror pod is owned by its Node: none before the Node is registered
		}
		existing, err := pods.Get(ctx, static.Name, metav1.GetOptions{})
		switch {
		case err == nil && existing.Annotations[MirrorAnnotation] == string(static.UID):
			mirror = existing
		case err == nil:
			// A stale mirror (the manifest changed) or a pod of the API with the static pod's
			// name: only a mirror is the agent's to replace.
			if _, ok := existing.Annotations[MirrorAnnotation]; !ok {
				return fmt.Errorf("a pod %s that is not a mirror pod exists in the API", name)
			}
			zero, uid := int64(0), existing.UID
			if err := pods.Delete(ctx, static.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero, Preconditions: &metav1.Preconditions{UID: &uid}}); err != nil && !apierrors.IsNotFound(err) {
				return err
			}
			fallthrough
		case apierrors.IsNotFound(err):
			if mirror, err = pods.Create(ctx, s.mirrorOf(static), metav1.CreateOptions{}); err != nil {
				return err
			}
		default:
			return err
		}
		s.mu.Lock()
		s.mirrors[name] = mirror
		s.mu.Unlock()
	}
	return s.postStatus(ctx, mirror.Namespace, mirror.Name, static.UID, mirror.UID, static)
}

func (s *Syncer) mirrorOf(static *corev1.Pod) *corev1.Pod {
	m := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: static.Name, Namespace: static.Namespace, Labels: static.Labels,
			Annotations: map[string]string{},
		},
		Spec: *static.Spec.DeepCopy(),
	}
	for k, v := range static.Annotations {
		m.Annotations[k] = v
	}
	m.Annotations[MirrorAnnotation] = string(static.UID)
	m.Spec.NodeName = s.o.Node
	controller := true
	m.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: s.o.Node, UID: s.o.NodeUID(), Controller: &controller}}
	return m
}

// dropMirrors deletes the mirror pods of static pods that are gone.
func (s *Syncer) dropMirrors(ctx context.Context, static map[string]bool) {
	s.mu.Lock()
	var stale []*corev1.Pod
	for name, m := range s.mirrors {
		if !static[name] {
			stale = append(stale, m)
		}
	}
	s.mu.Unlock()
	sortPods(stale)
	for _, m := range stale {
		zero, uid := int64(0), m.UID
		err := s.o.Core.Pods(m.Namespace).Delete(ctx, m.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero, Preconditions: &metav1.Preconditions{UID: &uid}})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			s.o.Logger.Error(err, "Deleting a mirror pod failed; will retry", "pod", klog.KObj(m))
			continue
		}
		s.mu.Lock()
		delete(s.mirrors, fullName(m))
		s.mu.Unlock()
	}
}
