package apptest

import (
	"context"
	"strings"
	"testing"
)

// A start without the clock that paces its wait is refused before any process starts.
func TestStartWithoutClockRefused(t *testing.T) {
	s, err := Start(context.Background(), Options{Binary: "/nonexistent/orch-apiserver", DataDir: t.TempDir(), Port: 1})
	if s != nil || err == nil || !strings.Contains(err.Error(), "Options.Clock is required") {
		t.Fatalf("Start without a clock: %v, %v; want the refusal naming Options.Clock", s, err)
	}
}
