package nodestatus

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	goruntime "runtime"
	"slices"
	"sync"
	"time"

	"github.com/benbjohnson/clock"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	cri "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"

	"orch.io/orch/components/orchlet/apiclient"
)

// pressureConditions are the kubelet's setters' (MemoryPressureCondition, DiskPressureCondition,
// PIDPressureCondition) reasons and messages, renamed. The taints of these conditions
// (node.orch.io/memory-pressure and the others) are not the agent's to set, as in Kubernetes: the
// API server keeps them in step with the conditions the agent posts.
type pressureCondition struct {
	condition                 corev1.NodeConditionType
	trueReason, trueMessage   string
	falseReason, falseMessage string
}

var pressureConditions = []pressureCondition{
	{corev1.NodeMemoryPressure, "OrchletHasInsufficientMemory", "orchlet has insufficient memory available", "OrchletHasSufficientMemory", "orchlet has sufficient memory available"},
	{corev1.NodeDiskPressure, "OrchletHasDiskPressure", "orchlet has disk pressure", "OrchletHasNoDiskPressure", "orchlet has no disk pressure"},
	{corev1.NodePIDPressure, "OrchletHasInsufficientPID", "orchlet has insufficient PID available", "OrchletHasSufficientPID", "orchlet has sufficient PID available"},
}

func (c *Controller) pressure() []corev1.NodeConditionType {
	if c.o.Pressure == nil {
		return nil
	}
	return c.o.Pressure()
}

// Kubernetes' heartbeat: a 40 s lease renewed every quarter of it, in the node-lease namespace.
const (
	LeaseNamespace       = "orch-node-lease"
	LeaseDurationSeconds = 40
	RenewInterval        = 10 * time.Second
)

// ControllerManagedAttachAnnotation on a Node says the attach/detach controller attaches and
// detaches its volumes (Kubernetes' volumes.kubernetes.io/controller-managed-attach-detach).
const ControllerManagedAttachAnnotation = "volumes.orch.io/controller-managed-attach-detach"

// Registration retries back off from 100 ms to 7 s, as the kubelet's do.
const (
	RegisterBackoffStart = 100 * time.Millisecond
	RegisterBackoffMax   = 7 * time.Second
)

// Options are what the node controller needs from the agent.
type Options struct {
	Clock clock.Clock
	// Core registers the node; Heartbeat posts its status and Leases renews its lease.
	Core      *apiclient.CoreV1Client
	Heartbeat *apiclient.CoreV1Client
	Leases    rest.Interface
	Node      string
	// Register creates the Node when absent (--register-node).
	Register bool
	// ControllerAttachDetach (--enable-controller-attach-detach) annotates the Node so that the
	// attach/detach controller, not the agent, attaches its volumes; false removes the annotation.
	ControllerAttachDetach bool
	// Labels, Taints and ProviderID are set when the Node is registered; Labels are kept on it.
	Labels     map[string]string
	Taints     []corev1.Taint
	ProviderID string
	Addresses  []corev1.NodeAddress
	// ExternalCloudProvider (--cloud-provider=external) registers the Node with the uninitialized
	// taint a cloud controller removes once it has initialized it, and leaves the addresses the
	// controller set alone. ProvidedNodeIP (--node-ip, when given) is the annotation that hints
	// the controller at the addresses.
	ExternalCloudProvider bool
	ProvidedNodeIP        string
	// Capacity is what the node has; Allocatable what pods may use of it.
	Capacity, Allocatable corev1.ResourceList
	// Port is the agent's HTTPS port, published as daemonEndpoints.
	Port int32
	// StatusFrequency is --node-status-update-frequency.
	StatusFrequency time.Duration
	// MaxImages caps status.images (-1: no cap).
	MaxImages int32
	Runtime   cri.RuntimeService
	Images    cri.ImageManagerService
	// Version is the agent's, for nodeInfo.
	Version string
	// System is what the host tells of itself (OS image, kernel, machine and boot IDs); the rest of
	// nodeInfo comes from the agent and its runtime.
	System corev1.NodeSystemInfo
	// Pressure, when set, are the eviction manager's pressure conditions, each posted True.
	Pressure func() []corev1.NodeConditionType
	Logger   klog.Logger
}

