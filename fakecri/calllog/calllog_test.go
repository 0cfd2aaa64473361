package calllog

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"unsafe"

	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// The requests copied by hand for the call log are what proto.Clone makes of them, and share
// nothing with the caller's.
func TestCloneRequestAsProtoClone(t *testing.T) {
	for _, req := range []proto.Message{
		&runtimeapi.ContainerStatusRequest{ContainerId: "c1", Verbose: true},
		&runtimeapi.PodSandboxStatusRequest{PodSandboxId: "s1"},
		&runtimeapi.ListPodSandboxRequest{},
		&runtimeapi.ListPodSandboxRequest{Filter: &runtimeapi.PodSandboxFilter{}},
		&runtimeapi.ListPodSandboxRequest{Filter: &runtimeapi.PodSandboxFilter{Id: "s", LabelSelector: map[string]string{}}},
		&runtimeapi.ListPodSandboxRequest{Filter: &runtimeapi.PodSandboxFilter{
			State: &runtimeapi.PodSandboxStateValue{State: runtimeapi.PodSandboxState_SANDBOX_NOTREADY}, LabelSelector: map[string]string{"io.kubernetes.pod.uid": "u"}}},
		&runtimeapi.ListContainersRequest{},
		&runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{Id: "c", PodSandboxId: "s",
			State: &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_EXITED}, LabelSelector: map[string]string{"a": "b", "c": "d"}}},
		&runtimeapi.StatusRequest{},
		&runtimeapi.StatusRequest{Verbose: true},
		&runtimeapi.VersionRequest{Version: "v1"},
		&runtimeapi.VersionRequest{Version: "v2"},
		&runtimeapi.VersionRequest{},
		&runtimeapi.ImageFsInfoRequest{},
		&runtimeapi.ListImagesRequest{},
		&runtimeapi.ListImagesRequest{Filter: &runtimeapi.ImageFilter{Image: &runtimeapi.ImageSpec{Image: "busybox", Annotations: map[string]string{"a": "b"}}}},
	} {
		got, want := CloneRequest(req), proto.Clone(req)
		if !proto.Equal(got, want) || Summarize(got) != Summarize(req) {
			t.Errorf("%T: %v, proto.Clone %v", req, got, want)
		}
		switch q := req.(type) {
		case *runtimeapi.ListPodSandboxRequest:
			if f := q.GetFilter(); f != nil {
				if f.State != nil {
					f.State.State = runtimeapi.PodSandboxState_SANDBOX_READY
				}
				if f.LabelSelector != nil {
					f.LabelSelector["changed"] = "after the call"
				}
			}
		case *runtimeapi.ListContainersRequest:
			if f := q.GetFilter(); f != nil {
				f.State.State = runtimeapi.ContainerState_CONTAINER_RUNNING
				f.LabelSelector["changed"] = "after the call"
			}
		}
		if !proto.Equal(got, want) {
			t.Errorf("%T: the copy changed with the caller's request: %v, want %v", req, got, want)
		}
	}
}

// List selects by Seq, method and limit, across a full ring and a Reset that keeps the array.
func TestListAcrossResetAndRing(t *testing.T) {
	l := New(3)
	add := func(methods ...string) {
		for _, m := range methods {
			l.Add(&Call{Method: m})
		}
	}
	seqs := func(f Filter) (out []uint64) {
		for _, c := range l.List(f) {
			out = append(out, c.Seq)
		}
		return out
	}
	check := func(step string, f Filter, want ...uint64) {
		t.Helper()
		if got := seqs(f); !slices.Equal(got, want) {
			t.Errorf("%s: List(%+v) = %v, want %v", step, f, got, want)
		}
	}
	add("Version", "ListPodSandbox", "ListContainers")
	check("three calls", Filter{}, 1, 2, 3)
	check("since 1", Filter{Since: 1}, 2, 3)
	check("since the last", Filter{Since: 3})
	check("by method", Filter{Method: "List*"}, 2, 3)
	check("limited", Filter{Limit: 1, Method: "List*"}, 2)
	add("Status", "ListImages") // the ring drops the two oldest
	check("a full ring", Filter{}, 3, 4, 5)
	check("a full ring, since 3", Filter{Since: 3, Limit: 5}, 4, 5)
	l.Reset()
	check("after Reset", Filter{})
	add("Version")
	check("a call after Reset", Filter{}, 6)
	add("Status", "ListImages", "ListContainers")
	check("the ring full again after Reset", Filter{Since: 6}, 7, 8, 9)
	if got := l.List(Filter{})[0].Method; got != "Status" {
		t.Errorf("the oldest kept after Reset is %s, want Status", got)
	}
}

