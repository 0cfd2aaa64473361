// Package containergc removes dead containers, dead sandboxes and the log directories of pods that are gone, as the kubelet's container garbage collector does.
package containergc
