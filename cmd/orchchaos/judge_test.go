package main

import "testing"

func TestJudgeState(t *testing.T) {
	for _, tc := range []struct {
		name    string
		history []Op
		found   map[string]Object
		want    Verdict // counts only
	}{
		{name: "acknowledged create present",
			history: []Op{{Name: "a", Verb: Create, Value: "1", Outcome: Acked}},
			found:   map[string]Object{"a": {"1", "1"}},
			want:    Verdict{Acked: 1}},
		{name: "acknowledged create lost",
			history: []Op{{Name: "a", Verb: Create, Value: "1", Outcome: Acked}},
			found:   map[string]Object{},
			want:    Verdict{Acked: 1, Lost: 1}},
		{name: "acknowledged update lost: the old value found",
			history: []Op{{Name: "a", Verb: Create, Value: "1", Outcome: Acked}, {Name: "a", Verb: Update, Value: "2", Outcome: Acked}},
			found:   map[string]Object{"a": {"1", "1"}},
			want:    Verdict{Acked: 2, Lost: 1}},
		{name: "acknowledged delete undone",
			history: []Op{{Name: "a", Verb: Create, Value: "1", Outcome: Acked}, {Name: "a", Verb: Delete, Outcome: Acked}},
			found:   map[string]Object{"a": {"1", "1"}},
			want:    Verdict{Acked: 2, Lost: 1}},
		{name: "unknown update applied wholly",
			history: []Op{{Name: "a", Verb: Create, Value: "1", Outcome: Acked}, {Name: "a", Verb: Update, Value: "2", Outcome: Unknown}},
			found:   map[string]Object{"a": {"2", "2"}},
			want:    Verdict{Acked: 1, UnknownApplied: 1}},
		{name: "unknown update not applied",
			history: []Op{{Name: "a", Verb: Create, Value: "1", Outcome: Acked}, {Name: "a", Verb: Update, Value: "2", Outcome: Unknown}},
			found:   map[string]Object{"a": {"1", "1"}},
			want:    Verdict{Acked: 1}},
		{name: "unknown update half there",
			history: []Op{{Name: "a", Verb: Create, Value: "1", Outcome: Acked}, {Name: "a", Verb: Update, Value: "2", Outcome: Unknown}},
			found:   map[string]Object{"a": {"2", "1"}},
			want:    Verdict{Acked: 1, Half: 1}},
		{name: "unknown create absent or present",
			history: []Op{{Name: "a", Verb: Create, Value: "1", Outcome: Unknown}, {Name: "b", Verb: Create, Value: "1", Outcome: Unknown}},
			found:   map[string]Object{"b": {"1", "1"}},
			want:    Verdict{UnknownApplied: 1}},
		{name: "unknown delete applied",
			history: []Op{{Name: "a", Verb: Create, Value: "1", Outcome: Acked}, {Name: "a", Verb: Delete, Outcome: Unknown}},
			found:   map[string]Object{},
			want:    Verdict{Acked: 1, UnknownApplied: 1}},
		{name: "refused write has no effect",
			history: []Op{{Name: "a", Verb: Create, Value: "1", Outcome: Acked}, {Name: "a", Verb: Create, Value: "2", Outcome: Refused}},
			found:   map[string]Object{"a": {"2", "2"}},
			want:    Verdict{Acked: 1, Lost: 1}},
		{name: "a value no write left: an older unknown write cannot come back after an acknowledged one",
			history: []Op{{Name: "a", Verb: Update, Value: "1", Outcome: Unknown}, {Name: "a", Verb: Create, Value: "2", Outcome: Acked}},
			found:   map[string]Object{"a": {"1", "1"}},
			want:    Verdict{Acked: 1, Lost: 1}},
		{name: "present but never written",
			history: nil,
			found:   map[string]Object{"x": {"1", "1"}},
			want:    Verdict{Phantom: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := JudgeState(tc.history, tc.found)
			if counts(got) != counts(tc.want) {
				t.Errorf("got %+v (%v), want %+v", counts(got), got.Problems, counts(tc.want))
			}
			checkOK(t, got, tc.want)
		})
	}
}