// AppendList keeps what dst held and appends what List returns, its Limit counting only what it
// appends; a reused array is written over, not grown, when it has room.
func TestAppendListKeepsDst(t *testing.T) {
	l := New(8)
	for _, m := range []string{"Version", "ListPodSandbox", "ListContainers", "ListImages"} {
		l.Add(&Call{Method: m})
	}
	dst := l.AppendList(make([]Call, 0, 8), Filter{Method: "Version"})
	dst = l.AppendList(dst, Filter{Method: "List*", Limit: 2})
	var got []uint64
	for _, c := range dst {
		got = append(got, c.Seq)
	}
	if want := []uint64{1, 2, 3}; !slices.Equal(got, want) {
		t.Errorf("AppendList twice = %v, want %v", got, want)
	}
	again := l.AppendList(dst[:0], Filter{Since: 3})
	if len(again) != 1 || again[0].Seq != 4 || &again[0] != &dst[0] {
		t.Errorf("AppendList into dst[:0] = %+v, want call 4 in dst's array", again)
	}
	if got := l.AppendList(nil, Filter{Since: 4}); got != nil {
		t.Errorf("AppendList(nil) of nothing = %v, want nil", got)
	}
}

// TestLastSeqWhileAdding: LastSeq, read without the log's lock, never goes back and never runs
// ahead of the calls a List can see, while calls are added from several goroutines.
func TestLastSeqWhileAdding(t *testing.T) {
	const writers, each = 4, 500
	l := New(10)
	var wg sync.WaitGroup
	for range writers {
		wg.Go(func() {
			for range each {
				l.Add(&Call{Method: "Version"})
			}
		})
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	var last uint64
	for running := true; running; {
		select {
		case <-done:
			running = false
		default:
		}
		seq := l.LastSeq()
		if seq < last {
			t.Fatalf("LastSeq went back from %d to %d", last, seq)
		}
		if calls := l.List(Filter{}); len(calls) > 0 && calls[len(calls)-1].Seq < seq {
			t.Fatalf("LastSeq %d ahead of the latest call listed, %d", seq, calls[len(calls)-1].Seq)
		}
		last = seq
	}
	if got := l.LastSeq(); got != writers*each {
		t.Fatalf("LastSeq %d after %d calls", got, writers*each)
	}
}

// A status request's summary in the call log, as a Sprintf of %t made it.
func TestSummarizeStatus(t *testing.T) {
	for _, verbose := range []bool{false, true} {
		if got, want := Summarize(&runtimeapi.StatusRequest{Verbose: verbose}), fmt.Sprintf("verbose=%t", verbose); got != want {
			t.Errorf("verbose %v: %q, want %q", verbose, got, want)
		}
	}
}

// BenchmarkLastSeqOfManyLogs: LastSeq of each of 10,000 logs in turn, each mostly out of the
// cache, as the simulator reads every node's every simulated second.
func BenchmarkLastSeqOfManyLogs(b *testing.B) {
	logs := make([]*Log, 10000)
	for i := range logs {
		logs[i] = New(4)
		logs[i].Add(&Call{Method: "Version"})
	}
	var sum uint64
	for b.Loop() {
		for _, l := range logs {
			sum += l.LastSeq()
		}
	}
	if sum == 0 {
		b.Fatal("no calls")
	}
}

// LastSeq's sequence is a Log's first field, so a holder that keeps the Log first has it on its
// own first cache line (fakecri's Runtime); fails when it moves.
func TestSeqFirst(t *testing.T) {
	var l Log
	if off := unsafe.Offsetof(l.seq); off != 0 {
		t.Errorf("seq at byte %d", off)
	}
}
