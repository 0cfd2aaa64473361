package controllers

// Stopping tells whether stopping, closed when the server's shutdown begins, is closed: storage
// may close under a controller from then on, and that failure is the shutdown's, not worth an
// error line.
func Stopping(stopping <-chan struct{}) bool {
	select {
	case <-stopping:
		return true
	default:
		return false
	}
}
