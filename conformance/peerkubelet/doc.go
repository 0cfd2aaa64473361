// Package peerkubelet runs Kubernetes' own kubelet in standalone mode on fakecri and checks fakecri
// against it: CRI call counts beside a reference capture, static pods Running, no error fakecri causes.
package peerkubelet
