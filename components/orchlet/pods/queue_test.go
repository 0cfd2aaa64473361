package pods

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// The queue's heap hands out what a look at every item would: the first due item in the stable
// order, the earliest due time and whether anything is due, through random enqueues (earlier
// times replacing later ones, the same time again), dequeues, pops with and without a filter,
// and the heap's rebuilds; the first item asked for twice, as the simulator asks at every instant,
// is the scan's both times (firstLive's answer without the lookup).
func TestQueueOrderIsTheScans(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	rnd := rand.New(rand.NewPCG(1, 2))
	m := &Manager{queue: map[itemKey]time.Time{}}
	ref := map[itemKey]time.Time{}
	key := func() itemKey {
		i := rnd.IntN(12)
		return itemKey{kind: kind(i % 5), namespace: "default", name: fmt.Sprintf("pod-%d", i%4),
			uid: types.UID(fmt.Sprintf("uid-%d", i%4)), container: []string{"", "app"}[i%2]}
	}
	scanFirst := func(now time.Time, ok func(itemKey) bool) (itemKey, bool) {
		var best itemKey
		var bestDue time.Time
		found := false
		for k, due := range ref {
			if due.After(now) || ok != nil && !ok(k) {
				continue
			}
			if !found || before(due, k, bestDue, best) {
				best, bestDue, found = k, due, true
			}
		}
		return best, found
	}
	rebuilds := 0
	for step := range 20000 {
		now := t0.Add(time.Duration(rnd.IntN(20)) * time.Second)
		switch op := rnd.IntN(10); {
		case op < 5:
			k, at := key(), t0.Add(time.Duration(rnd.IntN(20))*time.Second)
			stale := len(m.order) - len(m.queue)
			m.enqueue(k, at)
			if stale > 1 && len(m.order) == len(m.queue) {
				rebuilds++
			}
			if due, ok := ref[k]; !ok || at.Before(due) {
				ref[k] = at
			}
		case op < 6:
			k := key()
			m.dequeue(k)
			delete(ref, k)
		case op < 9:
			want, wantOK := scanFirst(now, nil)
			got, gotOK := m.popDue(now)
			if got != want || gotOK != wantOK {
				t.Fatalf("step %d: popDue %v %v, the scan's %v %v", step, got, gotOK, want, wantOK)
			}
			if gotOK {
				delete(ref, got)
			}
		default:
			uid := key().uid
			of := func(k itemKey) bool { return k.uid == uid }
			want, wantOK := scanFirst(now, of)
			got, gotOK := m.popDueOf(uid, now)
			if got != want || gotOK != wantOK {
				t.Fatalf("step %d: popDueOf %v %v, the scan's %v %v", step, got, gotOK, want, wantOK)
			}
			if gotOK {
				delete(ref, got)
			}
		}
		first, found := m.firstLocked()
		if again, foundAgain := m.firstLocked(); again != first || foundAgain != found {
			t.Fatalf("step %d: first %v %v, then %v %v", step, first, found, again, foundAgain)
		}
		var earliest time.Time
		for _, due := range ref {
			if earliest.IsZero() || due.Before(earliest) {
				earliest = due
			}
		}
		if found != (len(ref) > 0) || found && !first.due.Equal(earliest) {
			t.Fatalf("step %d: first due %v (%v), the scan's %v of %d", step, first.due, found, earliest, len(ref))
		}
		if len(m.order) > 2*12+64+1 { // twelve keys
			t.Fatalf("step %d: %d heap entries for %d items", step, len(m.order), len(m.queue))
		}
	}
	if rebuilds == 0 {
		t.Fatal("the heap was never rebuilt")
	}
}
