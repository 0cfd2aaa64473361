package images

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/benbjohnson/clock"
	"golang.org/x/time/rate"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"

	"orch.io/orch/components/orchlet/events"
	"orch.io/orch/components/orchlet/pods/backoff"
	"orch.io/orch/components/orchlet/pods/calls"
	"orch.io/orch/components/orchlet/pods/credentialprovider"
)

// Event reasons and waiting reasons of image pulls, as Kubernetes' kubelet records them.
const (
	ReasonPulling   = "Pulling"
	ReasonPulled    = "Pulled"
	ReasonNeverPull = "ErrImageNeverPull"
	// ReasonFailedToRetrieveImagePullSecret is the kubelet's event for pull secrets it could not
	// read.
	ReasonFailedToRetrieveImagePullSecret = "FailedToRetrieveImagePullSecret"
	// WaitErrImagePull and WaitImageBackOff are why a container waits for its image.
	WaitErrImagePull = "ErrImagePull"
	WaitImageBackOff = "ImagePullBackOff"

	reasonFailed      = "Failed"
	reasonBackOff     = "BackOff"
	containerCreating = "ContainerCreating"
)

// Service is the runtime's image service as the puller uses it; cri.ImageManagerService is one.
type Service interface {
	ImageStatus(ctx context.Context, image *runtimeapi.ImageSpec, verbose bool) (*runtimeapi.ImageStatusResponse, error)
	PullImage(ctx context.Context, image *runtimeapi.ImageSpec, auth *runtimeapi.AuthConfig, podSandboxConfig *runtimeapi.PodSandboxConfig) (string, error)
}

// Secrets reads the pods' image pull secrets from the API server; a missing one is a NotFound
// Status error. Only an agent in API-server mode has one.
type Secrets interface {
	GetSecret(ctx context.Context, namespace, name string) (*corev1.Secret, error)
}

// Plugins are the credential provider plugins (--image-credential-provider-config): the
// credentials each gives for an image's repository, by registry location; *credentialprovider.Providers
// is one.
type Plugins interface {
	Provide(ctx context.Context, pod credentialprovider.Pod, image string) []map[string]credentialprovider.Auth
}

// Recorder records events; *events.Recorder is one.
type Recorder interface {
	Eventf(regarding *corev1.ObjectReference, eventType, reason, action, noteFormat string, args ...any)
}

// Options are what a Puller needs.
type Options struct {
	Clock    clock.Clock
	Calls    *calls.Tracker
	Images   Service
	Recorder Recorder
	Logger   klog.Logger
	// Serialize is serializeImagePulls: one pull at a time on the node, in Step; without it each
	// pull runs in the background and its result is handed over by Settle.
	Serialize bool
	// QPS and Burst are registryPullQPS and registryBurst: QPS 0 does not limit the pulls.
	QPS   int32
	Burst int32
	// Wake is called when a background pull ended, for Settle to hand it over soon.
	Wake func()
	// Plugins, when set, give credentials after the pod's pull secrets.
	Plugins Plugins
}

// Puller makes the images of pods' containers and image volumes present, as Kubernetes' image
// manager does: by each image's pull policy, with a back-off after a failed pull, and the
// credentials of the pod's image pull secrets and of the credential provider plugins.
type Puller struct {
	clk      clock.Clock
	calls    *calls.Tracker
	img      Service
	rec      Recorder
	log      klog.Logger
	wake     func()
	parallel bool          // pulls run in the background (serializeImagePulls false)
	limiter  *rate.Limiter // nil: pulls are not rate limited
	objects  Secrets       // nil: no API server to read pull secrets from
	plugins  Plugins       // nil: no credential provider plugins

	// serial makes the pod workers' pulls one at a time (serializeImagePulls).
	serial sync.Mutex

	mu      sync.Mutex
	pulling map[Key]bool   // background pulls in progress
	pulled  map[Key]result // background pulls ended, for their pod's next sync
	ended   []result       // background pulls ended, for Settle
}

// New is a puller with o's settings.
func New(o Options) *Puller {
	p := &Puller{clk: o.Clock, calls: o.Calls, img: o.Images, rec: o.Recorder, log: o.Logger, wake: o.Wake, parallel: !o.Serialize, plugins: o.Plugins,
		pulling: map[Key]bool{}, pulled: map[Key]result{}}
	if o.QPS > 0 {
		burst := int(o.Burst)
		if burst < 1 {
			burst = 1
		}
		p.limiter = rate.NewLimiter(rate.Limit(o.QPS), burst)
	}
	return p
}

// SetSecrets gives the puller the API's secrets; call it before the first pull. Without it, pods'
// image pull secrets are not read.
func (p *Puller) SetSecrets(s Secrets) { p.objects = s }

