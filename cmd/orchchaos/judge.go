package main

import (
	"fmt"
	"maps"
	"slices"
	"sort"
)

// Outcome is what a writing client learnt of one write.
type Outcome int

const (
	// Acked: the server answered 2xx; the write must be there after any kill.
	Acked Outcome = iota
	// Refused: the server answered 4xx (409 AlreadyExists, 404 NotFound); the write had no effect.
	Refused
	// Unknown: no answer (the server was killed) or a 5xx; the write may be wholly there or wholly not.
	Unknown
)

// Verb is the kind of write.
type Verb string

const (
	Create Verb = "create"
	Update Verb = "update"
	Delete Verb = "delete"
)

// Op is one write as its client issued it. One client owns each name and writes it one op at a
// time, so a name's ops are in the order the server received them.
type Op struct {
	Name    string
	Verb    Verb
	Value   string // the value written (create, update); empty for delete
	Outcome Outcome
	RV      int64 // the acknowledged object's resourceVersion (create, update)
}

// Object is an event as found after a restart: its value is written twice (note and a label) so
// a half-applied write shows as two values that differ.
type Object struct {
	Note, Label string
}

// WatchEvent is one change a watcher saw, or a relist after 410 Gone (Relist true, RV the list's).
type WatchEvent struct {
	Type   string // ADDED, MODIFIED, DELETED
	Name   string
	Value  string
	RV     int64
	Relist bool
}

// Verdict counts what the checks found; Problems names each. UnknownApplied (names whose state is
// a write with an unknown outcome, wholly applied) is a figure, not a problem.
type Verdict struct {
	Acked, Lost, Duplicated, Half, Missed, Phantom int
	UnknownApplied                                 int
	Problems                                       []string
}

// OK is true when nothing acknowledged is lost, nothing is half there, and the watch saw every
// change exactly once, in order.
func (v Verdict) OK() bool { return len(v.Problems) == 0 }

func (v *Verdict) problem(format string, args ...any) {
	v.Problems = append(v.Problems, fmt.Sprintf(format, args...))
}

// JudgeState compares the stored events after a restart with the history of writes: for each name,
// the state must be the one its last acknowledged write left, or the one a later write with an
// unknown outcome left (a write applied in order wholly or not at all). A value written by no
// write, or a note and label that differ, is half there.
func JudgeState(history []Op, found map[string]Object) Verdict {
	var v Verdict
	byName := map[string][]Op{}
	for _, op := range history {
		byName[op.Name] = append(byName[op.Name], op)
		if op.Outcome == Acked {
			v.Acked++
		}
	}
	for _, name := range slices.Sorted(maps.Keys(byName)) {
		ops := byName[name]
		allowed, acked := allowedStates(ops)
		obj, present := found[name]
		if present && obj.Note != obj.Label {
			v.Half++
			v.problem("%s: half there: note %q, label %q", name, obj.Note, obj.Label)
			continue
		}
		state := absent
		if present {
			state = obj.Note
		}
		switch {
		case !allowed[state]:
			v.Lost++
			v.problem("%s: found %s, want one of %s", name, show(state), showAll(allowed))
		case state != acked:
			v.UnknownApplied++
		}
	}
	for name := range found {
		if _, ok := byName[name]; !ok {
			v.Phantom++
			v.problem("%s: present, but no client wrote it", name)
		}
	}
	return v
}

const absent = "\x00absent"

// allowedStates is the result of the last acknowledged op (acked), and of each unknown op after it.
func allowedStates(ops []Op) (allowed map[string]bool, acked string) {
	last := -1
	for i, op := range ops {
		if op.Outcome == Acked {
			last = i
		}
	}
	acked = absent
	if last >= 0 {
		acked = result(ops[last])
	}
	allowed = map[string]bool{acked: true}
	for _, op := range ops[last+1:] {
		if op.Outcome == Unknown {
			allowed[result(op)] = true
		}
	}
	return allowed, acked
}

func result(op Op) string {
	if op.Verb == Delete {
		return absent
	}
	return op.Value
}

