package control

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/benbjohnson/clock"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"orch.io/orch/fakecri"
	"orch.io/orch/fakecri/calllog"
	"orch.io/orch/fakecri/script"
)

// Options configure the control API.
type Options struct {
	// Mock, when the runtime runs on a clock.Mock, lets the control API
	// advance and set time. Without it the clock endpoints only report.
	Mock *clock.Mock
	// SettleTimeout bounds, in real time, how long an advance waits for the
	// runtime to go idle (default 10s).
	SettleTimeout time.Duration
	// Complete, when set, fills in what a script PUT through the control API
	// leaves out, as the command fills in its --script (the image
	// filesystem's mountpoint on this host): a script set later must not
	// lose the defaults the first one had.
	Complete func(*script.Script) *script.Script
}

// ClockState is what GET /v1/clock answers.
type ClockState struct {
	Now           time.Time `json:"now"`
	Manual        bool      `json:"manual"`
	InFlight      int       `json:"inFlight"`
	PendingEvents int       `json:"pendingEvents"`
	Idle          bool      `json:"idle"`
	NextWakeup    time.Time `json:"nextWakeup,omitzero"`
}

// clockState reports the clock and the runtime's activity.
func clockState(r *fakecri.Runtime, manual bool) ClockState {
	idle := r.Idle()
	next, _ := r.NextWakeup()
	return ClockState{Now: r.Clock().Now(), Manual: manual, InFlight: r.InFlight(),
		PendingEvents: r.PendingEvents(), Idle: idle, NextWakeup: next}
}

