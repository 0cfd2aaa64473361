// Package flexvolume runs flexVolume drivers (--volume-plugin-dir) as the kubelet runs them: the
// executable <dir>/<vendor>~<driver>/<driver> called with init once, then mount <dir> <options>
// when a pod's volume is set up and unmount <dir> when it is torn down, each answering a JSON
// status on stdout. A driver written for the kubelet works unchanged; only drivers that do not
// need attaching (capabilities.attach false) are run.
package flexvolume
