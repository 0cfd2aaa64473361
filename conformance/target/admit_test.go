package target

import (
	"testing"
	"time"

	"orch.io/orch/conformance/catalog"
)

// Scenarios tagged @concurrent share their turn; any other scenario waits for them and runs alone.
func TestAdmitRunsOnlyConcurrentScenariosSideBySide(t *testing.T) {
	var tgt Target
	first := tgt.Admit([]string{"@rule:x", catalog.ConcurrentTag})
	second := tgt.Admit([]string{catalog.ConcurrentTag}) // would block if the first held the target alone

	alone := make(chan func())
	go func() { alone <- tgt.Admit([]string{"@rule:y"}) }()
	select {
	case <-alone:
		t.Fatal("an untagged scenario ran beside @concurrent ones")
	case <-time.After(50 * time.Millisecond):
	}
	first()
	second()
	release := <-alone

	next := make(chan func())
	go func() { next <- tgt.Admit([]string{catalog.ConcurrentTag}) }()
	select {
	case <-next:
		t.Fatal("a @concurrent scenario ran beside an untagged one")
	case <-time.After(50 * time.Millisecond):
	}
	release()
	(<-next)()
}