// Controller keeps the agent's Node and Lease.
type Controller struct {
	o Options
	// conditions are the last posted, one of each type, so transition times move only on a
	// change: a handful, in a slice (a map of them held four times the memory, at every node).
	conditions []corev1.NodeCondition
	lease      apiclient.PostedLease
	// posted is the Node the last post or the registration answered; none: read it first.
	posted apiclient.PostedNode

	mu      sync.Mutex
	nodeUID string
}

// New returns a controller; Run drives it, or a simulator calls its steps.
func New(o Options) *Controller {
	o.Capacity, o.Allocatable = withStrings(o.Capacity), withStrings(o.Allocatable)
	return &Controller{o: o, conditions: make([]corev1.NodeCondition, 0, len(pressureConditions)+1)}
}

// withStrings is a copy of l whose quantities hold their canonical form: a quantity made from a
// number works it out, allocating, at every encode of every post otherwise. The form is what any
// encode writes, so the wire is the same.
func withStrings(l corev1.ResourceList) corev1.ResourceList {
	if l == nil {
		return nil
	}
	out := make(corev1.ResourceList, len(l))
	for name, q := range l {
		q = q.DeepCopy()
		_ = q.String()
		out[name] = q
	}
	return out
}

// Run registers the node (retrying with back-off until it succeeds or ctx ends), then posts status
// every StatusFrequency and renews the lease every RenewInterval. Failures are logged and tried
// again at the next tick: a node keeps running its pods while the API server is away.
func (c *Controller) Run(ctx context.Context) error {
	backoff := RegisterBackoffStart
	for {
		err := c.Register(ctx)
		if err == nil {
			break
		}
		c.o.Logger.Error(err, "Registering the node failed; retrying", "node", c.o.Node, "in", backoff)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-c.o.Clock.After(backoff):
		}
		backoff = min(2*backoff, RegisterBackoffMax)
	}
	// The periods count from the first post, and the tickers exist once it is seen: a clock moved
	// right after it is not missed.
	status := c.o.Clock.Ticker(c.o.StatusFrequency)
	defer status.Stop()
	lease := c.o.Clock.Ticker(RenewInterval)
	defer lease.Stop()
	c.step(ctx, "Updating node status", c.SyncStatus)
	c.step(ctx, "Renewing the node lease", c.RenewLease)
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-status.C:
			c.step(ctx, "Updating node status", c.SyncStatus)
		case <-lease.C:
			c.step(ctx, "Renewing the node lease", c.RenewLease)
		}
	}
}

func (c *Controller) step(ctx context.Context, what string, fn func(context.Context) error) {
	if err := fn(ctx); err != nil && ctx.Err() == nil {
		c.o.Logger.Error(err, what+" failed; retrying at the next period", "node", c.o.Node)
	}
}