// Key names one container's pull of one image.
type Key struct {
	UID       types.UID
	Container string
	Image     string
}

// result is how a pull ended.
type result struct {
	key            Key
	ref            string
	err            error
	started, ended time.Time
}

// Target is an image to make present: a container's, or an image volume's.
type Target struct {
	Image  string
	Policy corev1.PullPolicy
	Ref    *corev1.ObjectReference // the events' object: the container, or the pod for a volume
	Key    Key
	Back   *backoff.Backoff // the image's pull back-off
}

// Container is the target of c's image, whose pull back-off is back.
func Container(pod *corev1.Pod, c *corev1.Container, back *backoff.Backoff) Target {
	return Target{Image: c.Image, Policy: defaultPullPolicy(c.ImagePullPolicy, c.Image), Ref: events.ContainerReference(pod, c.Name),
		Key: Key{UID: pod.UID, Container: c.Name, Image: c.Image}, Back: back}
}

// defaultPullPolicy is policy, defaulted as Kubernetes does: Always for an untagged or :latest
// image without a digest, IfNotPresent otherwise.
func defaultPullPolicy(policy corev1.PullPolicy, image string) corev1.PullPolicy {
	if policy != "" {
		return policy
	}
	if strings.Contains(image, "@") {
		return corev1.PullIfNotPresent
	}
	name := image[strings.LastIndex(image, "/")+1:]
	if i := strings.LastIndex(name, ":"); i < 0 || name[i+1:] == "latest" {
		return corev1.PullAlways
	}
	return corev1.PullIfNotPresent
}

// Result is what Ensure made of a target.
type Result struct {
	// Ref is the image reference to create the container from, when OK.
	Ref string
	OK  bool
	// Waiting is why the container waits for the image, when not OK.
	Waiting *corev1.ContainerStateWaiting
	// RetryAt, when not zero, is when the pod's sync should look again.
	RetryAt time.Time
}

func waiting(reason, message string) Result {
	return Result{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: message}}
}

// Ensure makes t's image present for pod as its pull policy says. When the image cannot be had now
// it says why the container waits, and when to look again if that can change.
func (p *Puller) Ensure(ctx context.Context, pod *corev1.Pod, t Target, sbCfg *runtimeapi.PodSandboxConfig) Result {
	if r, ok := p.takePulled(t.Key); ok {
		return p.finished(t, r)
	}
	if p.podPulling(pod.UID) {
		// As Kubernetes' pod workers start a pod's containers one after the other, each waiting
		// for its image, no container of this pod starts while one of its pulls runs.
		return waiting(containerCreating, "")
	}
	spec := &runtimeapi.ImageSpec{Image: t.Image, UserSpecifiedImage: t.Image}
	var present string
	if err := p.calls.Request(ctx, func(ctx context.Context) error {
		resp, err := p.img.ImageStatus(ctx, spec, false)
		present = resp.GetImage().GetId()
		return err
	}); err != nil {
		out := waiting(WaitErrImagePull, err.Error())
		p.rec.Eventf(t.Ref, corev1.EventTypeWarning, reasonFailed, "Pull", "Failed to inspect image %q: %v", t.Image, err)
		out.RetryAt = p.retry(t.Back)
		return out
	}
	if present != "" && t.Policy != corev1.PullAlways {
		p.rec.Eventf(t.Ref, corev1.EventTypeNormal, ReasonPulled, "Pull", "Container image %q already present on machine", t.Image)
		return Result{Ref: present, OK: true}
	}
	if t.Policy == corev1.PullNever {
		msg := "Container image \"" + t.Image + "\" is not present with pull policy of Never"
		p.rec.Eventf(t.Ref, corev1.EventTypeWarning, ReasonNeverPull, "Pull", "%s", msg)
		return waiting(ReasonNeverPull, msg)
	}
	now := p.clk.Now()
	if until, wait := t.Back.WaitSince(t.Back.Last, now); wait {
		out := waiting(WaitImageBackOff, "Back-off pulling image \""+t.Image+"\"")
		p.rec.Eventf(t.Ref, corev1.EventTypeNormal, reasonBackOff, "Pull", "Back-off pulling image %q", t.Image)
		out.RetryAt = until
		return out
	}
	if p.limiter != nil {
		r := p.limiter.ReserveN(now, 1)
		if d := r.DelayFrom(now); d > 0 {
			// Wait for the token bucket on the clock rather than holding the queue.
			r.CancelAt(now)
			out := waiting(containerCreating, "")
			out.RetryAt = now.Add(d)
			return out
		}
	}
	auths, err := p.pullAuths(ctx, pod, t.Image)
	if err != nil {
		return p.finished(t, result{key: t.Key, err: err, started: now, ended: now})
	}
	p.rec.Eventf(t.Ref, corev1.EventTypeNormal, ReasonPulling, "Pull", "Pulling image %q", t.Image)
	if p.parallel {
		p.startPull(ctx, t.Key, spec, auths, sbCfg, now)
		return waiting(containerCreating, "")
	}
	var pulled string
	// serializeImagePulls: one pull at a time on the node, whichever pod workers want images.
	p.serial.Lock()
	err = p.calls.Within(ctx, 0, func(ctx context.Context) (err error) {
		pulled, err = p.pullImage(ctx, spec, auths, sbCfg)
		return err
	})
	p.serial.Unlock()
	return p.finished(t, result{key: t.Key, ref: pulled, err: err, started: now, ended: p.clk.Now()})
}

