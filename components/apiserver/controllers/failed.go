package controllers

import "context"

// Failed tells whether err is worth an error line: it is set, and neither the end of ctx nor the
// server's shutdown (stopping closed: storage may close under a controller from then on, before
// ctx ends) explains it.
func Failed(ctx context.Context, stopping <-chan struct{}, err error) bool {
	if err == nil || ctx.Err() != nil {
		return false
	}
	select {
	case <-stopping:
		return false
	default:
		return true
	}
}
