package agent

import (
	"context"
	"io/fs"
	"maps"
	"testing"

	"github.com/benbjohnson/clock"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"orch.io/orch/components/orchlet/eviction"
	"orch.io/orch/components/orchlet/volumestats"
)

type podList []*corev1.Pod

func (l *podList) ActivePods() []*corev1.Pod { return *l }

func (l *podList) VolumeDir(*corev1.Pod, *corev1.Volume) string { return "" }

// runtimeStats is an eviction.Observer answering one container's stats per active pod.
type runtimeStats struct{ pods *podList }

func (r runtimeStats) Observe(context.Context) (eviction.Stats, error) {
	var s eviction.Stats
	for _, p := range *r.pods {
		s.Pods = append(s.Pods, eviction.PodStats{UID: p.UID, Containers: []eviction.ContainerStats{{Name: "app"}, {Name: "sidecar"}}})
	}
	return s, nil
}

// The observer measures each active pod's container log directories at every round, under
// /var/log/pods/<namespace>_<name>_<uid>/<container>, a pod that has left forgotten and a pod of
// the same name but a new UID measured at its own directory.
func TestEphemeralObserverMeasuresLogDirectories(t *testing.T) {
	pod := func(name, uid string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID(uid)}}
	}
	list := &podList{pod("a", "uid-1"), pod("b", "uid-2")}
	usage := map[string]volumestats.Usage{
		"/var/log/pods/default_a_uid-1/app":     {Bytes: 100, Inodes: 1},
		"/var/log/pods/default_a_uid-1/sidecar": {Bytes: 200, Inodes: 2},
		"/var/log/pods/default_b_uid-2/app":     {Bytes: 300, Inodes: 3},
		"/var/log/pods/default_a_uid-3/app":     {Bytes: 400, Inodes: 4},
	}
	vs, err := volumestats.New(volumestats.Options{Clock: clock.NewMock(), Pods: list, Measure: func(string) (volumestats.Usage, error) { return volumestats.Usage{}, nil }})
	if err != nil {
		t.Fatal(err)
	}
	o := ephemeralObserver{Observer: runtimeStats{list}, pods: list, volumes: vs, logsDir: "/var/log/pods/", logDirs: map[types.UID]*podLogDirs{},
		measure: func(path string) (volumestats.Usage, error) {
			u, ok := usage[path]
			if !ok {
				return u, &fs.PathError{Op: "lstat", Path: path, Err: fs.ErrNotExist}
			}
			return u, nil
		}}
	logs := func() map[string]uint64 {
		t.Helper()
		s, err := o.Observe(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]uint64{}
		for _, p := range s.Pods {
			for _, c := range p.Containers {
				got[string(p.UID)+"/"+c.Name] = c.LogsBytes*10 + c.LogsInodes
			}
		}
		return got
	}
	want := map[string]uint64{"uid-1/app": 1001, "uid-1/sidecar": 2002, "uid-2/app": 3003, "uid-2/sidecar": 0}
	for round := range 2 {
		if got := logs(); !maps.Equal(got, want) {
			t.Fatalf("round %d: logs %v, want %v", round, got, want)
		}
	}
	usage["/var/log/pods/default_b_uid-2/app"] = volumestats.Usage{Bytes: 310, Inodes: 4}
	want["uid-2/app"] = 3104
	if got := logs(); !maps.Equal(got, want) {
		t.Fatalf("after b's logs grew: %v, want %v", got, want)
	}
	*list = podList{pod("a", "uid-3")}
	if got, want := logs(), map[string]uint64{"uid-3/app": 4004, "uid-3/sidecar": 0}; !maps.Equal(got, want) {
		t.Fatalf("a recreated: %v, want %v", got, want)
	}
	if len(o.logDirs) != 1 || o.logDirs["uid-3"] == nil {
		t.Fatalf("the directories kept are %v, want uid-3's alone", o.logDirs)
	}
}
