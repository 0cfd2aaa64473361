package containerlogs

import (
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/benbjohnson/clock"
	"k8s.io/apimachinery/pkg/api/resource"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"

	"orch.io/orch/components/apis/orchlet/v1beta1"
	"orch.io/orch/components/periodic"
)

const (
	// timestampFormat is the suffix of a rotated log, the kubelet's.
	timestampFormat = "20060102-150405"
	compressSuffix  = ".gz"
	tmpSuffix       = ".tmp"
)

// Runtime is what rotation asks of the CRI runtime.
type Runtime interface {
	ListContainers(ctx context.Context, filter *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error)
	ContainerStatus(ctx context.Context, containerID string, verbose bool) (*runtimeapi.ContainerStatusResponse, error)
	ReopenContainerLog(ctx context.Context, containerID string) error
}

// Options configure a Rotator.
type Options struct {
	Clock   clock.Clock
	Runtime Runtime
	// MaxSize is the size in bytes from which a log file is rotated (--container-log-max-size).
	MaxSize int64
	// MaxFiles is how many files a container's log may span, the live one included
	// (--container-log-max-files); at least 2.
	MaxFiles int
	// Workers rotate that many containers' logs at once (--container-log-max-workers).
	Workers int
	// Interval is the time between rounds (--container-log-monitor-interval).
	Interval time.Duration
	Logger   klog.Logger
}

// Rotator rotates the logs of the running containers every Interval.
type Rotator struct {
	o  Options
	mu sync.Mutex // one round at a time
}

// ParseMaxSize reads --container-log-max-size as the kubelet does: a quantity in whole bytes.
func ParseMaxSize(size string) (int64, error) {
	q, err := resource.ParseQuantity(size)
	if err != nil {
		return 0, fmt.Errorf("--container-log-max-size (containerLogMaxSize): %q is not a quantity: %w", size, err)
	}
	n, ok := q.AsInt64()
	if !ok || n <= 0 {
		return 0, fmt.Errorf("--container-log-max-size (containerLogMaxSize): %q must be a positive whole number of bytes", size)
	}
	return n, nil
}

// FromConfig is the rotation the configuration asks for.
func FromConfig(c *v1beta1.OrchletConfiguration, clk clock.Clock, rt Runtime, logger klog.Logger) (*Rotator, error) {
	size, err := ParseMaxSize(c.ContainerLogMaxSize)
	if err != nil {
		return nil, err
	}
	return New(Options{Clock: clk, Runtime: rt, MaxSize: size, MaxFiles: int(c.ContainerLogMaxFiles),
		Workers: int(c.ContainerLogMaxWorkers), Interval: c.ContainerLogMonitorInterval.Duration, Logger: logger})
}

// New checks o, naming the option at fault.
func New(o Options) (*Rotator, error) {
	var errs []error
	if o.Clock == nil || o.Runtime == nil {
		errs = append(errs, errors.New("container log rotation: a clock and a runtime are required"))
	}
	if o.MaxSize <= 0 {
		errs = append(errs, fmt.Errorf("--container-log-max-size (containerLogMaxSize): must be positive, got %d bytes", o.MaxSize))
	}
	if o.MaxFiles <= 1 {
		errs = append(errs, fmt.Errorf("--container-log-max-files (containerLogMaxFiles): must be > 1, got %d", o.MaxFiles))
	}
	if o.Workers < 1 {
		errs = append(errs, fmt.Errorf("--container-log-max-workers (containerLogMaxWorkers): must be >= 1, got %d", o.Workers))
	}
	if o.Interval < 3*time.Second {
		errs = append(errs, fmt.Errorf("--container-log-monitor-interval (containerLogMonitorInterval): must be at least 3s, got %v", o.Interval))
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return &Rotator{o: o}, nil
}

// Run rotates at once and then every Interval on the clock until ctx ends.
func (r *Rotator) Run(ctx context.Context) error {
	return periodic.Until(ctx, r.o.Clock, r.o.Interval, func(ctx context.Context) {
		if err := r.Rotate(ctx); err != nil && ctx.Err() == nil {
			r.o.Logger.Error(err, "Failed to rotate container logs")
		}
	})
}

// Rotate runs one round: the log of each running container that reached MaxSize is rotated, by up
// to Workers containers at once. A container's failure is logged and does not stop the others,
// whose logs would otherwise fill the disk.
func (r *Rotator) Rotate(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	cs, err := r.o.Runtime.ListContainers(ctx, &runtimeapi.ContainerFilter{})
	if err != nil {
		return fmt.Errorf("failed to list containers: %w", err)
	}
	ids := make(chan string)
	var wg sync.WaitGroup
	for range min(r.o.Workers, len(cs)) {
		wg.Go(func() {
			for id := range ids {
				if err := r.rotateContainer(ctx, id); err != nil {
					r.o.Logger.Error(err, "Failed to rotate log for container", "containerID", id)
				}
			}
		})
	}
	for _, c := range cs {
		// Only running containers write; an exited one keeps its last file as it is.
		if c.GetState() == runtimeapi.ContainerState_CONTAINER_RUNNING {
			ids <- c.GetId()
		}
	}
	close(ids)
	wg.Wait()
	return nil
}

func (r *Rotator) rotateContainer(ctx context.Context, id string) error {
	resp, err := r.o.Runtime.ContainerStatus(ctx, id, false)
	if err != nil {
		return fmt.Errorf("failed to get container status: %w", err)
	}
	path := resp.GetStatus().GetLogPath()
	if path == "" {
		return nil // a container without a log file has nothing to rotate
	}
	info, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		// A rotation cut short after the rename leaves no live file: the runtime makes it again.
		if err := r.o.Runtime.ReopenContainerLog(ctx, id); err != nil {
			return fmt.Errorf("container log %s doesn't exist, reopen container log failed: %w", path, err)
		}
		info, err = os.Stat(path)
	}
	if err != nil {
		return fmt.Errorf("failed to stat container log %s: %w", path, err)
	}
	if info.Size() < r.o.MaxSize {
		return nil
	}
	return r.rotateLog(ctx, id, path)
}

