package agent

import (
	"context"
	"fmt"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"orch.io/orch/components/orchlet/sources"
)

// PodResult is the outcome of one pod under --runonce.
type PodResult struct {
	Namespace, Name string
	// Err is nil when the pod's containers ran, or the pod completed successfully.
	Err error
}

// RunOnce does what the kubelet's --runonce does: read every source once, start their pods, and
// check each until its containers run, waiting firstDelay and then twice as long after each of
// tries checks. It answers each pod's outcome, sorted by namespace and name.
func (a *Agent) RunOnce(ctx context.Context, tries int, firstDelay time.Duration) ([]PodResult, error) {
	if err := a.Start(ctx); err != nil {
		return nil, err
	}
	a.Sources.Step(ctx)
	updates := a.Sources.Drain()
	want := map[types.UID]*corev1.Pod{}
	for _, u := range updates {
		if u.Op == sources.OpAdd {
			want[u.Pod.UID] = u.Pod
		}
	}
	if len(want) == 0 {
		return nil, nil
	}
	a.Pods.Update(updates...)

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan struct{}, 2)
	for _, run := range []func(context.Context) error{a.Pods.Run, a.Events.Run} {
		go func() { _ = run(ctx); done <- struct{}{} }()
	}
	defer func() { cancel(); <-done; <-done }()

	outcome := map[types.UID]error{}
	delay := firstDelay
	for try := 0; try < tries && len(outcome) < len(want); try++ {
		t := a.clk.Timer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
		delay *= 2
		for _, p := range a.Pods.Pods() {
			if _, ok := want[p.UID]; !ok || outcome[p.UID] != nil {
				continue
			}
			if ran, err := settled(p); ran || err != nil {
				outcome[p.UID] = err
			}
		}
	}
	results := make([]PodResult, 0, len(want))
	for uid, p := range want {
		err, settledPod := outcome[uid]
		if !settledPod {
			err = fmt.Errorf("containers not running after %d checks", tries)
		}
		results = append(results, PodResult{Namespace: p.Namespace, Name: p.Name, Err: err})
	}
	sort.Slice(results, func(i, j int) bool {
		return results[i].Namespace+"/"+results[i].Name < results[j].Namespace+"/"+results[j].Name
	})
	return results, nil
}

// settled reports a pod whose containers all run or that completed (ran), or one that failed (err).
func settled(p corev1.Pod) (ran bool, err error) {
	switch p.Status.Phase {
	case corev1.PodSucceeded:
		return true, nil
	case corev1.PodFailed:
		return false, fmt.Errorf("pod failed: %s", p.Status.Message)
	case corev1.PodRunning:
		for _, c := range p.Status.ContainerStatuses {
			if c.State.Running == nil {
				return false, nil
			}
		}
		return len(p.Status.ContainerStatuses) > 0, nil
	}
	return false, nil
}