// Handler serves the control API (see fakecri/README.md):
//
//	GET    /healthz
//	GET    /v1/calls?since=SEQ&method=GLOB&limit=N
//	DELETE /v1/calls
//	GET    /v1/script            (YAML; ?format=json for JSON)
//	PUT    /v1/script            (YAML or JSON body)
//	GET    /v1/clock
//	POST   /v1/clock/advance?by=30s | ?to=RFC3339 | ?to=next   (manual clock)
//	GET    /v1/state
//	GET    /v1/fs
//	POST   /v1/containers/{id}/kill?code=137&reason=OOMKilled&message=...
//	GET    /v1/checkpoints
func Handler(r *fakecri.Runtime, opts Options) http.Handler {
	if opts.SettleTimeout <= 0 {
		opts.SettleTimeout = 10 * time.Second
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, req *http.Request) {
		io.WriteString(w, "ok\n")
	})
	mux.HandleFunc("GET /v1/calls", func(w http.ResponseWriter, req *http.Request) {
		q := req.URL.Query()
		f := calllog.Filter{Method: q.Get("method")}
		var err error
		if s := q.Get("since"); s != "" {
			if f.Since, err = strconv.ParseUint(s, 10, 64); err != nil {
				httpError(w, http.StatusBadRequest, "since: %v", err)
				return
			}
		}
		if s := q.Get("limit"); s != "" {
			if f.Limit, err = strconv.Atoi(s); err != nil {
				httpError(w, http.StatusBadRequest, "limit: %v", err)
				return
			}
		}
		calls := r.Calls(f)
		if calls == nil {
			calls = []calllog.Call{}
		}
		writeJSON(w, map[string]any{"calls": calls, "lastSeq": r.LastSeq(), "dropped": r.DroppedCalls()})
	})
	mux.HandleFunc("DELETE /v1/calls", func(w http.ResponseWriter, req *http.Request) {
		r.ResetCalls()
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("GET /v1/script", func(w http.ResponseWriter, req *http.Request) {
		s := r.Script()
		if s == nil {
			s = &script.Script{}
		}
		if req.URL.Query().Get("format") == "json" {
			writeJSON(w, s)
			return
		}
		b, err := s.YAML()
		if err != nil {
			httpError(w, http.StatusInternalServerError, "%v", err)
			return
		}
		w.Header().Set("Content-Type", "application/yaml")
		w.Write(b)
	})
	mux.HandleFunc("PUT /v1/script", func(w http.ResponseWriter, req *http.Request) {
		b, err := io.ReadAll(io.LimitReader(req.Body, 8<<20))
		if err != nil {
			httpError(w, http.StatusBadRequest, "%v", err)
			return
		}
		s, err := script.Parse(b)
		if err == nil && opts.Complete != nil {
			s = opts.Complete(s)
		}
		if err == nil {
			err = r.SetScript(s)
		}
		if err != nil {
			httpError(w, http.StatusBadRequest, "%v", err)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("GET /v1/clock", func(w http.ResponseWriter, req *http.Request) {
		writeJSON(w, clockState(r, opts.Mock != nil))
	})
	mux.HandleFunc("POST /v1/clock/advance", func(w http.ResponseWriter, req *http.Request) {
		if opts.Mock == nil {
			httpError(w, http.StatusConflict, "the clock is the wall clock; start fakecri with --clock=manual to drive it")
			return
		}
		q := req.URL.Query()
		var target time.Time
		switch by, to := q.Get("by"), q.Get("to"); {
		case by != "" && to != "":
			httpError(w, http.StatusBadRequest, "give by or to, not both")
			return
		case by != "":
			d, err := time.ParseDuration(by)
			if err != nil || d < 0 {
				httpError(w, http.StatusBadRequest, "by: want a non-negative duration like 30s")
				return
			}
			target = opts.Mock.Now().Add(d)
		case to == "next":
			next, ok := r.NextWakeup()
			if !ok {
				writeJSON(w, clockState(r, true))
				return
			}
			target = next
		case to != "":
			t, err := time.Parse(time.RFC3339Nano, to)
			if err != nil {
				httpError(w, http.StatusBadRequest, "to: want RFC 3339 time or \"next\": %v", err)
				return
			}
			if t.Before(opts.Mock.Now()) {
				httpError(w, http.StatusBadRequest, "to: %s is before now (%s); the clock only moves forward", to, opts.Mock.Now().Format(time.RFC3339Nano))
				return
			}
			target = t
		default:
			httpError(w, http.StatusBadRequest, "give by=DURATION or to=TIME|next")
			return
		}
		ctx, cancel := context.WithTimeout(req.Context(), opts.SettleTimeout)
		defer cancel()
		if err := r.AdvanceTo(ctx, opts.Mock, target); err != nil {
			httpError(w, http.StatusGatewayTimeout, "the clock moved but the runtime did not settle: %v", err)
			return
		}
		writeJSON(w, clockState(r, true))
	})
	mux.HandleFunc("GET /v1/state", func(w http.ResponseWriter, req *http.Request) {
		writeJSON(w, r.State())
	})
	mux.HandleFunc("GET /v1/fs", func(w http.ResponseWriter, req *http.Request) {
		writeJSON(w, r.Filesystems())
	})
	mux.HandleFunc("GET /v1/checkpoints", func(w http.ResponseWriter, req *http.Request) {
		cps := r.Checkpoints()
		if cps == nil {
			cps = []string{}
		}
		writeJSON(w, cps)
	})
	mux.HandleFunc("POST /v1/containers/{id}/kill", func(w http.ResponseWriter, req *http.Request) {
		q := req.URL.Query()
		code := int64(137)
		if s := q.Get("code"); s != "" {
			var err error
			if code, err = strconv.ParseInt(s, 10, 32); err != nil {
				httpError(w, http.StatusBadRequest, "code: %v", err)
				return
			}
		}
		if err := r.KillContainer(req.PathValue("id"), int32(code), q.Get("reason"), q.Get("message")); err != nil {
			st := http.StatusConflict
			if status.Code(err) == codes.NotFound {
				st = http.StatusNotFound
			}
			httpError(w, st, "%v", err)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
	return mux
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.Encode(v)
}

func httpError(w http.ResponseWriter, code int, format string, args ...any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(map[string]string{"error": fmt.Sprintf(format, args...)})
}
