//go:build !linux

package sources

// osNotifier is nil where there is no inotify: the manifest path is polled only.
func osNotifier(string) Notifier { return nil }
