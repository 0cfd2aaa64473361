package conformance

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// containerConfig reads the configuration the runtime created the pod's running container with,
// from its verbose ContainerStatus.
func (w *World) containerConfig(container, pod string) (*runtimeapi.ContainerConfig, error) {
	s, err := w.runtimeState()
	if err != nil {
		return nil, err
	}
	id, ok := s.runningContainer(container, pod)
	if !ok {
		return nil, fmt.Errorf("the runtime runs no container %s of pod %s", container, pod)
	}
	var cfg runtimeapi.ContainerConfig
	return &cfg, w.verboseConfig(func(ctx context.Context, rs runtimeapi.RuntimeServiceClient) (map[string]string, error) {
		st, err := rs.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: id, Verbose: true})
		return st.GetInfo(), err
	}, &cfg)
}

func (w *World) containerSeccomp(container, pod, profile string) error {
	return eventually(settle, func() error {
		cfg, err := w.containerConfig(container, pod)
		if err != nil {
			return err
		}
		// RuntimeDefault is the enum's zero value: a missing profile reads as it, as the runtime
		// reads it.
		got := cfg.GetLinux().GetSecurityContext().GetSeccomp().GetProfileType().String()
		if got != profile {
			return errStop{fmt.Errorf("container %s of pod %s has the seccomp profile %s, want %s", container, pod, got, profile)}
		}
		return nil
	})
}

// containerImageMount finds an image volume's mount in the container's configuration: the image
// by the name the pod gave, mounted by the runtime rather than from a host path.
func (w *World) containerImageMount(container, pod, image, path string) error {
	return eventually(settle, func() error {
		cfg, err := w.containerConfig(container, pod)
		if err != nil {
			return err
		}
		for _, m := range cfg.GetMounts() {
			if m.GetContainerPath() == path && m.GetImage().GetUserSpecifiedImage() == image && m.GetHostPath() == "" && m.GetReadonly() {
				return nil
			}
		}
		return errStop{fmt.Errorf("container %s of pod %s has no read-only mount of the image %s at %s: %v", container, pod, image, path, cfg.GetMounts())}
	})
}

func (w *World) containerQuota(container, pod string, quota, period int64) error {
	return eventually(settle, func() error {
		cfg, err := w.containerConfig(container, pod)
		if err != nil {
			return err
		}
		r := cfg.GetLinux().GetResources()
		if r.GetCpuQuota() != quota || r.GetCpuPeriod() != period {
			return errStop{fmt.Errorf("container %s of pod %s has the CPU quota %d over the period %d, want %d over %d",
				container, pod, r.GetCpuQuota(), r.GetCpuPeriod(), quota, period)}
		}
		return nil
	})
}

// containerNoQuota wants neither quota nor period: with a limit of none the kubelet still sets the
// period, and a quota of 0, when --cpu-cfs-quota is on.
func (w *World) containerNoQuota(container, pod string) error {
	return eventually(settle, func() error {
		cfg, err := w.containerConfig(container, pod)
		if err != nil {
			return err
		}
		if r := cfg.GetLinux().GetResources(); r.GetCpuQuota() != 0 || r.GetCpuPeriod() != 0 {
			return errStop{fmt.Errorf("container %s of pod %s has the CPU quota %d over the period %d, want none",
				container, pod, r.GetCpuQuota(), r.GetCpuPeriod())}
		}
		return nil
	})
}

// sandboxCgroupParent compares the sandbox's cgroup parent, the pods' cgroup named the target's
// way; {uid} stands for the pod's UID, which names its cgroup.
func (w *World) sandboxCgroupParent(pod, parent string) error {
	return eventually(settle, func() error {
		cfg, err := w.sandboxConfig(pod)
		if err != nil {
			return err
		}
		want := strings.ReplaceAll(w.t.Profile.Spell(parent), "{uid}", cfg.GetMetadata().GetUid())
		if got := cfg.GetLinux().GetCgroupParent(); got != want {
			return errStop{fmt.Errorf("the sandbox of pod %s has the cgroup parent %q, want %q", pod, got, want)}
		}
		return nil
	})
}

// podCgroupFile reads a file of the pod's cgroup on this host, the one the sandbox's cgroup parent
// (cgroupfs driver) names: in the unified hierarchy on cgroup v2, in the file's controller's (the
// name's prefix, pids of pids.max) on v1.
func (w *World) podCgroupFile(pod, file, want string) error {
	return eventually(settle, func() error {
		cfg, err := w.sandboxConfig(pod)
		if err != nil {
			return err
		}
		parent := cfg.GetLinux().GetCgroupParent()
		if parent == "" {
			return errStop{fmt.Errorf("the sandbox of pod %s names no cgroup parent", pod)}
		}
		dir := filepath.Join("/sys/fs/cgroup", parent)
		if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err != nil {
			controller, _, _ := strings.Cut(file, ".")
			dir = filepath.Join("/sys/fs/cgroup", controller, parent)
		}
		data, err := os.ReadFile(filepath.Join(dir, file))
		if err != nil {
			return fmt.Errorf("the cgroup of pod %s: %w", pod, err)
		}
		if got := strings.TrimSpace(string(data)); got != want {
			return errStop{fmt.Errorf("the cgroup of pod %s has %s %q, want %q", pod, file, got, want)}
		}
		return nil
	})
}

// periodSlack is how much later than its period a periodic call may reach the runtime: the
// agent's timer starts once the previous round has ended, and the machine may be busy.
const periodSlack = time.Second

// callsEvery waits for four calls of a method and wants each to follow the one before after the
// period: no sooner than a little before it, no later than periodSlack after it.
func (w *World) callsEvery(method string, seconds int) error {
	period := time.Duration(seconds) * time.Second
	var cs []call
	err := eventually(4*(period+periodSlack)+settle, func() error {
		var err error
		if cs, err = w.calls("runtime", method); err == nil && len(cs) < 4 {
			err = fmt.Errorf("%d %s calls so far, want 4 to tell their period", len(cs), method)
		}
		return err
	})
	if err != nil {
		return err
	}
	for i := 1; i < len(cs); i++ {
		if gap := cs[i].Start.Sub(cs[i-1].Start); gap < period-paceTolerance || gap > period+periodSlack {
			return fmt.Errorf("%s call %d came %s after the one before, want %s", method, cs[i].Seq, gap, period)
		}
	}
	return nil
}