// Register creates the Node, or, when it exists, reconciles what the agent owns on it: its labels
// and an unset providerID. Without Register it only checks that the Node exists.
func (c *Controller) Register(ctx context.Context) error {
	nodes := c.o.Core.Nodes()
	if !c.o.Register {
		n, err := nodes.Get(ctx, c.o.Node, metav1.GetOptions{})
		if err == nil {
			c.setNodeUID(n.UID)
			c.posted = apiclient.NewPostedNode(n)
			c.adoptConditions(n)
		}
		return err
	}
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: c.o.Node, Labels: maps.Clone(c.o.Labels), Annotations: map[string]string{}},
		Spec:       corev1.NodeSpec{Taints: slices.Clone(c.o.Taints), ProviderID: c.o.ProviderID},
	}
	if c.o.ControllerAttachDetach {
		node.Annotations[ControllerManagedAttachAnnotation] = "true"
	}
	if c.o.ExternalCloudProvider {
		node.Spec.Taints = append(node.Spec.Taints, corev1.Taint{Key: TaintExternalCloudProvider, Value: "true", Effect: corev1.TaintEffectNoSchedule})
		if c.o.ProvidedNodeIP != "" {
			node.Annotations[AnnotationProvidedNodeIP] = c.o.ProvidedNodeIP
		}
	}
	if len(node.Annotations) == 0 {
		node.Annotations = nil
	}
	status, err := c.status(ctx)
	if err != nil {
		return err
	}
	node.Status = status
	created, err := nodes.Create(ctx, node, metav1.CreateOptions{})
	if err == nil {
		c.setNodeUID(created.UID)
		c.posted = apiclient.NewPostedNode(created)
		c.o.Logger.Info("Registered the node", "node", c.o.Node)
		return nil
	}
	if !apierrors.IsAlreadyExists(err) {
		return err
	}
	existing, err := nodes.Get(ctx, c.o.Node, metav1.GetOptions{})
	if err != nil {
		return err
	}
	changed := false
	if existing.Labels == nil {
		existing.Labels = map[string]string{}
	}
	for k, v := range c.o.Labels {
		if existing.Labels[k] != v {
			existing.Labels[k], changed = v, true
		}
	}
	if existing.Spec.ProviderID == "" && c.o.ProviderID != "" {
		existing.Spec.ProviderID, changed = c.o.ProviderID, true
	}
	// The kubelet's reconcileCMADAnnotationWithExistingNode: the annotation follows the option.
	if _, set := existing.Annotations[ControllerManagedAttachAnnotation]; set != c.o.ControllerAttachDetach || (set && existing.Annotations[ControllerManagedAttachAnnotation] != "true") {
		if c.o.ControllerAttachDetach {
			if existing.Annotations == nil {
				existing.Annotations = map[string]string{}
			}
			existing.Annotations[ControllerManagedAttachAnnotation] = "true"
		} else {
			delete(existing.Annotations, ControllerManagedAttachAnnotation)
		}
		changed = true
	}
	if changed {
		if existing, err = nodes.Update(ctx, existing, metav1.UpdateOptions{}); err != nil {
			return err
		}
	}
	c.setNodeUID(existing.UID)
	c.posted = apiclient.NewPostedNode(existing)
	c.adoptConditions(existing)
	c.o.Logger.Info("Node already registered; reconciled", "node", c.o.Node)
	return nil
}

// adoptConditions takes the conditions of a Node registered before this agent started as the last
// posted (over those of the create it refused), so a restarted agent keeps a condition's
// transition time while its status stays, as the kubelet's setters read the conditions of the
// Node they update.
func (c *Controller) adoptConditions(node *corev1.Node) {
	for _, cond := range node.Status.Conditions {
		c.setCondition(cond)
	}
}

// setCondition keeps cond as the last posted of its type.
func (c *Controller) setCondition(cond corev1.NodeCondition) {
	for i := range c.conditions {
		if c.conditions[i].Type == cond.Type {
			c.conditions[i] = cond
			return
		}
	}
	c.conditions = append(c.conditions, cond)
}

// SyncStatus posts the node's current status. The Node it posts over is the one the last post or
// the registration answered, as the kubelet reads its own Node from its informer rather than the
// API server (kubelet_node_status.go, tryUpdateNodeStatus): a post is one request, not a read and
// a write. When that Node is out of date (another writer changed it: a conflict) or gone, the
// post is tried again at once over a Node read from the API server, as the kubelet's retries are.
func (c *Controller) SyncStatus(ctx context.Context) error {
	posted := c.posted
	c.posted = apiclient.PostedNode{}
	if posted.Valid() {
		err := c.postStatus(ctx, posted)
		// nil first: the errors package's look into a nil error allocates, at every post
		if err == nil || !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
			return err
		}
	}
	node, err := c.o.Heartbeat.Nodes().Get(ctx, c.o.Node, metav1.GetOptions{})
	if err != nil {
		return err
	}
	return c.postStatus(ctx, apiclient.NewPostedNode(node))
}

