package imagegc

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"sync"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	cri "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"

	"orch.io/orch/components/orchlet/events"
	"orch.io/orch/components/periodic"
)

// Period is how often images are collected: the kubelet's ImageGCPeriod.
const Period = 5 * time.Minute

// Event reasons and the action recorded with them, as the kubelet's pkg/kubelet/events names them.
const (
	ReasonFreeDiskSpaceFailed = "FreeDiskSpaceFailed"
	ReasonImageGCFailed       = "ImageGCFailed"
	ReasonInvalidDiskCapacity = "InvalidDiskCapacity"
	actionGC                  = "GarbageCollect"
)

// Policy is the kubelet's ImageGCPolicy.
type Policy struct {
	// HighThresholdPercent: at or above this image filesystem usage, images are deleted
	// (--image-gc-high-threshold).
	HighThresholdPercent int
	// LowThresholdPercent: deleting stops once usage is down to this (--image-gc-low-threshold).
	LowThresholdPercent int
	// MinAge: an image detected more recently is never deleted (--minimum-image-ttl-duration).
	MinAge time.Duration
	// MaxAge: an unused image not used for longer is deleted whatever the usage (imageMaximumGCAge,
	// with the ImageMaximumGCAge gate); 0 disables.
	MaxAge time.Duration
}

// Validate refuses a policy as NewImageGCManager does.
func (p Policy) Validate() error {
	var errs []error
	if p.HighThresholdPercent < 0 || p.HighThresholdPercent > 100 {
		errs = append(errs, fmt.Errorf("invalid HighThresholdPercent %d, must be in range [0-100]", p.HighThresholdPercent))
	}
	if p.LowThresholdPercent < 0 || p.LowThresholdPercent > 100 {
		errs = append(errs, fmt.Errorf("invalid LowThresholdPercent %d, must be in range [0-100]", p.LowThresholdPercent))
	}
	if p.LowThresholdPercent > p.HighThresholdPercent {
		errs = append(errs, fmt.Errorf("LowThresholdPercent %d can not be higher than HighThresholdPercent %d", p.LowThresholdPercent, p.HighThresholdPercent))
	}
	if p.MinAge < 0 {
		errs = append(errs, fmt.Errorf("invalid MinAge %v, must not be negative", p.MinAge))
	}
	if p.MaxAge < 0 {
		errs = append(errs, fmt.Errorf("invalid MaxAge %v, must not be negative", p.MaxAge))
	}
	return errors.Join(errs...)
}

// FsInfo reads a filesystem's size by mountpoint: the CRI's ImageFsInfo names the image
// filesystem and its use but not its capacity, which the kubelet reads from cadvisor (statfs).
type FsInfo interface {
	FsInfo(mountpoint string) (capacity, available uint64, err error)
}

// Recorder records events; *events.Recorder is one.
type Recorder interface {
	Eventf(regarding *corev1.ObjectReference, eventType, reason, action, noteFormat string, args ...any)
}

// Options configure a Manager.
type Options struct {
	Clock    clock.Clock
	Runtime  cri.RuntimeService
	Images   cri.ImageManagerService
	FsInfo   FsInfo
	Recorder Recorder
	NodeName string
	// SandboxImage (--pod-infra-container-image) is always treated as in use.
	SandboxImage string
	Policy       Policy
	Logger       klog.Logger
	// Metrics, when set, gets orchlet_image_garbage_collected_total.
	Metrics prometheus.Registerer
	// ImageVolumes (the ImageVolume gate) counts the images containers mount as volumes as in use,
	// read from each container's status (the kubelet's handleImageVolumes).
	ImageVolumes bool
}

// Reasons an image was collected, the kubelet's ImageGarbageCollectedTotalReason values.
const (
	reasonAge   = "age"
	reasonSpace = "space"
)

// imageRecord is what the collector remembers of an image, as the kubelet's imageRecord.
type imageRecord struct {
	firstDetected time.Time
	lastUsed      time.Time
	size          int64
	pinned        bool
}

type evictionInfo struct {
	id string
	imageRecord
}

// Manager is the image garbage collector of one node.
type Manager struct {
	o       Options
	log     klog.Logger
	node    *corev1.ObjectReference
	enabled bool
	began   time.Time

	collected *prometheus.CounterVec

	mu         sync.Mutex // one collection at a time; guards what follows
	records    map[string]*imageRecord
	next       time.Time
	prevFailed bool
}

