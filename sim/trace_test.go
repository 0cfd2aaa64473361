package sim

import (
	"fmt"
	"math"
	"testing"
	"time"
)

// TestFormatOffsetIsSprintf holds the digits written by hand to the format every golden trace
// was written with, at each field's carries, past 99 hours and below zero.
func TestFormatOffsetIsSprintf(t *testing.T) {
	for _, d := range []time.Duration{
		0, time.Millisecond, 9 * time.Millisecond, 10 * time.Millisecond, 999 * time.Millisecond, 999999 * time.Microsecond,
		time.Second, 9 * time.Second, 10*time.Second + 5*time.Millisecond, 59*time.Second + 999*time.Millisecond,
		time.Minute, 9 * time.Minute, 10 * time.Minute, 59*time.Minute + 59*time.Second, time.Hour,
		9*time.Hour + 59*time.Minute + 59*time.Second + 999*time.Millisecond, 10 * time.Hour, 23*time.Hour + 7*time.Minute + 3*time.Second + 40*time.Millisecond,
		99*time.Hour + 59*time.Minute, 100 * time.Hour, 12345*time.Hour + 6*time.Minute + 7*time.Second + 89*time.Millisecond,
		math.MaxInt64, -time.Millisecond, -999 * time.Millisecond, -time.Second, -61 * time.Minute, math.MinInt64,
	} {
		ms := d.Milliseconds()
		want := fmt.Sprintf("%02d:%02d:%02d.%03d", ms/3600000, ms/60000%60, ms/1000%60, ms%1000)
		if got := FormatOffset(d); got != want {
			t.Errorf("FormatOffset(%d) = %q, want %q", d, got, want)
		}
		if got := string(appendOffset([]byte("x "), d)); got != "x "+want {
			t.Errorf("appendOffset(%d) = %q, want %q", d, got, "x "+want)
		}
	}
}
