package fakecri

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"orch.io/orch/fakecri/calllog"
	"orch.io/orch/fakecri/script"
)

type method int

// The CRI methods, numbered as script.Methods lists them.
const (
	mVersion method = iota
	mRunPodSandbox
	mStopPodSandbox
	mRemovePodSandbox
	mPodSandboxStatus
	mListPodSandbox
	mStreamPodSandboxes
	mCreateContainer
	mStartContainer
	mStopContainer
	mRemoveContainer
	mListContainers
	mStreamContainers
	mContainerStatus
	mUpdateContainerResources
	mReopenContainerLog
	mExecSync
	mExec
	mAttach
	mPortForward
	mContainerStats
	mListContainerStats
	mStreamContainerStats
	mPodSandboxStats
	mListPodSandboxStats
	mStreamPodSandboxStats
	mUpdateRuntimeConfig
	mStatus
	mCheckpointContainer
	mCheckpointPod
	mRestorePod
	mGetContainerEvents
	mListMetricDescriptors
	mListPodSandboxMetrics
	mStreamPodSandboxMetrics
	mRuntimeConfig
	mUpdatePodSandboxResources
	mListImages
	mStreamImages
	mImageStatus
	mPullImage
	mRemoveImage
	mImageFsInfo
	numMethods
)

// Runtime.faulted has a bit for each method: they must fit in its 64.
var _ [64 - numMethods]struct{}

func (m method) String() string { return script.Methods[m] }

// Calls returns recorded calls, oldest first.
func (r *Runtime) Calls(f calllog.Filter) []calllog.Call { return r.log.List(f) }

// AppendCalls appends the calls f selects to dst, as calllog.Log.AppendList does.
func (r *Runtime) AppendCalls(dst []calllog.Call, f calllog.Filter) []calllog.Call {
	return r.log.AppendList(dst, f)
}

// LastSeq is the Seq of the latest call (0 if none); pass it as
// calllog.Filter.Since to read only what comes after.
func (r *Runtime) LastSeq() uint64 { return r.log.LastSeq() }

// DroppedCalls counts calls dropped from the log because it was full.
func (r *Runtime) DroppedCalls() uint64 { return r.log.Dropped() }

// ResetCalls empties the call log (Seq keeps counting).
func (r *Runtime) ResetCalls() { r.log.Reset() }

// ---- the wrapper every RPC goes through ----

// callCtx is one call in progress; its record is the call log's (one allocation a call, not two).
type callCtx struct {
	rec   calllog.Call
	fault string
	resp  string
}

// begin counts the call in flight, records it and applies faults. A non-nil
// error means a fault answered the call; end must be called either way.
func (r *Runtime) begin(ctx context.Context, m method, req proto.Message) (*callCtx, error) {
	r.inflight.Add(1)
	cc := &callCtx{rec: calllog.Call{Method: script.Methods[m], Start: r.now(), Request: calllog.Summarize(req), Message: calllog.CloneRequest(req)}}
	r.log.Add(&cc.rec)
	if r.faulted.Load()&(1<<m) == 0 {
		return cc, nil
	}
	c := r.cur.Load()
	if c.Faults == nil || len(c.Faults[m]) == 0 {
		return cc, nil // a script without them set since faulted was read
	}
	var latency time.Duration
	var fire *script.CompiledFaultRule
	r.faultMu.Lock()
	for _, f := range c.Faults[m] {
		if !f.RequestGlob.Match(cc.rec.Request) {
			continue
		}
		if f.Error == nil && !f.Hang {
			// A rule that only delays delays with its chance.
			if f.Probability == 0 || f.Rand.Float64() < f.Probability {
				latency += f.Latency.D()
			}
			continue
		}
		latency += f.Latency.D()
		if fire != nil {
			continue
		}
		f.Seen++
		if f.Seen <= f.AfterCalls || (f.Times > 0 && f.Fired >= f.Times) {
			continue
		}
		if f.Probability > 0 && f.Rand.Float64() >= f.Probability {
			continue
		}
		f.Fired++
		fire = f
	}
	r.faultMu.Unlock()
	if latency > 0 {
		if err := r.sleep(ctx, latency); err != nil {
			cc.fault = "latency"
			return cc, ctxErr(err)
		}
	}
	if fire == nil {
		return cc, nil
	}
	cc.fault = fmt.Sprintf("faults[%d]", fire.Index)
	if fire.Hang {
		r.hang(ctx)
		return cc, status.Errorf(codes.DeadlineExceeded, "fakecri: %s hung until the caller gave up (%s)", script.Methods[m], cc.fault)
	}
	msg := fire.Error.Message
	if msg == "" {
		msg = fmt.Sprintf("fakecri: injected %s for %s", fire.Code, script.Methods[m])
	}
	return cc, status.Error(fire.Code, msg)
}

func (r *Runtime) end(cc *callCtx, err error) {
	code, msg := codes.OK, ""
	if err != nil {
		st, _ := status.FromError(err)
		code, msg = st.Code(), st.Message()
	}
	r.log.Finish(&cc.rec, r.now(), code, msg, cc.resp, cc.fault)
	r.inflight.Add(-1)
	r.signalChange()
}

// call runs one unary RPC through fault injection and the call log.
func call[Req proto.Message, Resp any](ctx context.Context, r *Runtime, m method, req Req,
	f func(context.Context, Req, *callCtx) (Resp, error)) (resp Resp, err error) {
	cc, err := r.begin(ctx, m, req)
	defer func() { r.end(cc, err) }()
	if err != nil {
		return resp, err
	}
	return f(ctx, req, cc)
}

// listCall runs a unary list RPC: list's items, counted in the call log's answer as noun=N, go out
// in the response wrap makes.
func listCall[Req proto.Message, Resp any, T any](ctx context.Context, r *Runtime, m method, req Req, noun string, list func() []T, wrap func([]T) Resp) (Resp, error) {
	return call(ctx, r, m, req, func(_ context.Context, _ Req, cc *callCtx) (Resp, error) {
		items := list()
		cc.resp = countText(noun, len(items))
		return wrap(items), nil
	})
}

// countTexts are the list calls' answers in the call log, noun=N, for the counts most lists have:
// made once, where a concatenation was an allocation at every list call of every relist.
var countTexts = func() map[string][]string {
	m := map[string][]string{}
	for _, noun := range []string{"items", "containers", "images", "pods", "stats"} {
		t := make([]string, 32)
		for i := range t {
			t[i] = noun + "=" + strconv.Itoa(i)
		}
		m[noun] = t
	}
	return m
}()

// countText is a list call's answer in the call log: noun=n.
func countText(noun string, n int) string {
	if t := countTexts[noun]; n < len(t) {
		return t[n]
	}
	return noun + "=" + strconv.Itoa(n)
}

func ctxErr(err error) error {
	if errors.Is(err, context.DeadlineExceeded) {
		return status.Error(codes.DeadlineExceeded, err.Error())
	}
	if errors.Is(err, context.Canceled) {
		return status.Error(codes.Canceled, err.Error())
	}
	return err
}