func TestJudgeWatch(t *testing.T) {
	created := Op{Name: "a", Verb: Create, Value: "1", Outcome: Acked, RV: 10}
	updated := Op{Name: "a", Verb: Update, Value: "2", Outcome: Acked, RV: 12}
	deleted := Op{Name: "a", Verb: Delete, Outcome: Acked}
	added := WatchEvent{Type: "ADDED", Name: "a", Value: "1", RV: 10}
	modified := WatchEvent{Type: "MODIFIED", Name: "a", Value: "2", RV: 12}
	gone := WatchEvent{Type: "DELETED", Name: "a", Value: "2", RV: 13}
	for _, tc := range []struct {
		name    string
		history []Op
		log     []WatchEvent
		want    Verdict
	}{
		{name: "every change once, in order",
			history: []Op{created, updated, deleted}, log: []WatchEvent{added, modified, gone},
			want: Verdict{Acked: 3}},
		{name: "a change seen twice after a resume",
			history: []Op{created, updated}, log: []WatchEvent{added, modified, modified},
			want: Verdict{Acked: 2, Duplicated: 1}},
		{name: "changes out of order",
			history: []Op{created, updated}, log: []WatchEvent{modified, added},
			want: Verdict{Acked: 2, Duplicated: 1, Missed: 1}},
		{name: "an acknowledged update missed",
			history: []Op{created, updated}, log: []WatchEvent{added},
			want: Verdict{Acked: 2, Missed: 1}},
		{name: "an acknowledged delete missed",
			history: []Op{created, deleted}, log: []WatchEvent{added},
			want: Verdict{Acked: 2, Missed: 1}},
		{name: "the first of two acknowledged deletes missed",
			history: []Op{created, deleted, {Name: "a", Verb: Create, Value: "4", Outcome: Acked, RV: 20}, deleted},
			log:     []WatchEvent{added, {Type: "ADDED", Name: "a", Value: "4", RV: 20}, {Type: "DELETED", Name: "a", Value: "4", RV: 21}},
			want:    Verdict{Acked: 4, Missed: 1}},
		{name: "410 Gone and a relist past the window",
			history: []Op{created, updated, deleted}, log: []WatchEvent{{Relist: true, RV: 14}},
			want: Verdict{Acked: 3}},
		{name: "a change after the relist is still owed",
			history: []Op{created, updated}, log: []WatchEvent{{Relist: true, RV: 11}},
			want: Verdict{Acked: 2, Missed: 1}},
		{name: "an unknown write seen is fine",
			history: []Op{created, {Name: "a", Verb: Update, Value: "3", Outcome: Unknown}}, log: []WatchEvent{added, {Type: "MODIFIED", Name: "a", Value: "3", RV: 11}},
			want: Verdict{Acked: 1}},
		{name: "a change no client wrote",
			history: []Op{created}, log: []WatchEvent{added, {Type: "MODIFIED", Name: "a", Value: "9", RV: 11}},
			want: Verdict{Acked: 1, Phantom: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := JudgeWatch(tc.history, tc.log)
			if counts(got) != counts(tc.want) {
				t.Errorf("got %+v (%v), want %+v", counts(got), got.Problems, counts(tc.want))
			}
			checkOK(t, got, tc.want)
		})
	}
}

func counts(v Verdict) [7]int {
	return [7]int{v.Acked, v.Lost, v.Duplicated, v.Half, v.Missed, v.Phantom, v.UnknownApplied}
}

// checkOK: a verdict is OK exactly when it counts nothing but acknowledged writes.
func checkOK(t *testing.T, got, want Verdict) {
	t.Helper()
	if wantOK := counts(want) == counts(Verdict{Acked: want.Acked, UnknownApplied: want.UnknownApplied}); got.OK() != wantOK {
		t.Errorf("OK() = %v, want %v (%v)", got.OK(), wantOK, got.Problems)
	}
}