// New checks the options and returns a collector whose first collection is due at once.
func New(o Options) (*Manager, error) {
	if o.Clock == nil || o.Runtime == nil || o.Images == nil || o.FsInfo == nil || o.Recorder == nil || o.NodeName == "" {
		return nil, errors.New("imagegc: Clock, Runtime, Images, FsInfo, Recorder and NodeName are required")
	}
	if err := o.Policy.Validate(); err != nil {
		return nil, fmt.Errorf("imagegc: %w", err)
	}
	log := o.Logger
	if log.GetSink() == nil {
		log = klog.Background()
	}
	// The kubelet's kubelet_image_garbage_collected_total, renamed.
	collected := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "orchlet_image_garbage_collected_total",
		Help: "Total number of images garbage collected by the orchlet, whether through disk usage or image age.",
	}, []string{"reason"})
	if o.Metrics != nil {
		if err := o.Metrics.Register(collected); err != nil {
			return nil, fmt.Errorf("imagegc: %w", err)
		}
	}
	now := o.Clock.Now()
	return &Manager{
		o: o, log: log, node: events.NodeReference(o.NodeName), began: now, next: now,
		records: map[string]*imageRecord{}, collected: collected,
		// StartGarbageCollection: a high threshold of 100 without a maximum age stubs the
		// collector out; DeleteUnusedImages still works for eviction.
		enabled: o.Policy.HighThresholdPercent < 100 || o.Policy.MaxAge > 0,
	}, nil
}

// Collecting tells whether the periodic collection runs: off at a high threshold of 100 without a
// maximum age, when only detection runs (and eviction's DeleteUnusedImages).
func (m *Manager) Collecting() bool { return m.enabled }

// NextDeadline is when the next collection is due: with the periodic collection disabled, the next
// detection of the node's images, which the kubelet's image manager runs at start and every 5
// minutes whatever its collector does, so images have ages when eviction reclaims them.
func (m *Manager) NextDeadline() (time.Time, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.next, true
}

// Idle reports that no collection is due now.
func (m *Manager) Idle() bool {
	t, ok := m.NextDeadline()
	return !ok || m.o.Clock.Now().Before(t)
}

// Step runs the collection if it is due, as the kubelet's StartGarbageCollection loop body does:
// a first failure is logged only (stats may not be ready yet), a repeated one is also an
// ImageGCFailed event. The next one is due Period after this one ends.
func (m *Manager) Step(ctx context.Context) {
	if m.Idle() {
		return
	}
	if !m.enabled {
		m.mu.Lock()
		defer m.mu.Unlock()
		m.next = m.o.Clock.Now().Add(Period)
		if _, err := m.detectImages(ctx, m.o.Clock.Now()); err != nil {
			m.log.Error(err, "Image detection failed")
		}
		return
	}
	err := m.GarbageCollect(ctx, m.began)
	m.mu.Lock()
	defer m.mu.Unlock()
	m.next = m.o.Clock.Now().Add(Period)
	if err != nil {
		if m.prevFailed {
			m.log.Error(err, "Image garbage collection failed multiple times in a row")
			m.o.Recorder.Eventf(m.node, events.Warning, ReasonImageGCFailed, actionGC, "%s", err.Error())
		} else {
			m.log.Error(err, "Image garbage collection failed once. Stats initialization may not have completed yet")
		}
		m.prevFailed = true
		return
	}
	level := 4
	if m.prevFailed {
		level = 1
	}
	m.prevFailed = false
	m.log.V(level).Info("Image garbage collection succeeded")
}

// Run collects at once and then every Period until ctx ends.
func (m *Manager) Run(ctx context.Context) error {
	if !m.enabled {
		m.log.V(2).Info("ImageGCHighThresholdPercent is set 100 and ImageMaximumGCAge is 0, Disable image GC")
	}
	return periodic.Run(ctx, m.o.Clock, m.Step, func() time.Time { next, _ := m.NextDeadline(); return next })
}