// postStatus writes the current status over node, keeping the answer for the next post. A
// failure that is no answer of the API server (it could not be reached) keeps node: nothing
// was written.
func (c *Controller) postStatus(ctx context.Context, node apiclient.PostedNode) error {
	status, err := c.status(ctx)
	if err != nil {
		c.posted = node
		return err
	}
	if c.o.ExternalCloudProvider {
		prev, err := node.Status()
		if err != nil {
			c.posted = node
			return err
		}
		if len(prev.Addresses) > 0 {
			// The cloud controller's addresses, or those registered, take precedence.
			status.Addresses = prev.Addresses
		}
	}
	updated, err := c.o.Heartbeat.UpdateNodeStatus(ctx, node, &status)
	var answered apierrors.APIStatus
	switch {
	case err == nil:
		c.posted = updated
	case !errors.As(err, &answered):
		c.posted = node
	}
	return err
}

// status reads the runtime and builds the status to post.
func (c *Controller) status(ctx context.Context) (corev1.NodeStatus, error) {
	now := metav1.NewTime(c.o.Clock.Now().Truncate(time.Second))
	version, err := c.o.Runtime.Version(ctx, "v1")
	if err != nil {
		return corev1.NodeStatus{}, fmt.Errorf("reading the runtime's version: %w", err)
	}
	ready, message := true, "orchlet is posting ready status"
	rs, err := c.o.Runtime.Status(ctx, false)
	switch {
	case err != nil:
		ready, message = false, fmt.Sprintf("container runtime status check may not have completed yet: %v", err)
	default:
		for _, cond := range rs.GetStatus().GetConditions() {
			if (cond.Type == runtimeapi.RuntimeReady || cond.Type == runtimeapi.NetworkReady) && !cond.Status {
				ready, message = false, fmt.Sprintf("container runtime not ready: %s=false reason:%s message:%s", cond.Type, cond.Reason, cond.Message)
			}
		}
	}
	readyStatus, readyReason := corev1.ConditionTrue, "OrchletReady"
	if !ready {
		readyStatus, readyReason = corev1.ConditionFalse, "OrchletNotReady"
	}
	conds := make([]corev1.NodeCondition, 0, len(pressureConditions)+1)
	pressure := c.pressure()
	for _, p := range pressureConditions {
		if slices.Contains(pressure, p.condition) {
			conds = append(conds, c.condition(p.condition, corev1.ConditionTrue, p.trueReason, p.trueMessage, now))
		} else {
			conds = append(conds, c.condition(p.condition, corev1.ConditionFalse, p.falseReason, p.falseMessage, now))
		}
	}
	conds = append(conds, c.condition(corev1.NodeReady, readyStatus, readyReason, message, now))
	images, err := c.images(ctx)
	if err != nil {
		return corev1.NodeStatus{}, err
	}
	// Capacity and Allocatable are the options' own maps, not copies: the status is encoded and
	// replaced by the answer's, never changed (as Addresses already were).
	return corev1.NodeStatus{
		Capacity:    c.o.Capacity,
		Allocatable: c.o.Allocatable,
		Conditions:  conds,
		Addresses:   c.o.Addresses,
		DaemonEndpoints: corev1.NodeDaemonEndpoints{
			KubeletEndpoint: corev1.DaemonEndpoint{Port: c.o.Port},
		},
		NodeInfo: c.nodeInfo(version),
		Images:   images,
	}, nil
}

func (c *Controller) nodeInfo(version *runtimeapi.VersionResponse) corev1.NodeSystemInfo {
	info := c.o.System
	info.KubeletVersion = c.o.Version
	info.ContainerRuntimeVersion = version.RuntimeName + "://" + version.RuntimeVersion
	info.OperatingSystem = goruntime.GOOS
	info.Architecture = goruntime.GOARCH
	return info
}

