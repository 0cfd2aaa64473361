// Package imagegc deletes unused images when the image filesystem fills, and old unused images, as the kubelet's image garbage collector does.
package imagegc