// GarbageCollect deletes unused images not used for longer than MaxAge (once the collector has run
// that long), then, when the image filesystem's usage is at or above the high threshold, unused
// images least recently used first until it is down to the low threshold: the kubelet's
// realImageGCManager.GarbageCollect. beganGC is when the collector started.
func (m *Manager) GarbageCollect(ctx context.Context, beganGC time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	freeTime := m.o.Clock.Now()
	images, err := m.imagesInEvictionOrder(ctx, freeTime)
	if err != nil {
		return err
	}
	if images, err = m.freeOldImages(ctx, images, freeTime, beganGC); err != nil {
		return err
	}
	capacity, available, err := m.imageFsStats(ctx)
	if err != nil {
		return err
	}
	if available > capacity {
		m.log.Info("Availability is larger than capacity", "available", available, "capacity", capacity)
		available = capacity
	}
	if capacity == 0 {
		err := errors.New("invalid capacity 0 on image filesystem")
		m.o.Recorder.Eventf(m.node, events.Warning, ReasonInvalidDiskCapacity, actionGC, "%s", err.Error())
		return err
	}
	usagePercent := 100 - int(available*100/capacity)
	if usagePercent < m.o.Policy.HighThresholdPercent {
		return nil
	}
	amountToFree := capacity*int64(100-m.o.Policy.LowThresholdPercent)/100 - available
	m.log.Info("Disk usage on image filesystem is over the high threshold, trying to free bytes down to the low threshold",
		"usage", usagePercent, "highThreshold", m.o.Policy.HighThresholdPercent, "amountToFree", amountToFree, "lowThreshold", m.o.Policy.LowThresholdPercent)
	freed, err := m.freeSpace(ctx, amountToFree, freeTime, images)
	if err != nil {
		return err
	}
	if freed < amountToFree {
		// The kubelet's message, capital and full stop included.
		//lint:ignore ST1005 the kubelet's message, word for word
		err := fmt.Errorf("Failed to garbage collect required amount of images. Attempted to free %d bytes, but only found %d bytes eligible to free.", amountToFree, freed)
		m.o.Recorder.Eventf(m.node, events.Warning, ReasonFreeDiskSpaceFailed, actionGC, "%s", err.Error())
		return err
	}
	return nil
}

// DeleteUnusedImages deletes every unused image old enough, least recently used first, and returns
// the bytes freed: node-level reclaim for the eviction manager (the kubelet's DeleteUnusedImages).
func (m *Manager) DeleteUnusedImages(ctx context.Context) (int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.log.Info("Attempting to delete unused images")
	freeTime := m.o.Clock.Now()
	images, err := m.imagesInEvictionOrder(ctx, freeTime)
	if err != nil {
		return 0, err
	}
	return m.freeSpace(ctx, math.MaxInt64, freeTime, images)
}

// imageFsStats is the image filesystem's capacity and available bytes: its mountpoint from the
// runtime's ImageFsInfo, its size from FsInfo (the kubelet's CRI stats provider ImageFsStats).
func (m *Manager) imageFsStats(ctx context.Context) (capacity, available int64, err error) {
	resp, err := m.o.Images.ImageFsInfo(ctx)
	if err != nil {
		return 0, 0, fmt.Errorf("failed to get imageFs info: %w", err)
	}
	fss := resp.GetImageFilesystems()
	if len(fss) == 0 {
		return 0, 0, errors.New("imageFs information is unavailable")
	}
	mp := fss[0].GetFsId().GetMountpoint()
	c, a, err := m.o.FsInfo.FsInfo(mp)
	if err != nil {
		return 0, 0, fmt.Errorf("failed to get the filesystem of imageFs %q: %w", mp, err)
	}
	return clampInt64(c), clampInt64(a), nil
}

func clampInt64(v uint64) int64 {
	if v > math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(v)
}

// detectImages records the runtime's images (firstDetected on first sight, lastUsed now when a
// container uses one) and forgets those gone; it returns the images in use: those of every
// container, running or not, and the sandbox image (realImageGCManager.detectImages).
func (m *Manager) detectImages(ctx context.Context, detectTime time.Time) (map[string]bool, error) {
	images, err := m.o.Images.ListImages(ctx, &runtimeapi.ImageFilter{})
	if err != nil {
		return nil, err
	}
	ctrs, err := m.o.Runtime.ListContainers(ctx, &runtimeapi.ContainerFilter{})
	if err != nil {
		return nil, err
	}
	inUse := map[string]bool{}
	for _, c := range ctrs {
		// kuberuntime's toKubeContainer: the image id, or the image ref of a runtime without ids.
		id := c.GetImageId()
		if id == "" {
			id = c.GetImageRef()
		}
		inUse[id] = true
		if m.o.ImageVolumes {
			st, err := m.o.Runtime.ContainerStatus(ctx, c.GetId(), false)
			if err != nil {
				return nil, fmt.Errorf("get container status: %w", err)
			}
			for _, mount := range st.GetStatus().GetMounts() {
				if id := mount.GetImage().GetImage(); id != "" {
					inUse[id] = true
				}
			}
		}
	}
	// The sandbox image is always in use, as the kubelet treated --pod-infra-container-image
	// before runtimes pinned it.
	if m.o.SandboxImage != "" {
		st, err := m.o.Images.ImageStatus(ctx, &runtimeapi.ImageSpec{Image: m.o.SandboxImage}, false)
		if err == nil && st.GetImage().GetId() != "" {
			inUse[st.GetImage().GetId()] = true
		}
	}
	now := m.o.Clock.Now()
	current := map[string]bool{}
	for _, img := range images {
		id := img.GetId()
		current[id] = true
		r := m.records[id]
		if r == nil {
			m.log.V(5).Info("Adding image ID to currentImages", "imageID", id)
			r = &imageRecord{firstDetected: detectTime}
			m.records[id] = r
		}
		if inUse[id] {
			r.lastUsed = now
		}
		r.size = clampInt64(img.GetSize())
		r.pinned = img.GetPinned()
	}
	for id := range m.records {
		if !current[id] {
			m.log.V(5).Info("Image ID is no longer present; removing from imageRecords", "imageID", id)
			delete(m.records, id)
		}
	}
	return inUse, nil
}

