package fakecri

import (
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"orch.io/orch/fakecri/script"
)

// ifAbsent says how a handler answers for a sandbox or container that is not there.
type ifAbsent bool

const (
	// notFound answers the lookup's NotFound.
	notFound ifAbsent = false
	// done answers an empty response, "absent" in the call log: the CRI asks stops and removes to
	// succeed on what is already gone, since the agent retries them.
	done ifAbsent = true
)

// lockAtNow is the opening of every call that reads or changes the runtime's state: it loads the
// script in force (a script swapped meanwhile applies from the next call), takes the lock and
// brings the runtime up to the clock's now (exits that fell due, log lines). It answers the script
// and that now; the caller unlocks.
func (r *Runtime) lockAtNow() (*script.Compiled, time.Time) {
	sc := r.cur.Load()
	r.mu.Lock()
	now := r.now()
	r.reconcileLocked(now)
	return sc, now
}

// locked runs fn after lockAtNow, under the lock.
func locked[Resp any](r *Runtime, fn func(sc *script.Compiled, now time.Time) (Resp, error)) (Resp, error) {
	sc, now := r.lockAtNow()
	defer r.mu.Unlock()
	return fn(sc, now)
}

// onSandbox is locked on the sandbox id names (by id or unique prefix).
func onSandbox[Resp any](r *Runtime, cc *callCtx, id string, absent ifAbsent, fn func(sc *script.Compiled, sb *sandbox, now time.Time) (*Resp, error)) (*Resp, error) {
	return locked(r, func(sc *script.Compiled, now time.Time) (*Resp, error) {
		sb, err := r.lookupSandboxLocked(id)
		if err != nil {
			return answerAbsent[Resp](cc, absent, err)
		}
		return fn(sc, sb, now)
	})
}

// onContainer is locked on the container id names (by id or unique prefix).
func onContainer[Resp any](r *Runtime, cc *callCtx, id string, absent ifAbsent, fn func(sc *script.Compiled, c *container, now time.Time) (*Resp, error)) (*Resp, error) {
	return locked(r, func(sc *script.Compiled, now time.Time) (*Resp, error) {
		c, err := r.lookupContainerLocked(id)
		if err != nil {
			return answerAbsent[Resp](cc, absent, err)
		}
		return fn(sc, c, now)
	})
}

// lookupLocked finds a sandbox or container by id or by a prefix only one live one has, as
// containerd does: kind names it in the other errors, short in NotFound's (containerd's words).
func lookupLocked[T any](byID map[string]*T, order []*T, id, kind, short string, live func(*T) (id string, ok bool)) (*T, error) {
	if id == "" {
		return nil, status.Error(codes.InvalidArgument, kind+" id is required")
	}
	if x := byID[id]; x != nil {
		return x, nil
	}
	var found *T
	for _, x := range order {
		if xid, ok := live(x); ok && strings.HasPrefix(xid, id) {
			if found != nil {
				return nil, status.Errorf(codes.InvalidArgument, "%s id prefix %q is ambiguous", kind, id)
			}
			found = x
		}
	}
	if found == nil {
		return nil, status.Errorf(codes.NotFound, "an error occurred when try to find %s %q: not found", short, id)
	}
	return found, nil
}

// answerAbsent answers a failed lookup: its error, or for done an empty response when the
// object is not there.
func answerAbsent[Resp any](cc *callCtx, absent ifAbsent, err error) (*Resp, error) {
	if absent == done && status.Code(err) == codes.NotFound {
		cc.resp = "absent"
		return new(Resp), nil
	}
	return nil, err
}
