package fakecri

import (
	"context"
	"errors"
	"time"

	"github.com/benbjohnson/clock"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// State is a snapshot of everything fakecri pretends to hold.
type State struct {
	Now         time.Time         `json:"now"`
	PodCIDR     string            `json:"podCIDR"`
	Sandboxes   []SandboxState    `json:"sandboxes"`
	Containers  []ContainerState  `json:"containers"`
	Images      []ImageState      `json:"images"`
	Filesystems []FilesystemStats `json:"filesystems"`
}

// SandboxState is one sandbox in a State.
type SandboxState struct {
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	Namespace string    `json:"namespace"`
	UID       string    `json:"uid"`
	Attempt   uint32    `json:"attempt"`
	State     string    `json:"state"`
	IP        string    `json:"ip,omitempty"`
	Handler   string    `json:"runtimeHandler,omitempty"`
	CreatedAt time.Time `json:"createdAt"`
}

// ContainerState is one container in a State, with its usage now.
type ContainerState struct {
	ID         string    `json:"id"`
	SandboxID  string    `json:"sandboxId"`
	Name       string    `json:"name"`
	Attempt    uint32    `json:"attempt"`
	Image      string    `json:"image"`
	ImageID    string    `json:"imageId"`
	State      string    `json:"state"`
	CreatedAt  time.Time `json:"createdAt"`
	StartedAt  time.Time `json:"startedAt,omitzero"`
	FinishedAt time.Time `json:"finishedAt,omitzero"`
	ExitCode   int32     `json:"exitCode"`
	Reason     string    `json:"reason,omitempty"`
	Message    string    `json:"message,omitempty"`
	// ExitsAt is when the container will end by itself, if it will.
	ExitsAt     time.Time `json:"exitsAt,omitzero"`
	MemoryBytes uint64    `json:"memoryBytes"`
	CPUCores    float64   `json:"cpuCores"`
	DiskBytes   uint64    `json:"diskBytes"`
	Inodes      uint64    `json:"inodes"`
	PIDs        uint64    `json:"pids"`
}

// ImageState is one image in a State.
type ImageState struct {
	ID          string   `json:"id"`
	RepoTags    []string `json:"repoTags"`
	RepoDigests []string `json:"repoDigests"`
	Size        uint64   `json:"size"`
	Pinned      bool     `json:"pinned"`
}

// State returns a snapshot at the current clock time.
func (r *Runtime) State() State {
	c, now := r.lockAtNow()
	defer r.mu.Unlock()
	st := State{Now: now, PodCIDR: c.PodCIDR.String()}
	if r.podCIDR.IsValid() {
		st.PodCIDR = r.podCIDR.String()
	}
	for _, sb := range r.sbOrder {
		if sb.removed {
			continue
		}
		md := sb.cfg.Metadata
		s := SandboxState{ID: sb.id, Name: md.GetName(), Namespace: md.GetNamespace(), UID: md.GetUid(),
			Attempt: md.GetAttempt(), State: sb.state.String(), Handler: sb.handler, CreatedAt: sb.createdAt}
		if sb.ip.IsValid() {
			s.IP = sb.ip.String()
		}
		st.Sandboxes = append(st.Sandboxes, s)
	}
	for _, ct := range r.ctrOrder {
		if ct.removed {
			continue
		}
		cs := ContainerState{ID: ct.id, SandboxID: ct.sb.id, Name: ct.cfg.Metadata.GetName(),
			Attempt: ct.cfg.Metadata.GetAttempt(), Image: ct.imageName, ImageID: ct.imageID,
			State: ct.state.String(), CreatedAt: ct.createdAt, StartedAt: ct.startedAt,
			FinishedAt: ct.finishedAt, ExitCode: ct.exitCode, Reason: ct.reason, Message: ct.message}
		if ct.plan != nil && ct.state == runtimeapi.ContainerState_CONTAINER_RUNNING {
			cs.ExitsAt = ct.plan.at
		}
		if ct.state == runtimeapi.ContainerState_CONTAINER_RUNNING {
			s := sampleUsage(ct.usage, now.Sub(ct.startedAt), ct.resources)
			cs.MemoryBytes, cs.CPUCores, cs.PIDs = sat(s.mem), s.cpuRate, sat(s.pids)
		}
		d, i := writable(ct, now)
		cs.DiskBytes, cs.Inodes = sat(d), sat(i)
		st.Containers = append(st.Containers, cs)
	}
	for _, im := range r.imgOrder {
		st.Images = append(st.Images, ImageState{ID: im.id, RepoTags: im.repoTags, RepoDigests: im.repoDigests, Size: im.size, Pinned: im.pinned})
	}
	st.Filesystems = r.filesystemsLocked(c, now)
	return st
}

// Advance moves mock forward by d, stopping at each of the runtime's own
// wakeups on the way (a pull finishing, a container exiting, a latency
// ending) and waiting there until the runtime is idle, so that each thing
// happens at its own time and in order. It finishes idle at now+d.
func (r *Runtime) Advance(ctx context.Context, mock *clock.Mock, d time.Duration) error {
	if mock == nil {
		return errors.New("fakecri: the clock is not a clock.Mock")
	}
	return r.AdvanceTo(ctx, mock, mock.Now().Add(d))
}

// AdvanceTo is Advance up to the time t.
func (r *Runtime) AdvanceTo(ctx context.Context, mock *clock.Mock, t time.Time) error {
	if mock == nil {
		return errors.New("fakecri: the clock is not a clock.Mock")
	}
	if err := r.WaitIdle(ctx); err != nil {
		return err
	}
	for {
		next, ok := r.NextWakeup()
		if !ok || next.After(t) {
			break
		}
		mock.Set(next)
		if err := r.WaitIdle(ctx); err != nil {
			return err
		}
	}
	if t.After(mock.Now()) {
		mock.Set(t)
	}
	return r.WaitIdle(ctx)
}