// imagesInEvictionOrder is the unused, unpinned images, least recently used first and, among equals,
// first detected first (imagesInEvictionOrder, byLastUsedAndDetected); the id breaks what is left,
// so the order never depends on a map's.
func (m *Manager) imagesInEvictionOrder(ctx context.Context, freeTime time.Time) ([]evictionInfo, error) {
	inUse, err := m.detectImages(ctx, freeTime)
	if err != nil {
		return nil, err
	}
	images := make([]evictionInfo, 0, len(m.records))
	for id, r := range m.records {
		if inUse[id] {
			m.log.V(5).Info("Image ID is being used", "imageID", id)
			continue
		}
		if r.pinned {
			m.log.V(5).Info("Image is pinned, skipping garbage collection", "imageID", id)
			continue
		}
		images = append(images, evictionInfo{id: id, imageRecord: *r})
	}
	sort.Slice(images, func(i, j int) bool {
		a, b := images[i], images[j]
		switch {
		case !a.lastUsed.Equal(b.lastUsed):
			return a.lastUsed.Before(b.lastUsed)
		case !a.firstDetected.Equal(b.firstDetected):
			return a.firstDetected.Before(b.firstDetected)
		}
		return a.id < b.id
	})
	return images, nil
}

// freeOldImages deletes the images not used for longer than MaxAge, once the collector has run
// for longer than MaxAge (so a restart does not delete images it has not seen used yet), and
// returns the others (freeOldImages). An image never seen in use counts as unused since ever.
func (m *Manager) freeOldImages(ctx context.Context, images []evictionInfo, freeTime, beganGC time.Time) ([]evictionInfo, error) {
	if m.o.Policy.MaxAge == 0 || freeTime.Sub(beganGC) <= m.o.Policy.MaxAge {
		return images, nil
	}
	var errs []error
	remaining := make([]evictionInfo, 0, len(images))
	for _, img := range images {
		if freeTime.Sub(img.lastUsed) > m.o.Policy.MaxAge {
			if err := m.freeImage(ctx, img, reasonAge); err != nil {
				errs = append(errs, err)
				remaining = append(remaining, img)
			}
			continue
		}
		remaining = append(remaining, img)
	}
	if len(errs) > 0 {
		return remaining, fmt.Errorf("wanted to free images older than %v, encountered errors in image deletion: %w", m.o.Policy.MaxAge, errors.Join(errs...))
	}
	return remaining, nil
}

// freeSpace deletes images in order, skipping those used at freeTime and those detected less than
// MinAge ago (just pulled, about to be used), until bytesToFree are freed (freeSpace).
func (m *Manager) freeSpace(ctx context.Context, bytesToFree int64, freeTime time.Time, images []evictionInfo) (int64, error) {
	var errs []error
	var freed int64
	for _, img := range images {
		if !img.lastUsed.Before(freeTime) {
			m.log.V(5).Info("Image ID was used too recently, not eligible for garbage collection", "imageID", img.id, "lastUsed", img.lastUsed, "freeTime", freeTime)
			continue
		}
		if age := freeTime.Sub(img.firstDetected); age < m.o.Policy.MinAge {
			m.log.V(5).Info("Image ID's age is less than the policy's minAge, not eligible for garbage collection", "imageID", img.id, "age", age, "minAge", m.o.Policy.MinAge)
			continue
		}
		if err := m.freeImage(ctx, img, reasonSpace); err != nil {
			errs = append(errs, err)
			continue
		}
		freed += img.size
		if freed >= bytesToFree {
			break
		}
	}
	if len(errs) > 0 {
		return freed, fmt.Errorf("wanted to free %d bytes, but freed %d bytes space with errors in image deletion: %w", bytesToFree, freed, errors.Join(errs...))
	}
	return freed, nil
}

// freeImage removes one image, forgets it and counts it under reason (freeImage).
func (m *Manager) freeImage(ctx context.Context, img evictionInfo, reason string) error {
	m.log.Info("Removing image to free bytes", "imageID", img.id, "size", img.size)
	if err := m.o.Images.RemoveImage(ctx, &runtimeapi.ImageSpec{Image: img.id}); err != nil {
		return err
	}
	delete(m.records, img.id)
	m.collected.WithLabelValues(reason).Inc()
	return nil
}