// JudgeWatch checks a watcher's log, kept across restarts by resuming from its last
// resourceVersion: resourceVersions strictly increase (a change seen twice is duplicated, one
// seen out of order too), every acknowledged create and update is seen at its resourceVersion
// unless a relist after 410 Gone passed over it, every acknowledged delete is seen after the
// name's last acknowledged create or update, and every change seen is one a client wrote.
func JudgeWatch(history []Op, log []WatchEvent) Verdict {
	var v Verdict
	seen := map[int64]WatchEvent{}
	var last, relistedTo int64
	written := map[[2]string]bool{}
	deletions := map[string][]int64{} // each name's DELETED resourceVersions, in order
	for _, op := range history {
		written[[2]string{op.Name, op.Value}] = true
		if op.Outcome == Acked {
			v.Acked++
		}
	}
	for _, ev := range log {
		if ev.Relist {
			relistedTo = ev.RV
			last = ev.RV
			continue
		}
		if ev.RV <= last {
			v.Duplicated++
			v.problem("watch: %s %s at resourceVersion %d after %d", ev.Type, ev.Name, ev.RV, last)
			continue
		}
		last = ev.RV
		seen[ev.RV] = ev
		if ev.Type == "DELETED" {
			deletions[ev.Name] = append(deletions[ev.Name], ev.RV)
		}
		if ev.Type != "DELETED" && !written[[2]string{ev.Name, ev.Value}] {
			v.Phantom++
			v.problem("watch: %s %s with value %q no client wrote", ev.Type, ev.Name, ev.Value)
		}
	}
	// An acknowledged delete's DELETED lies between the name's acknowledged writes around it.
	nextRV := make([]int64, len(history))
	upcoming := map[string]int64{}
	for i := len(history) - 1; i >= 0; i-- {
		op := history[i]
		nextRV[i] = upcoming[op.Name]
		if op.Outcome == Acked && op.Verb != Delete {
			upcoming[op.Name] = op.RV
		}
	}
	prevRV := map[string]int64{}
	for i, op := range history {
		if op.Outcome != Acked {
			continue
		}
		switch op.Verb {
		case Create, Update:
			prevRV[op.Name] = op.RV
			if op.RV <= relistedTo {
				continue
			}
			ev, ok := seen[op.RV]
			if !ok || ev.Name != op.Name || ev.Value != op.Value {
				v.Missed++
				v.problem("watch: acknowledged %s of %s at resourceVersion %d not seen", op.Verb, op.Name, op.RV)
			}
		case Delete:
			after := prevRV[op.Name]
			if after < relistedTo {
				after = relistedTo
			}
			if !deletedBetween(deletions[op.Name], after, nextRV[i], relistedTo) {
				v.Missed++
				v.problem("watch: acknowledged delete of %s not seen", op.Name)
			}
		}
	}
	return v
}

// deletedBetween: one of the name's DELETED resourceVersions (in order) after rv and before next
// (0: no later write), or the deletion may have fallen before a relist (rv is the relist's).
func deletedBetween(deletions []int64, rv, next, relistedTo int64) bool {
	i := sort.Search(len(deletions), func(i int) bool { return deletions[i] > rv })
	if i < len(deletions) && (next == 0 || deletions[i] < next) {
		return true
	}
	return relistedTo > 0 && rv == relistedTo
}

// Add sums two verdicts.
func (v Verdict) Add(o Verdict) Verdict {
	return Verdict{
		Acked: v.Acked + o.Acked, Lost: v.Lost + o.Lost, Duplicated: v.Duplicated + o.Duplicated,
		Half: v.Half + o.Half, Missed: v.Missed + o.Missed, Phantom: v.Phantom + o.Phantom,
		UnknownApplied: v.UnknownApplied + o.UnknownApplied,
		Problems:       append(append([]string{}, v.Problems...), o.Problems...),
	}
}

func show(state string) string {
	if state == absent {
		return "absent"
	}
	return fmt.Sprintf("%q", state)
}

func showAll(states map[string]bool) string {
	var out []string
	for s := range states {
		out = append(out, show(s))
	}
	sort.Strings(out)
	return fmt.Sprint(out)
}