func (r *Rotator) rotateLog(ctx context.Context, id, log string) error {
	logs, err := filepath.Glob(globEscape(log) + ".*")
	if err != nil {
		return fmt.Errorf("failed to list all log files of %q: %w", log, err)
	}
	inuse, unused := filterUnusedLogs(logs)
	for _, l := range unused {
		if err := os.Remove(l); err != nil {
			return fmt.Errorf("failed to remove unused log %q: %w", l, err)
		}
	}
	// Oldest first; the live file and the one rotated now leave room for MaxFiles-2 others.
	sort.Strings(inuse)
	excess := max(len(inuse)-(r.o.MaxFiles-2), 0)
	for _, l := range inuse[:excess] {
		if err := os.Remove(l); err != nil {
			return fmt.Errorf("failed to remove old log %q: %w", l, err)
		}
	}
	for _, l := range inuse[excess:] {
		if !strings.HasSuffix(l, compressSuffix) {
			if err := compressLog(l); err != nil {
				return fmt.Errorf("failed to compress log %q: %w", l, err)
			}
		}
	}
	rotated := log + "." + r.o.Clock.Now().Format(timestampFormat)
	if err := os.Rename(log, rotated); err != nil {
		return fmt.Errorf("failed to rotate log %q to %q: %w", log, rotated, err)
	}
	if err := r.o.Runtime.ReopenContainerLog(ctx, id); err != nil {
		// Put the file back so the next round tries again.
		if renameErr := os.Rename(rotated, log); renameErr != nil {
			r.o.Logger.Error(renameErr, "Failed to rename rotated log", "rotatedLog", rotated, "newLog", log, "containerID", id)
		}
		return fmt.Errorf("failed to reopen container log %q: %w", id, err)
	}
	return nil
}

// filterUnusedLogs splits rotated files into those in use and the leftovers of a rotation cut
// short: temporary files, and a file whose compressed copy is complete.
func filterUnusedLogs(logs []string) (inuse, unused []string) {
	have := make(map[string]bool, len(logs))
	for _, l := range logs {
		have[l] = true
	}
	for _, l := range logs {
		switch {
		case strings.HasSuffix(l, tmpSuffix):
			unused = append(unused, l)
		case !strings.HasSuffix(l, compressSuffix) && have[l+compressSuffix]:
			unused = append(unused, l)
		default:
			inuse = append(inuse, l)
		}
	}
	return inuse, unused
}

// compressLog gzips log to log.gz through a temporary file, then removes log.
func compressLog(log string) error {
	in, err := os.Open(log)
	if err != nil {
		return err
	}
	defer in.Close()
	info, err := in.Stat()
	if err != nil {
		return err
	}
	tmp := log + tmpSuffix
	out, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, info.Mode())
	if err != nil {
		return fmt.Errorf("failed to create temporary log %q: %w", tmp, err)
	}
	defer os.Remove(tmp) // gone after the rename; removed after a failure
	defer out.Close()
	w := gzip.NewWriter(out)
	if _, err := io.Copy(w, in); err != nil {
		return fmt.Errorf("failed to compress %q to %q: %w", log, tmp, err)
	}
	if err := w.Close(); err != nil {
		return err
	}
	if err := out.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, log+compressSuffix); err != nil {
		return err
	}
	return os.Remove(log)
}

// globEscape quotes the glob metacharacters of a path, so a log path with "[" in it (a pod name
// cannot hold one, a --pod-logs-dir can) still matches only its own files.
func globEscape(p string) string {
	var b strings.Builder
	for _, r := range p {
		if strings.ContainsRune(`*?[\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}
