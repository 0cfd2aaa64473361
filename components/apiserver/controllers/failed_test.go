package controllers

import (
	"context"
	"errors"
	"testing"
)

// A failure is worth an error line only while the controller is meant to be running.
func TestFailed(t *testing.T) {
	running, stopped := make(chan struct{}), make(chan struct{})
	close(stopped)
	live := context.Background()
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	err := errors.New("storage: store closed")
	for _, tc := range []struct {
		name     string
		ctx      context.Context
		stopping <-chan struct{}
		err      error
		want     bool
	}{
		{"no error", live, running, nil, false},
		{"an error while running", live, running, err, true},
		{"an error once shutdown began", live, stopped, err, false},
		{"an error once the context ended", ended, running, err, false},
		{"an error without a shutdown signal", live, nil, err, true},
	} {
		if got := Failed(tc.ctx, tc.stopping, tc.err); got != tc.want {
			t.Errorf("%s: Failed = %v, want %v", tc.name, got, tc.want)
		}
	}
}
