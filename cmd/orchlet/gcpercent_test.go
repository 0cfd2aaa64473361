package main

import (
	"os"
	"runtime/debug"
	"testing"
)

// The agent collects garbage at GOGC=50 unless GOGC says otherwise.
func TestGCPercent(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	t.Setenv("GOGC", "")
	os.Unsetenv("GOGC")
	applyGCPercent()
	if got := debug.SetGCPercent(100); got != defaultGCPercent {
		t.Fatalf("without GOGC: %d, want %d", got, defaultGCPercent)
	}
	t.Setenv("GOGC", "100")
	applyGCPercent()
	if got := debug.SetGCPercent(100); got != 100 {
		t.Fatalf("with GOGC=100: %d, want 100 (GOGC's)", got)
	}
}