// condition keeps a condition's transition time while its status stays, and moves it on a change.
func (c *Controller) condition(t corev1.NodeConditionType, status corev1.ConditionStatus, reason, message string, now metav1.Time) corev1.NodeCondition {
	transition := now
	for _, prev := range c.conditions {
		if prev.Type == t && prev.Status == status {
			transition = prev.LastTransitionTime
		}
	}
	cond := corev1.NodeCondition{Type: t, Status: status, Reason: reason, Message: message, LastHeartbeatTime: now, LastTransitionTime: transition}
	c.setCondition(cond)
	return cond
}

// images lists the node's images, largest first, capped at MaxImages as the kubelet does.
func (c *Controller) images(ctx context.Context) ([]corev1.ContainerImage, error) {
	if c.o.MaxImages == 0 {
		return nil, nil
	}
	list, err := c.o.Images.ListImages(ctx, &runtimeapi.ImageFilter{})
	if err != nil {
		return nil, fmt.Errorf("listing images: %w", err)
	}
	slices.SortStableFunc(list, func(a, b *runtimeapi.Image) int { return cmp.Compare(b.Size, a.Size) })
	var out []corev1.ContainerImage
	for _, img := range list {
		names := append(append([]string{}, img.RepoDigests...), img.RepoTags...)
		if len(names) == 0 {
			continue
		}
		out = append(out, corev1.ContainerImage{Names: names, SizeBytes: int64(img.Size)})
		if c.o.MaxImages > 0 && len(out) == int(c.o.MaxImages) {
			break
		}
	}
	return out, nil
}

// RenewLease creates the node's Lease or renews it: holder the node, 40 s, owned by the Node.
func (c *Controller) RenewLease(ctx context.Context) error {
	now := metav1.NewMicroTime(c.o.Clock.Now())
	holder, duration := c.o.Node, int32(LeaseDurationSeconds)
	if !c.lease.Valid() {
		lease := &coordinationv1.Lease{}
		err := c.o.Leases.Get().Namespace(LeaseNamespace).Resource("leases").Name(c.o.Node).Do(ctx).Into(lease)
		switch {
		case apierrors.IsNotFound(err):
			lease = &coordinationv1.Lease{
				ObjectMeta: metav1.ObjectMeta{Name: c.o.Node, Namespace: LeaseNamespace},
				Spec:       coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &duration, RenewTime: &now},
			}
			if uid := c.NodeUID(); uid != "" {
				lease.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: c.o.Node, UID: types.UID(uid)}}
			}
			created := &coordinationv1.Lease{}
			if err := c.o.Leases.Post().Namespace(LeaseNamespace).Resource("leases").Body(lease).Do(ctx).Into(created); err != nil {
				return err
			}
			c.lease = apiclient.NewPostedLease(created)
			return nil
		case err != nil:
			return err
		}
		c.lease = apiclient.NewPostedLease(lease)
	}
	// The last answer is the controller's alone: renewed in place, not copied. A renewal that
	// fails unanswered leaves it with the renewal's fields, which the next one sets again.
	updated, err := apiclient.RenewLease(ctx, c.o.Leases, LeaseNamespace, c.o.Node, c.lease, func(spec *coordinationv1.LeaseSpec) {
		spec.HolderIdentity, spec.LeaseDurationSeconds, spec.RenewTime = &holder, &duration, &now
	})
	if err != nil {
		var status apierrors.APIStatus
		if errors.As(err, &status) {
			c.lease = apiclient.PostedLease{} // conflict or gone: read it again next time
		}
		return err
	}
	c.lease = updated
	return nil
}

// NodeUID is the registered Node's uid; empty before registration.
func (c *Controller) NodeUID() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.nodeUID
}

func (c *Controller) setNodeUID(uid types.UID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.nodeUID = string(uid)
}