// finished records how t's pull ended, with the image reference when it succeeded.
func (p *Puller) finished(t Target, r result) Result {
	if r.err != nil {
		out := waiting(WaitErrImagePull, r.err.Error())
		p.rec.Eventf(t.Ref, corev1.EventTypeWarning, reasonFailed, "Pull", "Failed to pull image %q: %v", t.Image, r.err)
		p.rec.Eventf(t.Ref, corev1.EventTypeWarning, reasonFailed, "Pull", "Error: %s", WaitErrImagePull)
		out.RetryAt = p.retry(t.Back)
		return out
	}
	*t.Back = backoff.Backoff{}
	p.rec.Eventf(t.Ref, corev1.EventTypeNormal, ReasonPulled, "Pull", "Successfully pulled image %q in %v", t.Image, r.ended.Sub(r.started))
	return Result{Ref: r.ref, OK: true}
}

// retry raises the pull's back-off after a failure now and says when to try again.
func (p *Puller) retry(b *backoff.Backoff) time.Time {
	now := p.clk.Now()
	b.Next(now, now)
	return now.Add(b.Delay)
}

// startPull runs a pull in the background (serializeImagePulls false); Settle, in the Step after it
// ends, hands its result to the pod's next sync. The pull has no deadline, as in the foreground.
func (p *Puller) startPull(ctx context.Context, key Key, spec *runtimeapi.ImageSpec, auths []*runtimeapi.AuthConfig, sbCfg *runtimeapi.PodSandboxConfig, started time.Time) {
	p.mu.Lock()
	p.pulling[key] = true
	p.mu.Unlock()
	p.calls.Go(ctx, func(ctx context.Context) {
		ref, err := p.pullImage(ctx, spec, auths, sbCfg)
		r := result{key: key, ref: ref, err: err, started: started, ended: p.clk.Now()}
		p.mu.Lock()
		p.ended = append(p.ended, r)
		p.mu.Unlock()
	}, p.wake)
}

// Ended says a background pull ended that Settle has not handed over yet.
func (p *Puller) Ended() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.ended) > 0
}

// Settle hands the background pulls that ended to their pods' next syncs, and returns the pods
// (those live says the pod workers still run) whose sync must look now.
func (p *Puller) Settle(live func(types.UID) bool) []types.UID {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []types.UID
	for _, r := range p.ended {
		delete(p.pulling, r.key)
		if !live(r.key.UID) {
			continue
		}
		p.pulled[r.key] = r
		out = append(out, r.key.UID)
	}
	p.ended = nil
	return out
}

// Forget drops the results of the pod uid's pulls nobody took: it is gone.
func (p *Puller) Forget(uid types.UID) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for k := range p.pulled {
		if k.UID == uid {
			delete(p.pulled, k)
		}
	}
}

// podPulling reports whether a background pull of one of the pod's containers runs.
func (p *Puller) podPulling(uid types.UID) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for k := range p.pulling {
		if k.UID == uid {
			return true
		}
	}
	return false
}

// takePulled hands over, once, the result of a background pull that ended.
func (p *Puller) takePulled(key Key) (result, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	r, ok := p.pulled[key]
	delete(p.pulled, key)
	return r, ok
}

// User is kuberuntime's getImageUser: the image's numeric user, else its user name, else root.
func (p *Puller) User(ctx context.Context, imageRef string) (*int64, string, error) {
	var img *runtimeapi.Image
	if err := p.calls.Request(ctx, func(ctx context.Context) error {
		resp, err := p.img.ImageStatus(ctx, &runtimeapi.ImageSpec{Image: imageRef}, false)
		img = resp.GetImage()
		return err
	}); err != nil {
		return nil, "", err
	}
	if img.GetUid() != nil {
		uid := img.GetUid().GetValue()
		return &uid, "", nil
	}
	if img.GetUsername() != "" {
		return nil, img.GetUsername(), nil
	}
	return new(int64), "", nil
}
